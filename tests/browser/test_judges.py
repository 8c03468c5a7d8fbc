"""The judge pages in a real browser: a reviewer fills in a judge, tries its prompt on three pairs (the
rendered prompt and each answer shown), saves it, starts a job, and watches the job's progress block
update itself (htmx polling) as the job's chunks run, to its final state, without a reload."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page, expect

from labeling.models import Assignment, Judge, JudgeJob
from labeling.services import judges
from tests.support.judge_stub import chat_reply, graded, judge_stub
from tests.support.stub_server import StubServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with judge_stub() as server:
        yield server


def test_a_reviewer_tries_saves_and_runs_a_judge(
    page: Page,
    context: BrowserContext,
    live_server: Any,
    session_for: Session,
    assignment: Assignment,
    rita: User,
    stub: StubServer,
) -> None:
    golden_set = assignment.query.golden_set
    stub.on(assignment.query.text, graded(3, "the refund policy itself"), chat_reply("Probably relevant."))
    session_for(context, "rita")
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/")
    page.get_by_role("link", name="Judges").click()
    page.get_by_role("link", name="New judge").click()
    page.get_by_label("Name").fill("careful judge")
    page.get_by_label("Base URL").fill(f"{stub.url}/v1")
    page.get_by_label("Model").fill("stub-model")
    page.get_by_label("Try on").select_option(str(assignment.query.pk))
    page.get_by_role("button", name="Try the prompt").click()

    tried = page.locator("#tried")
    expect(tried.locator(".tried-pair")).to_have_count(3)
    expect(tried).to_contain_text("Grade 3 agrees: the refund policy itself")
    expect(tried).to_contain_text("Not a grade: not a JSON object")
    tried.locator("summary").first.click()
    expect(tried.locator("blockquote.prompt").nth(1)).to_contain_text("Query: refund policy for annual plan")
    assert not Judge.objects.exists()

    page.get_by_role("button", name="Save the judge").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("careful judge")
    page.get_by_label("every active query of the set").check()
    page.get_by_role("button", name="Start a job").click()
    progress = page.locator("#judge-job-progress")
    expect(progress).to_contain_text("queued")
    expect(progress).to_contain_text("0 of 5 pairs")

    # The job's tasks, as a worker runs them; the open page follows by itself.
    stub.on(assignment.query.text, graded(2, "about refunds"))
    job = JudgeJob.objects.get()
    for start in judges.judge_job_begin(job_id=job.pk) or []:
        judges.judge_chunk_process(job_id=job.pk, start=start)
    judges.judge_job_finish(job_id=job.pk)
    expect(progress).to_contain_text("succeeded", timeout=10_000)
    expect(progress).to_contain_text("5 of 5 pairs")
    expect(page.get_by_role("button", name="Cancel the job")).to_be_visible()  # outside the polled block
    page.get_by_role("link", name="careful judge").first.click()
    expect(page.locator("#labels tbody tr")).to_have_count(5)
    expect(page.locator("#labels")).to_contain_text("about refunds")
