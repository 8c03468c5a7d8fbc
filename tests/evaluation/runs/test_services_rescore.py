"""Baseline re-scores (evaluation/runs/services/rescore.py, `run_regate_rescored`, finalize's hook): a run on
a new golden version against a baseline on the old one is refused by default; re-scored, the baseline's stored
lists are scored against the new labels (exactly what the run's own report gives for the same lists), the
row is reused, and a nightly schedule that opted in gets the re-scored gate without a click. Eager Celery,
the loopback stub engine (every query answered d1, d2, d3 unless scripted)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User

from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from evaluation.models import BaselineRescore, EvaluationRun, SearchTarget
from evaluation.runs.services import (
    BaselineError,
    BaselineRescoreError,
    baseline_promote,
    baseline_rescore_get_or_create,
    run_regate_rescored,
    runs_nightly,
    schedule_set,
)
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.runs import (
    RunFactory,
    eager_celery,
    golden_file,
    make_version,
)
from tests.support.stub_server import StubServer, hits_reply

pytestmark = pytest.mark.django_db

NEW = "2026-09-01"


def relabeled(*, version: str = NEW, k: int = 10, retire: bool = False, add: bool = False) -> GoldenFile:
    """The next version: q-1's d1 down to grade 1, d2 retired, d3 judged 3; q-2's d3 judged 2. With
    `retire`, q-6 leaves the set; with `add`, q-7 joins it."""
    old = golden_file()
    queries = []
    for query in old.queries:
        if query.id == "q-1":
            query = replace(query, judgments=(Judgment("d1", 1), Judgment("d3", 3), Judgment("d4", 1)))
        elif query.id == "q-2":
            query = replace(query, judgments=(*query.judgments[:2], Judgment("d3", 2), query.judgments[2]))
        if not (retire and query.id == "q-6"):
            queries.append(query)
    if add:
        queries.append(GoldenQuery(id="q-7", text="query 7", judgments=(Judgment("d1", 3),), locale="en-US"))
    return GoldenFile(version=version, queries=tuple(queries), rubric=old.rubric, k=k)


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what says how it was made (its run, the re-score record, the seeded interval)."""
    return {key: value for key, value in report.items() if key not in ("run", "rescored", "ci")}


@pytest.fixture
def baseline_run(finished: RunFactory, rita: User) -> EvaluationRun:
    run = finished()
    baseline_promote(run=run, by=rita, rationale="the launch floor")
    return run


@pytest.fixture
def newer(golden_set: GoldenSet) -> GoldenVersion:
    return make_version(golden_set, relabeled())


def test_a_run_on_a_new_version_is_refused_by_default(
    baseline_run: EvaluationRun, finished: RunFactory, newer: GoldenVersion
) -> None:
    run = finished(golden_version=newer)

    assert run.verdict == EvaluationRun.Verdict.FAIL and run.baseline_rescore is None
    assert run.gate is not None and [f["kind"] for f in run.gate["failures"]] == ["refusal"]
    assert "refusing to compare" in run.gate["failures"][0]["message"]
    assert run.gate["baseline_rescore"] is None
    assert not BaselineRescore.objects.exists()


def test_re_gating_scores_the_baselines_lists_against_the_new_labels(
    baseline_run: EvaluationRun, finished: RunFactory, newer: GoldenVersion, rita: User
) -> None:
    run = finished(golden_version=newer)

    regated = run_regate_rescored(run=run, by=rita)

    rescore = BaselineRescore.objects.get()
    assert (rescore.source_run, rescore.golden_version, rescore.created_by) == (baseline_run, newer, rita)
    assert regated.rescore == rescore and regated.made
    assert regated.run.baseline_rescore == rescore and regated.run.verdict == EvaluationRun.Verdict.PASS
    assert regated.verdict_before == EvaluationRun.Verdict.FAIL  # refused for its version before
    run.refresh_from_db()
    assert run.verdict == EvaluationRun.Verdict.PASS and run.baseline_rescore == rescore
    assert run.gate is not None and run.gate["failures"] == []
    assert (run.gate["baseline_run"], run.gate["baseline_rescore"]) == (baseline_run.pk, rescore.pk)
    assert run.gate["regated"]["by"] == "rita" and run.gate["regated"]["at"].endswith("Z")
    # The engine answered the same lists both times: re-scored, the baseline is exactly this run's report.
    assert run.report is not None and baseline_run.report is not None
    assert comparable(rescore.report) == comparable(run.report)
    assert rescore.report["golden_version"] == NEW and rescore.report["run"] == baseline_run.report["run"]
    assert rescore.report["rescored"] == {
        "from_version": "2026-08-01",
        "golden_version": NEW,
        "at": rescore.report["rescored"]["at"],
        "by": "rita",
        "source": f"run {baseline_run.pk}",
    }
    # ...and not the baseline's own numbers: the new labels were read.
    q1 = [row for row in rescore.report["per_query"] if row["id"] == "q-1"]
    assert q1[0]["ndcg"] != baseline_run.report["per_query"][0]["ndcg"]


def test_a_regression_still_fails_against_the_rescored_baseline(
    baseline_run: EvaluationRun, finished: RunFactory, newer: GoldenVersion, rita: User, stub: StubServer
) -> None:
    for i in (1, 2, 3):
        stub.on(f"query {i}", hits_reply(["d9", "d8", "d7"]))
    run = run_regate_rescored(run=finished(golden_version=newer), by=rita).run

    assert run.verdict == EvaluationRun.Verdict.FAIL and run.gate is not None
    kinds = {f["kind"] for f in run.gate["failures"]}
    assert "refusal" not in kinds and "budget" in kinds


def test_the_rescore_is_made_once_and_reused(
    baseline_run: EvaluationRun, finished: RunFactory, newer: GoldenVersion, rita: User, ada: User
) -> None:
    first = run_regate_rescored(run=finished(golden_version=newer), by=rita)
    second = run_regate_rescored(run=finished(golden_version=newer), by=ada)

    assert first.rescore == second.rescore and BaselineRescore.objects.count() == 1
    assert first.made and not second.made
    assert second.run.gate is not None and second.run.gate["regated"]["by"] == "ada"
    assert BaselineRescore.objects.get().created_by == rita


def test_retired_and_new_queries(
    baseline_run: EvaluationRun, finished: RunFactory, golden_set: GoldenSet, rita: User
) -> None:
    version = make_version(golden_set, relabeled(version="2026-10-01", retire=True, add=True))
    run = run_regate_rescored(run=finished(golden_version=version), by=rita).run

    assert run.baseline_rescore is not None
    ids = [row["id"] for row in run.baseline_rescore.report["per_query"]]
    assert ids == ["q-1", "q-2", "q-3", "q-4", "q-5"]  # q-6 retired, q-7 new: neither is in it
    assert run.gate is not None and "refusal" not in {f["kind"] for f in run.gate["failures"]}


def test_who_may_re_gate_and_what_cannot_be_re_scored(
    baseline_run: EvaluationRun,
    finished: RunFactory,
    newer: GoldenVersion,
    golden_set: GoldenSet,
    rita: User,
    alice: User,
    version: GoldenVersion,
) -> None:
    run = finished(golden_version=newer)
    with pytest.raises(BaselineError, match="only a reviewer of help-center can re-score its baseline"):
        run_regate_rescored(run=run, by=alice)

    same = finished(golden_version=version)
    with pytest.raises(BaselineError, match="the baseline is already on version 2026-08-01: nothing to"):
        run_regate_rescored(run=same, by=rita)

    # A run is named by its label, as the pages name it.
    queued = EvaluationRun.objects.create(golden_version=newer, target=run.target)
    with pytest.raises(BaselineError) as refused:
        run_regate_rescored(run=queued, by=rita)
    assert refused.value.problems == [
        f"run {queued.pk} staging is queued: only a finished run with a report is gated"
    ]
    with pytest.raises(BaselineError) as refused:
        run_regate_rescored(run=baseline_run, by=rita)  # the first run: gated against nothing
    assert refused.value.problems == [
        f"{baseline_run.label} was gated without a baseline: there is no baseline to re-score"
    ]
    with pytest.raises(BaselineRescoreError) as unscored:
        baseline_rescore_get_or_create(baseline_run=queued, golden_version=version)
    assert unscored.value.problems == [f"{queued.label} has no report: there is nothing to re-score"]
    with pytest.raises(BaselineRescoreError) as unscored:
        baseline_rescore_get_or_create(baseline_run=baseline_run, golden_version=version)
    assert unscored.value.problems == [
        f"{baseline_run.label} is already on version 2026-08-01: nothing to re-score"
    ]

    deeper = finished(golden_version=make_version(golden_set, relabeled(version="2026-11-01", k=20)))
    with pytest.raises(BaselineRescoreError) as error:
        run_regate_rescored(run=deeper, by=rita)
    assert error.value.problems == [
        "baseline was scored at k=10 and golden version 2026-11-01 scores at k=20: its stored top-10 lists "
        "cannot be re-scored at another depth (run the baseline again)"
    ]
    assert not BaselineRescore.objects.exists()
    run.refresh_from_db()
    assert run.verdict == EvaluationRun.Verdict.FAIL and run.baseline_rescore is None


def _nightly(day: int, capture: Any) -> EvaluationRun:
    with eager_celery(), capture(execute=True):
        (run,) = runs_nightly(now=datetime(2026, 9, day, 4, 0, tzinfo=UTC))
    run.refresh_from_db()
    return run


def test_a_schedule_that_opted_in_gets_the_rescored_gate_without_a_click(
    baseline_run: EvaluationRun,
    newer: GoldenVersion,
    golden_set: GoldenSet,
    target: SearchTarget,
    django_capture_on_commit_callbacks: Any,
) -> None:
    schedule = schedule_set(golden_set=golden_set, target=target, hour=1)
    refused = _nightly(1, django_capture_on_commit_callbacks)
    schedule_set(golden_set=golden_set, target=target, hour=1, rescore_baseline=True)
    rescored = _nightly(2, django_capture_on_commit_callbacks)

    assert (refused.schedule, refused.golden_version) == (schedule, newer)
    assert refused.verdict == EvaluationRun.Verdict.FAIL and refused.baseline_rescore is None
    assert rescored.verdict == EvaluationRun.Verdict.PASS and rescored.baseline_rescore is not None
    rescore = rescored.baseline_rescore
    assert (rescore.source_run, rescore.created_by) == (baseline_run, None)
    assert rescored.gate is not None and rescored.gate["baseline_rescore"] == rescore.pk
    assert "regated" not in rescored.gate


def test_an_opted_in_schedule_whose_baseline_cannot_be_rescored_is_refused_with_the_reason(
    baseline_run: EvaluationRun,
    golden_set: GoldenSet,
    target: SearchTarget,
    django_capture_on_commit_callbacks: Any,
) -> None:
    make_version(golden_set, relabeled(k=20))
    schedule_set(golden_set=golden_set, target=target, hour=1, rescore_baseline=True)

    run = _nightly(1, django_capture_on_commit_callbacks)

    assert run.verdict == EvaluationRun.Verdict.FAIL and run.baseline_rescore is None
    assert run.gate is not None and [f["kind"] for f in run.gate["failures"]] == ["refusal", "refusal"]
    assert (
        f"baseline not re-scored on version {NEW}: baseline was scored at k=10 and golden version {NEW} "
        "scores at k=20: its stored top-10 lists cannot be re-scored at another depth "
        "(run the baseline again)"
    ) in run.gate["notes"]
