"""The judge pages: the set's reviewers only (a 404 for raters, outsiders and other sets' reviewers, the
login page for anonymous users, for every page and action, by object), the try button, new versions,
jobs started, cancelled and polled, the stand-in label, and no judge data on any rater page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from labeling.models import Assignment, GoldenSet, Judge, JudgeJob, JudgeLabel
from labeling.services import judges
from tests import factories
from tests.support.forms import error_summary
from tests.support.judge_stub import chat_reply, graded
from tests.support.stub_server import StubServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(judge: Judge, assignment: Assignment) -> JudgeJob:
    made = judges.judge_job_create(judge=judge, queries=[assignment.query], by=None)
    judges.judge_job_begin(job_id=made.pk)
    judges.judge_chunk_process(job_id=made.pk, start=0)
    judges.judge_job_finish(job_id=made.pk)
    made.refresh_from_db()
    return made


def _pages(judge: Judge, job: JudgeJob) -> tuple[list[str], list[str]]:
    base = f"/sets/{judge.golden_set.slug}/judges"
    pages = [
        f"{base}/",
        f"{base}/new/",
        f"{base}/new/?from={judge.pk}",
        f"{base}/{judge.pk}/",
        f"{base}/{judge.pk}/jobs/{job.pk}/",
        f"{base}/{judge.pk}/jobs/{job.pk}/progress/",
    ]
    actions = [f"{base}/new/", f"{base}/{judge.pk}/jobs/", f"{base}/{judge.pk}/jobs/{job.pk}/cancel/"]
    return pages, actions


def test_everyone_but_the_sets_reviewers_is_refused_every_page_and_action(
    client: Client, judge: Judge, job: JudgeJob, alice: User, charlie: User, rita: User
) -> None:
    outsider_reviewer = factories.UserFactory.create(username="otto", groups=["reviewers"])
    factories.GoldenSetFactory.create(slug="other-set", reviewers=[outsider_reviewer])
    pages, actions = _pages(judge, job)
    for user in (alice, charlie, outsider_reviewer):
        client.force_login(user)
        for url in pages:
            assert client.get(url).status_code == 404, (user.username, url)
        for url in actions:
            assert client.post(url, {"name": "x", "all_queries": "on"}).status_code == 404, (
                user.username,
                url,
            )
    # Object level: the other set's reviewer asking for this judge under their own set gets 404 too.
    client.force_login(outsider_reviewer)
    assert client.get(f"/sets/other-set/judges/{judge.pk}/").status_code == 404
    assert client.get(f"/sets/other-set/judges/{judge.pk}/jobs/{job.pk}/").status_code == 404
    assert client.post(f"/sets/other-set/judges/{judge.pk}/jobs/{job.pk}/cancel/").status_code == 404
    client.logout()
    for url in pages + actions:
        response = client.get(url) if url in pages else client.post(url)
        assert response.status_code == 302 and "/login" in response["Location"], url
    assert JudgeJob.objects.count() == 1 and Judge.objects.count() == 1
    client.force_login(rita)
    for url in pages:
        assert client.get(url).status_code == 200, url


def test_a_reviewer_sees_the_judge_its_jobs_and_labels_marked_stand_in(
    client: Client, judge: Judge, job: JudgeJob, rita: User
) -> None:
    client.force_login(rita)
    listing = client.get(f"/sets/{judge.golden_set.slug}/judges/").content.decode()
    assert "Judge Quillfeather" in listing and "stand-in" in listing
    detail = client.get(f"/sets/{judge.golden_set.slug}/judges/{judge.pk}/").content.decode()
    assert "stand-in" in detail and f"#{job.pk}" in detail and "5 / 5" in detail
    assert "fits the rubric" in detail  # the labels' reasons
    page = client.get(f"/sets/{judge.golden_set.slug}/judges/{judge.pk}/jobs/{job.pk}/").content.decode()
    assert "succeeded" in page and "hx-get" not in page  # final: no polling


def _try_form(assignment: Assignment, base_url: str, **changes: str) -> dict[str, str]:
    """The new-judge form as a reviewer fills it in to try the prompt on the assignment's query."""
    form = {
        "name": "tried",
        "base_url": base_url,
        "model": "stub-model",
        "api_key_env": "",
        "temperature": "0",
        "concurrency": "2",
        "text_budget": "1000",
        "instructions": "Grade the document.",
        "structured": "on",
        "try_query": str(assignment.query.pk),
        "action": "try",
    }
    return form | changes


def test_trying_a_prompt_shows_the_prompt_and_each_answer(
    client: Client, golden_set: GoldenSet, assignment: Assignment, stub: StubServer, rita: User
) -> None:
    stub.on(assignment.query.text, graded(3, "exactly it"), chat_reply("Relevant, I think."))
    client.force_login(rita)
    form = _try_form(assignment, f"{stub.url}/v1")
    page = client.post(f"/sets/{golden_set.slug}/judges/new/", form).content.decode()
    assert page.count('class="tried-pair"') == 3
    # The first document's frozen 3 (the fixture's) beside the judge's 3.
    assert 'Grade <strong>3</strong> <span class="badge pass">agrees</span>: exactly it' in page
    assert "Not a grade: not a JSON object" in page
    assert "Query: refund policy for annual plan" in page  # the rendered prompt
    assert page.count('The set\'s label: <span class="muted">none yet</span>') == 2  # one of three frozen
    assert not Judge.objects.exists()
    response = client.post(f"/sets/{golden_set.slug}/judges/new/", form | {"action": "save"})
    assert response.status_code == 303
    saved = Judge.objects.get()
    assert saved.created_by == rita and saved.name == "tried"
    # The next version: a new temperature is a new judge; a new concurrency is not.
    base = f"/sets/{golden_set.slug}/judges/new/"
    client.post(base, form | {"action": "save", "from": saved.pk, "concurrency": "7"})
    assert Judge.objects.count() == 1 and Judge.objects.get().concurrency == 7
    client.post(base, form | {"action": "save", "from": saved.pk, "temperature": "0.3"})
    assert Judge.objects.count() == 2 and Judge.objects.get(temperature=0.3).previous == saved
    refused = client.post(base, form | {"action": "save", "api_key_env": "DJANGO_SECRET_KEY"})
    assert refused.status_code == 400 and "does not start with ASSAY_SECRET_" in refused.content.decode()


def test_a_tried_grade_shows_beside_the_sets_label_of_the_pair(
    client: Client, golden_set: GoldenSet, assignment: Assignment, stub: StubServer, rita: User
) -> None:
    second = assignment.query.candidates.order_by("best_rank")[1]  # the first has the fixture's frozen 3
    factories.FrozenLabelFactory.create(query=assignment.query, document=second.document, grade=1)
    stub.on(assignment.query.text, graded(3, "exactly it"))
    client.force_login(rita)
    page = client.post(f"/sets/{golden_set.slug}/judges/new/", _try_form(assignment, f"{stub.url}/v1"))
    pairs = page.content.decode().split('class="tried-pair"')[1:]
    shown = [re.sub(r"<[^>]+>|\s+", " ", pair) for pair in pairs]
    assert "The set's label: 3 (human, version 2026-08-01)" in re.sub(r" +", " ", shown[0])
    assert "agrees" in shown[0] and "differs" in shown[1] and "none yet" in shown[2]


def test_a_job_is_started_polled_and_cancelled(
    client: Client, judge: Judge, assignment: Assignment, rita: User, django_capture_on_commit_callbacks
) -> None:
    client.force_login(rita)
    base = f"/sets/{judge.golden_set.slug}/judges/{judge.pk}"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(f"{base}/jobs/", {"queries": [str(assignment.query.pk)]})
    assert response.status_code == 303 and len(callbacks) == 1  # the start task, queued on commit
    job = JudgeJob.objects.get()
    assert job.total == 5 and response["Location"] == f"{base}/jobs/{job.pk}/"
    progress = client.get(f"{base}/jobs/{job.pk}/progress/").content.decode()
    assert "hx-get" in progress and "0 of 5 pairs" in progress
    assert client.post(f"{base}/jobs/{job.pk}/cancel/").status_code == 303
    job.refresh_from_db()
    assert job.status == JudgeJob.Status.CANCELLED
    assert judges.judge_job_begin(job_id=job.pk) is None  # a cancelled job is never claimed


def test_no_rater_page_shows_judge_data(
    client: Client, judge: Judge, job: JudgeJob, assignment: Assignment, alice: User
) -> None:
    assert JudgeLabel.objects.filter(judge=judge).exists()
    client.force_login(alice)
    for url in ("/", "/queue/", f"/assignments/{assignment.pk}/", f"/assignments/{assignment.pk}/grades/"):
        text = client.get(url).content.decode()
        for shown in ("Quillfeather", "fits the rubric", "stand-in", "stub-model", "/judges/"):
            assert shown not in text, (url, shown)


def test_trying_a_judge_on_a_disguised_loopback_address_sends_nothing(
    client: Client,
    golden_set: GoldenSet,
    assignment: Assignment,
    stub: StubServer,
    rita: User,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reported attack: a full-width base URL reached the stub through "try", with the API key."""
    monkeypatch.setenv("ASSAY_TARGET_ALLOW_PRIVATE", "false")
    monkeypatch.setenv("ASSAY_SECRET_NET_JUDGE_KEY", "sk-must-not-leave")
    factories.grant_secrets(golden_set, "ASSAY_SECRET_NET_JUDGE_KEY")  # granted: the address is refused
    client.force_login(rita)
    form = _try_form(
        assignment, f"http://１２７.０.０.１:{stub.port}/v1", api_key_env="ASSAY_SECRET_NET_JUDGE_KEY"
    )
    tried = client.post(f"/sets/{golden_set.slug}/judges/new/", form)
    summary = error_summary(tried)
    assert tried.status_code == 400 and summary.heading == "Not tried: 1 problem to fix"
    [(text, anchor)] = summary.entries
    assert text.startswith("base URL: host １２７.０.０.１ (read as 127.0.0.1) is a loopback address")
    assert anchor == "id_base_url"  # the link goes to the field it names
    saved = client.post(f"/sets/{golden_set.slug}/judges/new/", form | {"action": "save"})
    assert saved.status_code == 400 and "(read as 127.0.0.1) is a loopback address" in saved.content.decode()
    assert stub.requests == [] and not Judge.objects.exists()
    monkeypatch.setenv("ASSAY_TARGET_ALLOW_PRIVATE", "true")  # the control: the same try reaches the stub
    client.post(f"/sets/{golden_set.slug}/judges/new/", form)
    assert stub.requests and stub.requests[0].headers["authorization"] == "Bearer sk-must-not-leave"
