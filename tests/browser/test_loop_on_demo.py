"""One loop from an idea to an adopted change, walked in Chromium on the demo as `make run` leaves it
(`demo_load`, then `demo_runs`: the promoted baseline, the failing rewriter run and its answered study),
with the demo search service and a Celery worker running, at 1,366 x 900 and at 390 x 844.

A reviewer sweeps the demo target's parameters from its page, follows a configuration to each query's
evidence and back, uses a configuration that beat the baseline (the winner at 1,366 px; at 390, the
winner reverted, another of the same experiment, whose page then holds both adoptions),
follows the confirming run back to the adoption, opens a query of the run beside the baseline and comes
back, asks raters for a side-by-side study of the run from its page (rater1 answers one query on the
rater's page, the rest through the rater's service), opens a query of the results and comes back, and
reverts the adoption: the target's params and stage toggles are what they were, exactly, and a run
started from the target's page after it sends them (read off what the demo search service received).
Every link on the way is followed both ways, every page fits the screen and axe-core finds nothing.

One test for both widths: the demo and its two runs are loaded once (committed, for the worker and the
server: a second test would find them flushed), and the second width walks the loop from the state the
first left (the experiment, a reverted adoption, a study)."""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.management import call_command
from playwright.sync_api import Browser, BrowserContext, Page, expect

from demo.search_service import (
    DEFAULT_SYNONYMS_PATH,
    SearchHandler,
    build_index,
    load_corpus,
    load_synonyms,
    make_server,
)
from evaluation.models import EvaluationRun, Experiment, ExperimentAdoption, SearchTarget, StudyTask, SxsStudy
from evaluation.studies.services import Answer, study_answer
from tests.browser.test_adoption import checked
from tests.browser.test_grading_keys import sized_page
from tests.browser.test_narrow_screens import assert_two_columns
from tests.support.experiments import DEMO
from tests.support.runs import run_finished
from tests.support.workers import StartWorker, needs_redis_broker, wait_for

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    needs_redis_broker(),
]

Session = Callable[[BrowserContext, str], None]
SCREENS = ((1366, 900), (390, 844))
# The demo engine's two tuning parameters (demo/search_service): with this split's seed two of the four
# configurations beat the baseline on the held-out queries, the winner (min_should_match 1, title_weight
# 3) and min_should_match 1 with title_weight 6.
GRID = {"params": {"min_should_match": [1, 2], "title_weight": [3, 6]}}
SEED = 3
TUNING = ("min_should_match", "title_weight")
RUN_PAGE = re.compile(r".*/runs/(\d+)/$")


# ------------------------------------------------------------------------------ the demo search service


@dataclass
class DemoSearch:
    """The demo search service (`demo.search_service`: the demo corpus and synonym pack, as `make run`
    starts it) served from a thread of this process on a loopback port, keeping each body it was sent."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)

    def since(self, mark: int) -> list[dict[str, Any]]:
        return self.received[mark:]


class _Recording(SearchHandler):
    """The service's own handler, the body of each POST kept before it answers it."""

    def do_POST(self) -> None:
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            super().do_POST()
            return
        raw, kept = self.rfile.read(int(length)), self.rfile
        self.server.received.append(json.loads(raw))  # type: ignore[attr-defined]
        self.rfile = io.BytesIO(raw)  # read again by the service; the connection's reader after
        try:
            super().do_POST()
        finally:
            self.rfile = kept


@pytest.fixture
def demo_search() -> Iterator[DemoSearch]:
    index = build_index(load_corpus(DEMO / "corpus.jsonl"))
    server = make_server(index, port=0, synonyms=load_synonyms(DEFAULT_SYNONYMS_PATH))
    server.RequestHandlerClass = _Recording
    found = DemoSearch(server.url)
    server.received = found.received  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield found
    server.shutdown()
    server.server_close()


def _sent(target: SearchTarget) -> dict[str, Any]:
    target.refresh_from_db()
    return {"params": target.params, "stages": target.stages}


def _tuning(body: dict[str, Any]) -> dict[str, Any]:
    return {name: body[name] for name in TUNING if name in body}


# ------------------------------------------------------------------------------------------ the walk


@dataclass
class Walk:
    page: Page
    base: str
    width: int
    height: int

    def at(self, path: str) -> str:
        return f"{self.base}{path}"

    def checked(self) -> None:
        checked(self.page, self.width)

    def follow(self, link: Any, path: str | re.Pattern[str]) -> None:
        """Click the link, land on `path` (the site's own: a pattern is matched against the whole URL)."""
        link.click()
        self.page.wait_for_url(path if isinstance(path, re.Pattern) else self.at(path))


def test_the_loop_from_an_experiment_to_an_adopted_change_and_back_on_the_demo(
    browser: Browser,
    live_server: Any,
    session_for: Session,
    start_worker: StartWorker,
    demo_search: DemoSearch,
    settings: Any,
    tmp_path: Any,
) -> None:
    settings.VAR_DIR = tmp_path  # demo_load keeps the demo logins there
    call_command("demo_load", stdout=io.StringIO())
    start_worker("w1")
    call_command(
        "demo_runs",
        search_url=f"{demo_search.url}/search",
        site_url=live_server.url,
        timeout=120,
        stdout=io.StringIO(),
    )
    target = SearchTarget.objects.get(name="demo-search")
    before = _sent(target)
    assert before == {"params": {}, "stages": {"rewrite": False}}
    baseline_run = EvaluationRun.objects.get(params={}, target=target)
    experiment: Experiment | None = None
    for index, (width, height) in enumerate(SCREENS):
        page = sized_page(browser, session_for, "reviewer", width, height)
        try:
            walk = Walk(page, live_server.url, width, height)
            experiment = _sweep(walk, target, baseline_run.golden_version_id, experiment)
            _configuration_evidence(walk, experiment)
            adoption = _adopt(walk, experiment, demo_search, winner=index == 0)
            run = adoption.run
            assert run is not None
            _run_evidence(walk, run, baseline_run)
            study = _study(walk, run, baseline_run, browser, session_for)
            _study_evidence(walk, study)
            _back_to_the_adoption(walk, adoption, study)
            _revert(walk, adoption)
            assert _sent(target) == before
            _run_after_the_revert(walk, target, demo_search, before)
        finally:
            page.context.close()


def _sweep(walk: Walk, target: SearchTarget, version_id: int, made: Experiment | None) -> Experiment:
    """From the target's page, the new experiment's form, filled; the experiment's page once it ends. Or,
    given the experiment `made` before, its page from the list of experiments."""
    page = walk.page
    page.goto(walk.at(f"/targets/{target.pk}/"))
    walk.checked()
    walk.follow(
        page.get_by_role("link", name="Sweep its parameters"), f"/experiments/new/?target={target.pk}"
    )
    expect(page.locator("#id_target")).to_have_value(str(target.pk))
    walk.checked()
    if made is not None:
        page.goto(walk.at("/experiments/"))
        walk.checked()
        walk.follow(page.locator(f"#experiment-{made.pk} a"), f"/experiments/{made.pk}/")
        walk.checked()
        return made
    page.select_option("#id_golden_version", str(version_id))
    page.fill("#id_grid", json.dumps(GRID))
    page.fill("#id_seed", str(SEED))
    page.fill("#id_top", "3")
    walk.follow(page.get_by_role("button", name="Start the experiment"), re.compile(r".*/experiments/\d+/$"))
    experiment = Experiment.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    wait_for(lambda: _settled(experiment), f"experiment {experiment.pk} on the worker", timeout=120)
    assert experiment.status == Experiment.Status.SUCCEEDED, experiment.error_message
    expect(page.locator("#winner")).to_be_visible(timeout=15_000)  # the page reloads when it is final
    walk.checked()
    return experiment


def _settled(experiment: Experiment) -> bool:
    experiment.refresh_from_db()
    return experiment.status in Experiment.FINAL


def _configuration_evidence(walk: Walk, experiment: Experiment) -> None:
    """The winner's row -> each query of it -> one query's evidence -> back -> back to the table."""
    page, here = walk.page, f"/experiments/{experiment.pk}/"
    row = page.locator("#config-table tr.winner")
    queries = row.get_by_role("link", name=re.compile("each query against the baseline"))
    slot_path = queries.get_attribute("href")
    assert slot_path is not None and re.fullmatch(rf"{here}configs/\d+/", slot_path)
    walk.follow(queries, slot_path)
    back = page.locator("#evidence-back a")
    expect(back).to_have_attribute("href", f"{here}#configurations")
    walk.checked()
    first = page.locator("#config-query-table tbody tr").first
    query_id = first.get_attribute("data-query")
    walk.follow(first.locator("a"), f"{slot_path}evidence/?query={query_id}")
    expect(page.locator("main h1")).to_contain_text(f"query {query_id}")
    expect(page.locator("#evidence-side-a h3 a")).to_have_attribute("href", here)
    expect(page.locator("#evidence-side-b h3 a")).to_have_attribute("href", slot_path)
    assert_two_columns(page, "#evidence-side-a", "#evidence-side-b", narrow=walk.width == 390)
    walk.checked()
    walk.follow(page.locator("#evidence-back a"), slot_path)
    walk.follow(page.locator("#evidence-back a"), f"{here}#configurations")


def _adopt(
    walk: Walk, experiment: Experiment, demo_search: DemoSearch, *, winner: bool
) -> ExperimentAdoption:
    """Use a configuration (the winner, or the next that beat the baseline), land on the confirming run,
    which links back to the adoption and, once finished, sent the configuration on every request."""
    page = walk.page
    assert experiment.result is not None
    best = experiment.result["winner"]["rank"]
    offered = [int(o.get_attribute("value") or 0) for o in page.locator("#id_rank option").all()]
    assert best in offered and len(offered) >= 2, offered
    rank = best if winner else next(r for r in offered if r != best)
    page.select_option("#id_rank", str(rank))
    page.fill("#id_rationale", f"rank {rank} held up on the held-out queries")
    mark = len(demo_search.received)
    walk.follow(page.locator("#adopt"), RUN_PAGE)
    adoption = ExperimentAdoption.objects.select_related("run").get(
        experiment=experiment, reverted_at__isnull=True
    )
    run = adoption.run
    assert run is not None and adoption.rank == rank and page.url == walk.at(f"/runs/{run.pk}/")
    expect(page.locator("#adopted-from a")).to_have_attribute(
        "href", f"/experiments/{experiment.pk}/#adoption-{adoption.pk}"
    )
    wait_for(lambda: run_finished(run), f"run {run.pk} on the worker")
    assert run.status == EvaluationRun.Status.SUCCEEDED, run.error_message
    expect(page.locator("#verdict")).to_be_visible(timeout=15_000)  # the page reloads when it is final
    walk.checked()
    bodies = demo_search.since(mark)
    assert len(bodies) >= run.total and all(_tuning(b) == adoption.configuration for b in bodies)
    return adoption


def _run_evidence(walk: Walk, run: EvaluationRun, baseline_run: EvaluationRun) -> None:
    """A query of the run's per-query table -> its evidence against the baseline -> back."""
    page, here = walk.page, f"/runs/{run.pk}/"
    page.locator("#per-query summary").click()
    first = page.locator("#per-query tr[data-query]").first
    query_id = first.get_attribute("data-query")
    walk.follow(first.get_by_role("link", name=query_id), f"{here}evidence/?query={query_id}")
    expect(page.locator("main h1")).to_contain_text(f"Run {run.pk}, query {query_id}")
    expect(page.locator("#evidence-side-a h3 a")).to_have_attribute("href", f"/runs/{baseline_run.pk}/")
    expect(page.locator("#evidence-side-a h3")).to_contain_text(baseline_run.label)
    expect(page.locator("#evidence-side-b h3 a")).to_have_attribute("href", here)
    expect(page.locator("#evidence-side-b h3")).to_contain_text(run.label)
    assert_two_columns(page, "#evidence-side-a", "#evidence-side-b", narrow=walk.width == 390)
    walk.checked()
    # Back to the list of every query, open on the row the walk came from.
    walk.follow(page.locator("#evidence-back a"), f"{here}?pq-q={query_id}#per-query")
    expect(page.locator(f"#per-query tr[data-query='{query_id}']")).to_be_visible()
    walk.checked()


def _study(
    walk: Walk, run: EvaluationRun, baseline_run: EvaluationRun, browser: Browser, session_for: Session
) -> SxsStudy:
    """From the run's page, a study of it against the baseline, two raters, a sample of queries; rater1
    answers a query on the rater's page, the rest are answered through the rater's service."""
    page = walk.page
    ask = page.locator("#run-studies").get_by_role("link", name=re.compile("Ask raters"))
    new = f"/sets/help-center/studies/new/?run_b={run.pk}&run_a={baseline_run.pk}"
    walk.follow(ask, new)
    expect(page.locator("#id_run_a")).to_have_value(str(baseline_run.pk))
    expect(page.locator("#id_run_b")).to_have_value(str(run.pk))
    walk.checked()
    page.fill("#id_name", f"walk at {walk.width} px: the adopted configuration against the baseline")
    page.select_option("#id_selection", "sample")
    page.fill("#id_size", "6")
    page.fill("#id_seed", "7")
    walk.follow(page.get_by_role("button", name="Create the study"), re.compile(r".*/studies/\d+/$"))
    study = SxsStudy.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    assert (study.run_a_id, study.run_b_id) == (baseline_run.pk, run.pk)
    tasks = StudyTask.objects.filter(study=study).select_related("rater").order_by("token")
    assert tasks.exists(), "no query of the sample differs between the two runs"

    rater = sized_page(browser, session_for, "rater1", walk.width, walk.height)
    try:
        rater.goto(walk.at("/sxs/next/"))
        rater.wait_for_url(re.compile(r".*/sxs/[^/]+/$"))
        checked(rater, walk.width)
        rater.locator("body").click(position={"x": 1, "y": 1})
        rater.keyboard.press("6")  # the right list better
        rater.locator("body").focus()
        rater.keyboard.press("Enter")
        expect(rater.locator("#sxs-message")).to_contain_text("Answered.")
    finally:
        rater.context.close()
    for task in tasks.filter(answered_at__isnull=True):
        shown = -1 if task.candidate_left else 1  # the candidate a little better, as the rater saw it
        study_answer(
            token=task.token, rater=task.rater, revision=task.revision, answer=Answer(preference=shown)
        )
    assert not StudyTask.objects.filter(study=study, answered_at__isnull=True).exists()

    # The run lists the study (the study links back to the run: `_back_to_the_adoption`).
    page.goto(walk.at(f"/runs/{run.pk}/"))
    walk.follow(page.locator("#run-studies li a", has_text=f"Study {study.pk}:"), f"/studies/{study.pk}/")
    walk.checked()
    return study


def _study_evidence(walk: Walk, study: SxsStudy) -> None:
    """A query of the results (offline against people) -> its evidence with the answers -> back."""
    page, here = walk.page, f"/studies/{study.pk}/"
    link = page.locator("#study-offline a").first
    query_id = link.inner_text()
    walk.follow(link, f"{here}evidence/?query={query_id}")
    expect(page.locator("main h1")).to_contain_text(f"Study {study.pk}, query {query_id}")
    expect(page.locator("#evidence-side-b h3 a")).to_have_attribute("href", f"/runs/{study.run_b_id}/")
    for rater in ("rater1", "rater2"):
        expect(page.locator(f"#evidence-answer-table tr[data-rater='{rater}']")).to_contain_text("+")
    assert_two_columns(page, "#evidence-side-a", "#evidence-side-b", narrow=walk.width == 390)
    walk.checked()
    walk.follow(page.locator("#evidence-back a"), f"{here}#study-results")
    expect(page.locator("#study-offline")).to_be_visible()


def _back_to_the_adoption(walk: Walk, adoption: ExperimentAdoption, study: SxsStudy) -> None:
    """From the study back to its run (B), from the run back to its adoption on the experiment's page,
    whose record links to the run and to the study."""
    page, run = walk.page, adoption.run
    assert run is not None
    here = f"/experiments/{adoption.experiment_id}/"
    walk.follow(page.locator("#study-setup a", has_text=run.label), f"/runs/{run.pk}/")
    walk.follow(page.locator("#adopted-from a"), f"{here}#adoption-{adoption.pk}")
    record = page.locator(f"#adoption-{adoption.pk}")
    expect(record).to_contain_text("in use")
    expect(page.locator("#adopt-form")).to_have_count(0)  # gone while the adoption stands
    # To the run and the study, the pages the walk came through.
    expect(record.locator("a.adoption-run")).to_have_attribute("href", f"/runs/{run.pk}/")
    expect(record.locator("a.adoption-study")).to_have_attribute("href", f"/studies/{study.pk}/")
    walk.checked()


def _revert(walk: Walk, adoption: ExperimentAdoption) -> None:
    page, run = walk.page, adoption.run
    assert run is not None
    here = f"/experiments/{adoption.experiment_id}/#adoption-{adoption.pk}"
    page.fill(f"#id_reason_{adoption.pk}", "the walk is over: back to what the demo sent")
    walk.follow(page.locator(f"#revert-{adoption.pk}"), here)
    messages = page.locator(".messages")
    expect(messages).to_contain_text(f"Runs that sent the adopted {adoption.params_text}: {run.label}.")
    expect(page.locator(f"#adoption-{adoption.pk}")).to_contain_text("reverted")
    expect(page.locator("#adopt-form")).to_have_count(1)  # back once reverted
    walk.checked()


def _run_after_the_revert(
    walk: Walk, target: SearchTarget, demo_search: DemoSearch, before: dict[str, Any]
) -> None:
    """From the target's page, a run of the demo version: it sends what the target sent before."""
    page = walk.page
    page.goto(walk.at(f"/targets/{target.pk}/"))
    expect(page.locator("#target-settings")).not_to_contain_text("min_should_match")
    walk.follow(page.get_by_role("link", name="Start a run"), f"/runs/new/?target={target.pk}")
    walk.checked()
    mark = len(demo_search.received)
    walk.follow(page.get_by_role("button", name="Start the run"), RUN_PAGE)
    run = EvaluationRun.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    wait_for(lambda: run_finished(run), f"run {run.pk} on the worker")
    assert run.status == EvaluationRun.Status.SUCCEEDED, run.error_message
    bodies = demo_search.since(mark)
    assert len(bodies) >= run.total  # one a query, and any retry
    assert all(_tuning(b) == {} and b["rewrite"] is False for b in bodies)
    snapshot = run.target_snapshot or {}
    assert {"params": snapshot.get("params") or {}, "stages": snapshot.get("stages")} == before
    assert run.label == f"run {run.pk} demo-search"
