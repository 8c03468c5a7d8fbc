"""The noise floor in the app, on the demo: the demo golden set and the real demo search service in its own
process on a loopback port, runs in-process (eager Celery). An A/A pair (the baseline's configuration run
twice) gives a floor; the budgets page shows it beside the budgets with the suggestion, flags a budget below
it and fills the suggestion into the form without saving; the next run's gate warns about that budget and
the run page marks it (docs/metrics.md, "Noise floor")."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from assay.metric_table import format_number
from assay.noise import suggest_budgets
from evaluation import selectors, services
from evaluation.models import Baseline, EvaluationRun, SearchTarget
from golden_io.models import GoldenVersion
from golden_io.services import golden_version_freeze
from labeling.models import GoldenSet
from tests.support.demo_once import demo_once_fixture  # noqa: F401  (the demo, loaded once)
from tests.support.evaluation import form_fields, logged_in, page_text, section_text
from tests.support.processes import serving
from tests.support.runs import eager_celery

pytestmark = pytest.mark.django_db

DEMO_BUDGETS = Path(__file__).resolve().parents[2] / "demo" / "budgets.json"


@pytest.fixture(scope="module")
def demo_search() -> Iterator[str]:
    with serving(["-m", "demo.search_service", "--corpus", "demo/corpus.jsonl", "--port", "0"]) as url:
        yield url


@pytest.fixture
def demo(demo_once: Path, settings: Any, tmp_path: Path) -> GoldenSet:
    settings.VAR_DIR = tmp_path  # what the test writes there stays its own
    golden_set = GoldenSet.objects.get(slug="help-center")
    services.budgets_set(golden_set=golden_set, data=json.loads(DEMO_BUDGETS.read_text()), by=None)
    return golden_set


@pytest.fixture
def reviewer(demo: GoldenSet) -> User:
    return User.objects.get(username="reviewer")


@pytest.fixture
def version(demo: GoldenSet, reviewer: User) -> GoldenVersion:
    return golden_version_freeze(golden_set=demo, by=reviewer, notes="noise floor test")


@pytest.fixture
def target(demo: GoldenSet, demo_search: str) -> SearchTarget:
    return services.target_create(
        name="demo-search",
        url=f"{demo_search}/search",
        golden_sets=[demo],
        stages={"rewrite": False},
        timeout=10.0,
        concurrency=8,
        retries=2,
    )


Run = Callable[..., EvaluationRun]


@pytest.fixture
def run(
    django_capture_on_commit_callbacks: Any, version: GoldenVersion, target: SearchTarget, reviewer: User
) -> Run:
    def finished(**params: Any) -> EvaluationRun:
        with eager_celery(), django_capture_on_commit_callbacks(execute=True):
            created = services.run_create(
                golden_version=version, target=target, triggered_by=reviewer, params=params
            )
        created.refresh_from_db()
        assert created.status == "succeeded" and created.errors == 0, created.error_message
        return created

    return finished


def _row(page: Any, scope: str, metric: str) -> str:
    markup = page.content.decode()
    match = re.search(rf'<tr data-scope="{scope}" data-metric="{metric}".*?</tr>', markup, re.S)
    assert match, f"no noise row for {scope} {metric}"
    return match.group(0)


def test_an_a_a_pair_on_the_demo_gives_a_floor_the_pages_show_and_the_gate_holds_budgets_to(
    run: Run, demo: GoldenSet, target: SearchTarget, reviewer: User
) -> None:
    first = run()
    baseline = services.baseline_promote(run=first, by=reviewer, rationale="demo baseline")
    reviewer_client = logged_in(reviewer)
    budgets_url = f"/sets/{demo.slug}/budgets/"

    # One run of the configuration: no floor yet, and both pages say what to do.
    lonely = reviewer_client.get(budgets_url)
    assert lonely.status_code == 200
    assert (
        "1 run of the baseline's configuration so far: run the baseline's configuration once more to "
        "measure the noise" in section_text(lonely, "noise")
    )
    second = run()
    assert second.gate is not None and second.gate["noise_floor"] is None  # only the baseline had finished
    second_page = reviewer_client.get(f"/runs/{second.pk}/")
    assert "not checked against a noise floor: run the baseline's configuration once more" in page_text(
        second_page
    )

    # The A/A pair: a deterministic engine moves nothing between runs, so the floor is the half-width.
    measure = selectors.noise_measure(baseline=baseline)
    assert [r.pk for r in measure.runs] == [second.pk, first.pk] and measure.floor is not None
    ndcg = measure.floor.core["ndcg"]
    assert ndcg.run_to_run == 0.0 and ndcg.half_width is not None and ndcg.floor == ndcg.half_width > 0
    # The largest over the runs of half their nDCG interval (each run resamples with its own seed).
    widths = [(r.report["ci"]["ndcg"]["high"] - r.report["ci"]["ndcg"]["low"]) / 2 for r in (first, second)]  # type: ignore[index]
    assert ndcg.half_width == pytest.approx(max(widths), abs=1e-12)
    assert set(measure.floor.strata) == {"account", "billing", "blog", "developer"}

    # A budget below the floor: flagged on the budgets page, beside the floor and the suggestion.
    services.budgets_set(
        golden_set=demo,
        data={"ndcg": {"warn": 0.0005, "fail": 0.001}, "strata": {"billing": {}}},
        by=reviewer,
    )
    budgets = selectors.budgets_get(golden_set=demo)
    page = reviewer_client.get(budgets_url)
    assert page.status_code == 200
    core_ndcg = _row(page, "core", "ndcg")
    assert "0.0005 / 0.001" in core_ndcg and "warn and fail below the noise floor" in core_ndcg
    assert format_number(ndcg.floor) in core_ndcg and format_number(ndcg.half_width) in core_ndcg
    suggested = suggest_budgets(measure.floor, budgets)
    shown = f"{suggested.core['ndcg'].warn} / {suggested.core['ndcg'].fail}"
    assert shown in core_ndcg
    assert "not gated" in _row(page, "stratum account", "ndcg")  # the budgets do not name it
    assert "below the noise floor" in _row(page, "stratum billing", "ndcg")  # gated with the core's budgets

    # "Fill in the suggestions" puts them in the form; nothing is saved until the user saves.
    fields = form_fields(page.content.decode(), "budgets-form")
    filled = reviewer_client.post(budgets_url, {**fields, "action": "suggest"})
    assert filled.status_code == 200
    assert "not saved until you save them" in page_text(filled)
    # Saving the filled-in form stores exactly the suggestion.
    assert selectors.budgets_get(golden_set=demo) == budgets
    saved = reviewer_client.post(budgets_url, {**form_fields(filled.content.decode(), "budgets-form")})
    assert saved.status_code == 302
    assert selectors.budgets_get(golden_set=demo) == suggested
    services.budgets_set(golden_set=demo, data=budgets.to_dict(), by=reviewer)

    # The next run of the configuration: its gate warns about the budget (a warning, never a silent pass).
    third = run()
    assert third.gate is not None and third.gate["noise_floor"] is not None
    assert third.verdict == "warn" and third.gate["failures"] == []
    noise = [w for w in third.gate["warnings"] if w["kind"] == "noise"]
    assert ("core", "ndcg") in {(w["scope"], w["metric"]) for w in noise}
    assert any(
        w["message"].startswith("core nDCG@k fail budget 0.001 is below the noise floor ")
        and w["message"].endswith("a change this small can be noise")
        for w in noise
    )
    run_page = reviewer_client.get(f"/runs/{third.pk}/")
    markup = run_page.content.decode()
    core_row = re.search(r'<tr data-metric="ndcg".*?</tr>', markup, re.S)
    assert core_row is not None and "below the noise floor" in core_row.group(0)
    billing_row = re.search(r'<tr data-slice="billing".*?</tr>', markup, re.S)
    assert billing_row is not None and "budget below the noise floor" in billing_row.group(0)
    assert "not checked against a noise floor" not in page_text(run_page)


def test_the_budgets_page_without_a_baseline_says_what_to_do_and_refuses_unknown_targets(
    demo: GoldenSet, reviewer: User, target: SearchTarget
) -> None:
    client = logged_in(reviewer)

    page = client.get(f"/sets/{demo.slug}/budgets/")

    assert page.status_code == 200
    assert (
        "No baseline in this set yet: promote a run to baseline, then run the baseline's configuration "
        in (section_text(page, "noise"))
    )
    assert 'id="fill-suggestions"' not in page.content.decode()
    assert client.get(f"/sets/{demo.slug}/budgets/?target={target.pk}").status_code == 404
    assert client.get(f"/sets/{demo.slug}/budgets/?target=abc").status_code == 404
    # Asking for suggestions without a floor is refused in words, and nothing is saved.
    refused = client.post(f"/sets/{demo.slug}/budgets/", {"action": "suggest"})
    assert refused.status_code == 422
    assert "no noise floor to suggest budgets from: No baseline in this set yet" in section_text(
        refused, "problems"
    )


def test_the_noise_floor_is_for_reviewers_of_the_set_only(
    run: Run, demo: GoldenSet, reviewer: User, charlie: User
) -> None:
    services.baseline_promote(run=run(), by=reviewer, rationale="demo baseline")
    run()
    rater = User.objects.get(username="rater1")

    for user in (charlie, rater):
        client = logged_in(user)
        assert client.get(f"/sets/{demo.slug}/budgets/").status_code == 404
        assert (
            client.post(f"/sets/{demo.slug}/budgets/", {"action": "suggest", "budgets": "{}"}).status_code
            == 404
        )
    assert Baseline.objects.count() == 1
