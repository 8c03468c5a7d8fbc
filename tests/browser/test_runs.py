"""A search engineer's run workflow in a real browser, with a real Celery worker process and Redis:
trigger a run from the page, watch the progress bar move until the verdict appears, open the top
losers and the side-by-side view of one of them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page, expect

from evaluation.models import EvaluationRun, SearchTarget
from evaluation.runs.services import baseline_promote, run_create
from labeling.models import GoldenSet
from tests.support.runs import golden_file, make_target, make_version
from tests.support.stub_server import StubServer, hits_reply
from tests.support.workers import StartWorker

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not settings.CELERY_BROKER_URL.startswith("redis://"),
        reason="needs Redis as the broker: set REDIS_URL (CI and `make test` do)",
    ),
]

Session = Callable[[BrowserContext, str], None]
QUERIES = 24


def _finish(run: EvaluationRun, timeout: float = 60.0) -> EvaluationRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in EvaluationRun.FINAL:
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run.pk} did not finish: {run.status}")


@pytest.fixture
def stub() -> Any:
    with StubServer() as server:
        # Slow enough that the page sees the run in flight: 24 queries at 2 in flight, 0.15 s each.
        server.default = hits_reply(["d1", "d2", "d3"], delay=0.15)
        yield server


@pytest.fixture
def engine(stub: StubServer, golden_set: GoldenSet, rita: User, start_worker: StartWorker) -> SearchTarget:
    """A target with a promoted baseline (run by the worker), then an engine that got worse on q-1."""
    version = make_version(golden_set, golden_file(QUERIES))
    target = make_target(f"{stub.url}/search", golden_set, concurrency=2)
    start_worker("w1")
    baseline = _finish(run_create(golden_version=version, target=target, triggered_by=rita))
    assert baseline.status == "succeeded", baseline.error_message
    baseline_promote(run=baseline, by=rita, rationale="the engine before the change")
    stub.on("query 1", hits_reply(["d9", "d3", "d2"], delay=0.15))
    # Slower than the chunk's progress count (every PROGRESS_EVERY_S, 2 s): the other queries' count is on
    # the bar while this one is in flight, however fast the rest of the run is.
    stub.on("query 3", hits_reply(["d9"], delay=2.5))
    return target


def test_a_reviewer_triggers_a_run_watches_it_finish_and_opens_a_top_loser_side_by_side(
    page: Page, context: BrowserContext, live_server: Any, session_for: Session, engine: SearchTarget
) -> None:
    session_for(context, "rita")
    page.goto(f"{live_server.url}/runs/new/")
    page.fill("#id_params", "rewrite=true")
    page.click("button:has-text('Start the run')")
    page.wait_for_url(f"{live_server.url}/runs/*/")
    run = EvaluationRun.objects.order_by("-id").first()
    assert run is not None and run.params == {"rewrite": True} and run.trigger == "web"

    # The bar polls while the run is in flight; the page reloads itself when it is final.
    progress = page.locator("#run-progress progress")
    expect(progress).to_have_attribute("max", str(QUERIES), timeout=30_000)
    seen = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and page.locator("#verdict").count() == 0:
        value = progress.get_attribute("value") if progress.count() else None
        if value is not None:
            seen.add(int(value))
        time.sleep(0.1)
    expect(page.locator("#verdict")).to_have_text("fail", timeout=5_000)
    assert len(seen) > 1, f"the bar never moved: {seen}"
    assert max(seen) <= QUERIES
    expect(page.locator("#run-progress")).to_have_attribute("data-status", "succeeded")
    expect(page.locator("#run-progress progress")).to_have_attribute("value", str(QUERIES))
    expect(page.locator("#failures")).to_contain_text("core: nDCG@k drop")

    losers = page.locator("#top-losers")
    expect(losers.locator("tr[data-query]").first).to_have_attribute("data-query", "q-3")
    expect(losers.locator("#loser-q-1")).to_contain_text("d1")
    losers.locator("#loser-q-1 a.side-by-side").click()
    page.wait_for_url("**/runs/compare/**")
    expect(page.locator("#query h2")).to_contain_text("q-1")
    first_row = page.locator("#side-by-side tbody tr").first
    expect(first_row).to_contain_text("d1")  # the baseline's rank 1
    expect(first_row).to_contain_text("d9")  # the new run's rank 1
    expect(page.locator("#rank-changes")).to_contain_text("out of top k")

    page.goto(f"{live_server.url}/runs/")
    row = page.locator(f"#run-{run.pk}")
    expect(row).to_have_attribute("data-status", "succeeded")
    expect(row.locator(".verdict-badge")).to_have_text("fail")
