"""Adopting an experiment's configuration and reverting it, in Chromium against a real server and a real
Celery worker process (Redis), at 1,366 and 390 px: from the experiment's page a reviewer uses a
configuration that beat the baseline (not the winner), lands on the confirming run's page, which names
the experiment and links back to the adoption; the run finishes on the worker; back on the experiment
the adoption links to the run; Revert with a reason puts the target's params back and says which runs
sent the adopted ones; a run started after it sends the old params (read off the loopback engine's
requests). Every page on the way fits the screen and axe-core finds nothing on it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, Page, expect

from evaluation.models import EvaluationRun, Experiment, ExperimentAdoption, SearchTarget
from evaluation.runs.services import run_create
from labeling.models import GoldenSet
from tests.browser.test_accessibility import axe_violations, described
from tests.browser.test_grading_keys import sized_page
from tests.browser.test_narrow_screens import assert_fits
from tests.support.experiments import finished_experiment, tuned_answer
from tests.support.runs import golden_file, make_target, make_version, run_finished
from tests.support.stub_server import StubServer
from tests.support.workers import StartWorker, needs_redis_broker, wait_for

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    needs_redis_broker(),
]

Session = Callable[[BrowserContext, str], None]
BEFORE: dict[str, Any] = {"params": {"mode": "x"}, "stages": {"rewrite": False}}


@pytest.fixture
def experiment(stub: StubServer, golden_set: GoldenSet, rita: User) -> Experiment:
    """A finished sweep of title_weight 1, 2, 3 and 6, all four confirmed: 2, 3 and 6 beat the baseline
    (tests.support.experiments.tuned_answer)."""
    stub.default = tuned_answer
    version = make_version(golden_set, golden_file(24))
    target = make_target(f"{stub.url}/search", golden_set, concurrency=2, **BEFORE)
    return finished_experiment(version, target, rita, grid={"params": {"title_weight": [1, 2, 3, 6]}}, top=4)


def checked(page: Page, width: int) -> None:
    """The page fits the screen (at 390 px the nav too) and axe-core finds nothing on it."""
    if width == 390:
        assert_fits(page)
    else:
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    violations = axe_violations(page)
    assert not violations, described(violations)


def _sent(target: SearchTarget) -> dict[str, Any]:
    target.refresh_from_db()
    return {"params": target.params, "stages": target.stages}


@pytest.mark.parametrize("width", [1366, 390])
def test_a_reviewer_adopts_a_configuration_follows_it_to_its_run_and_back_and_reverts_it(
    browser: Browser,
    live_server: Any,
    session_for: Session,
    start_worker: StartWorker,
    stub: StubServer,
    experiment: Experiment,
    rita: User,
    width: int,
) -> None:
    start_worker("w1")
    assert experiment.result is not None
    winner = experiment.result["winner"]["rank"]
    page = sized_page(browser, session_for, "rita", width, 900 if width > 390 else 844)
    try:
        here = f"{live_server.url}/experiments/{experiment.pk}/"
        page.goto(here)
        checked(page, width)
        offered = [o.get_attribute("value") for o in page.locator("#id_rank option").all()]
        assert len(offered) == 3 and str(winner) in offered
        rank = next(int(value) for value in offered if value is not None and value != str(winner))
        page.select_option("#id_rank", str(rank))
        page.fill("#id_rationale", "as good held out, and a lighter boost")
        page.click("#adopt")
        page.wait_for_url(f"{live_server.url}/runs/*/")

        adoption = ExperimentAdoption.objects.select_related("run").get()
        run = adoption.run
        assert run is not None and adoption.rank == rank and page.url == f"{live_server.url}/runs/{run.pk}/"
        back = page.locator("#adopted-from a")
        expect(back).to_have_attribute("href", f"/experiments/{experiment.pk}/#adoption-{adoption.pk}")
        expect(page.locator("#adopted-from")).to_contain_text(f"configuration rank {rank}:")
        expect(page.locator("h1")).to_contain_text(f"Run {run.pk} staging (mode=")
        wait_for(lambda: run_finished(run), f"run {run.pk} on the worker")
        expect(page.locator("#verdict")).to_be_visible(timeout=15_000)  # the page reloads when it is final
        checked(page, width)

        back.click()
        page.wait_for_url(f"{here}#adoption-{adoption.pk}")
        record = page.locator(f"#adoption-{adoption.pk}")
        expect(record.locator("a.adoption-run")).to_have_attribute("href", f"/runs/{run.pk}/")
        expect(record).to_contain_text("in use")
        expect(page.locator("#adopt-form")).to_have_count(0)  # gone while the adoption stands
        checked(page, width)

        page.fill(f"#id_reason_{adoption.pk}", "the lighter boost ranks the blog too high")
        page.click(f"#revert-{adoption.pk}")
        page.wait_for_url(f"{here}#adoption-{adoption.pk}")
        run.refresh_from_db()
        expect(page.locator(".messages")).to_contain_text(
            f"Runs that sent the adopted {adoption.params_text}:"
        )
        expect(page.locator(".messages")).to_contain_text(run.label)
        expect(record).to_contain_text("reverted")
        expect(page.locator("#adopt-form")).to_have_count(1)  # back once reverted
        checked(page, width)
        assert _sent(adoption.target) == BEFORE

        seen = len(stub.requests)
        after = run_create(
            golden_version=experiment.golden_version, target=adoption.target, triggered_by=rita
        )
        wait_for(lambda: run_finished(after), f"run {after.pk} on the worker")
        bodies = [r.json for r in stub.requests[seen:] if r.path == "/search"]
        assert bodies and all(b["mode"] == "x" and "title_weight" not in b for b in bodies)
        assert EvaluationRun.objects.get(pk=after.pk).label == f'run {after.pk} staging (mode="x")'
    finally:
        page.context.close()
