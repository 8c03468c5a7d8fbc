"""The noise floor in the app, on the demo: the demo golden set and the real demo search service in its own
process on a loopback port, runs in-process (eager Celery). An A/A pair (the baseline's configuration run
twice) gives a floor: 0 for the demo engine, which is deterministic, so its next run passes with no
warning and the rewriter run still fails billing; above 0 for the same engine started with `--jitter`
(its two top hits swapped on some requests), where the budgets page shows the floor beside the budgets with
the suggestion, flags a budget below it and fills the suggestion into the form without saving, and the next
run's gate warns once per scope about those budgets and the run page marks them (docs/metrics.md, "Noise
floor")."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from assay.changes import per_query_value
from assay.metric_table import BY_KEY, format_budget, format_number
from assay.noise import NoiseFloor, below_floor, suggest_budgets
from evaluation.models import Baseline, EvaluationRun, SearchTarget
from evaluation.runs import selectors, services
from golden_io.models import GoldenVersion
from golden_io.services import golden_version_freeze
from labeling.models import GoldenSet
from tests.support.evaluation import form_fields, logged_in, page_text, section_text
from tests.support.processes import serving
from tests.support.runs import eager_celery

pytestmark = pytest.mark.django_db

DEMO_BUDGETS = Path(__file__).resolve().parents[3] / "demo" / "budgets.json"


@pytest.fixture(scope="module")
def demo_search() -> Iterator[str]:
    with serving(["-m", "demo.search_service", "--corpus", "demo/corpus.jsonl", "--port", "0"]) as url:
        yield url


@pytest.fixture(scope="module")
def jittery_search() -> Iterator[str]:
    """The demo engine moving between runs: the two top hits of half the requests swapped, seeded."""
    args = ["-m", "demo.search_service", "--corpus", "demo/corpus.jsonl", "--port", "0", "--jitter", "0.5"]
    with serving([*args, "--jitter-seed", "7"]) as url:
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


@pytest.fixture(params=["demo"])
def target(request: pytest.FixtureRequest, demo: GoldenSet) -> SearchTarget:
    """The demo engine as a target; parametrize indirectly with "jittery" for the one that moves."""
    url = request.getfixturevalue("jittery_search" if request.param == "jittery" else "demo_search")
    return services.target_create(
        name=f"{request.param}-search",
        url=f"{url}/search",
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


def test_identical_runs_of_the_demo_have_a_floor_of_0_pass_with_no_warning_and_the_rewriter_still_fails(
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

    # The A/A pair of a deterministic engine: nothing moved, so the floor is 0 on every scope and metric.
    measure = selectors.noise_measure(baseline=baseline)
    assert [r.pk for r in measure.runs] == [second.pk, first.pk] and measure.floor is not None
    assert set(measure.floor.strata) == {"account", "billing", "blog", "developer"}
    assert {m.floor for _, _, noise in measure.floor.scopes() for m in noise.values()} == {0.0}
    # The budgets page: no threshold below it, and the suggestion is the budgets in force (the defaults).
    budgets = selectors.budgets_get(golden_set=demo)
    assert suggest_budgets(measure.floor, budgets) == budgets
    page = reviewer_client.get(budgets_url)
    assert "0.01 / 0.025" in _row(page, "core", "ndcg") and "0.0000" in _row(page, "core", "ndcg")
    assert "below the noise floor" not in page.content.decode()

    # The next run of the configuration, gated with the floor: PASS, not a single warning.
    third = run()
    assert third.gate is not None and third.gate["noise_floor"] is not None
    assert third.verdict == "pass" and third.gate["failures"] == [] and third.gate["warnings"] == []
    third_page = reviewer_client.get(f"/runs/{third.pk}/")
    assert "below the noise floor" not in third_page.content.decode()
    assert "not checked against a noise floor" not in page_text(third_page)

    # The rewriter run still fails billing's nDCG, under demo/budgets.json, which is also the suggestion.
    rewritten = run(rewrite=True)
    assert rewritten.verdict == "fail" and rewritten.gate is not None
    billing = [
        f for f in rewritten.gate["failures"] if (f["scope"], f["metric"]) == ("stratum billing", "ndcg")
    ]
    assert len(billing) == 1 and billing[0]["message"].startswith(
        "stratum billing nDCG@k drop 0.1902 >= fail "
    )


@pytest.mark.parametrize("target", ["jittery"], indirect=True)
def test_an_engine_that_moves_between_runs_has_a_floor_and_budgets_below_it_warn_once_per_scope(
    run: Run, demo: GoldenSet, target: SearchTarget, reviewer: User
) -> None:
    first = run()
    baseline = services.baseline_promote(run=first, by=reviewer, rationale="jittery baseline")
    second = run()
    reviewer_client = logged_in(reviewer)
    budgets_url = f"/sets/{demo.slug}/budgets/"

    # The floor is from every query's change between the two runs: above 0 for this engine.
    measure = selectors.noise_measure(baseline=baseline)
    assert measure.floor is not None
    ndcg = measure.floor.core["ndcg"]
    # Each query's nDCG as the gate pairs it (expected-empty queries are in no nDCG mean).
    values = [
        {row["id"]: per_query_value(row, BY_KEY["ndcg"]) for row in r.report["per_query"]}
        for r in (first, second)
    ]
    core = [row["id"] for row in first.report["per_query"] if row.get("tier", "core") == "core"]
    changes = [values[1][q] - values[0][q] for q in core if None not in (values[0][q], values[1][q])]  # type: ignore[operator]
    per_query = (sum(d * d for d in changes) / len(changes)) ** 0.5
    assert ndcg.floor is not None and ndcg.floor > 0 and ndcg.n == len(changes)
    assert ndcg.floor == pytest.approx(1.96 * per_query / len(changes) ** 0.5, abs=1e-12)

    # Budgets below the floor (warn levels only, so that a jittered change can warn but never fail).
    services.budgets_set(
        golden_set=demo,
        data={
            "ndcg": {"warn": 0.0005, "fail": None},
            "mrr": {"warn": 0.0005, "fail": None},
            "strata": {"billing": {}},
        },
        by=reviewer,
    )
    budgets = selectors.budgets_get(golden_set=demo)
    below = below_floor(budgets, measure.floor)
    assert {("core", "ndcg"), ("stratum billing", "ndcg")} <= {(b.scope, b.metric) for b in below}
    page = reviewer_client.get(budgets_url)
    assert page.status_code == 200
    core_ndcg = _row(page, "core", "ndcg")
    assert "warn below the noise floor" in core_ndcg and format_number(ndcg.floor) in core_ndcg
    suggested = suggest_budgets(measure.floor, budgets)
    assert format_budget(suggested.core["ndcg"].warn, suggested.core["ndcg"].fail) in core_ndcg
    assert "not gated" in _row(page, "stratum account", "ndcg")  # the budgets do not name it
    assert "below the noise floor" in _row(page, "stratum billing", "ndcg")  # gated with the core's budgets

    # "Fill in the suggestions" puts them in the form; nothing is saved until the user saves.
    fields = form_fields(page.content.decode(), "budgets-form")
    filled = reviewer_client.post(budgets_url, {**fields, "action": "suggest"})
    assert filled.status_code == 200
    assert "not saved until you save them" in page_text(filled)
    assert selectors.budgets_get(golden_set=demo) == budgets
    saved = reviewer_client.post(budgets_url, {**form_fields(filled.content.decode(), "budgets-form")})
    assert saved.status_code == 302
    assert selectors.budgets_get(golden_set=demo) == suggested
    assert below_floor(suggested, measure.floor) == []
    services.budgets_set(golden_set=demo, data=budgets.to_dict(), by=reviewer)

    # The next run: one noise warning per scope with a budget below its floor, never a silent pass.
    third = run()
    assert third.gate is not None and third.gate["noise_floor"] is not None
    assert third.verdict == "warn" and third.gate["failures"] == []
    held_to = NoiseFloor.from_dict(third.gate["noise_floor"])
    # The critical queries' ranks in the A/A runs and how deep the lists changed (the service swaps the
    # top two hits only): a swap cannot take a critical query out of its top 3, so no critical finding.
    assert set(held_to.critical) == {"q-0304", "q-0408", "q-0471"} and held_to.deepest_change == 2
    assert [f for f in [*third.gate["failures"], *third.gate["warnings"]] if f["kind"] == "critical"] == []
    scopes = list(dict.fromkeys(b.scope for b in below_floor(budgets, held_to)))
    noise = [w for w in third.gate["warnings"] if w["kind"] == "noise"]
    assert [w["scope"] for w in noise] == scopes and {"core", "stratum billing"} <= set(scopes)
    assert noise[0]["message"].startswith("core budgets below the noise floor: nDCG@k warn 0.0005 (floor ")
    assert noise[0]["message"].endswith("raise them to the suggested budgets")
    run_page = reviewer_client.get(f"/runs/{third.pk}/")
    markup = run_page.content.decode()
    # The run page lists them as the gate has them: one line per scope, not one per metric and level.
    listed = re.findall(r"<li><strong>noise</strong> · (.*?): budgets below the noise floor: ", markup)
    assert listed == scopes
    # A line above them says how many and what they are.
    summary = re.search(r'<p id="warnings-summary">(.*?)</p>', markup, re.S)
    n = len(third.gate["warnings"])
    assert summary is not None and summary.group(1).startswith(f"{n} warning{'s' if n > 1 else ''}: ")
    assert f"{len(noise)} of budgets below the noise floor (one per scope" in summary.group(1)
    core_row = re.search(r'<tr data-metric="ndcg".*?</tr>', markup, re.S)
    assert core_row is not None and "below the noise floor" in core_row.group(0)
    billing_row = re.search(r'<tr data-slice="billing".*?</tr>', markup, re.S)
    assert billing_row is not None and "budget below the noise floor" in billing_row.group(0)
    account_row = re.search(r'<tr data-slice="account".*?</tr>', markup, re.S)
    assert account_row is not None and "below the noise floor" not in account_row.group(0)  # not gated


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
