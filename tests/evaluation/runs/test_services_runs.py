"""Runs through the services and tasks with eager Celery and a loopback stub engine (no worker process:
tests/integration has those). Each test drives the real harness over HTTP on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from evaluation.models import EvaluationRun, QueryRunResult, SearchTarget
from evaluation.runs.services import (
    RunError,
    baseline_promote,
    budgets_set,
    run_begin,
    run_cancel,
    run_chunk_process,
    run_create,
    run_finalize_process,
)
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests import factories
from tests.support.runs import (
    RunFactory,
    make_target,
)
from tests.support.stub_server import Reply, StubServer, hits_reply

pytestmark = pytest.mark.django_db

Status = EvaluationRun.Status


def test_it_runs_every_query_once_and_reports(finished: RunFactory, stub: StubServer) -> None:
    run = finished()

    assert run.status == Status.SUCCEEDED
    assert (run.total, run.done, run.errors) == (6, 6, 0)
    assert sorted(QueryRunResult.objects.filter(run=run).values_list("query_id", flat=True)) == [
        f"q-{i}" for i in range(1, 7)
    ]
    assert sorted(str(r.key) for r in stub.requests) == sorted(f"query {i}" for i in range(1, 7))
    report = run.report
    assert report is not None
    # d1 (3), d2 (2), d3 (unjudged): DCG = 7 + 3/log2(3); ideal 7 + 3/log2(3) + 1/2.
    assert report["ndcg"] == pytest.approx((7 + 3 / 1.5849625007211562) / (7 + 3 / 1.5849625007211562 + 0.5))
    assert report["run"]["run_id"] == run.pk
    assert report["run"]["target"] == "staging"
    assert run.verdict == EvaluationRun.Verdict.NONE  # no baseline yet, and nothing failed
    assert run.gate is not None and run.gate["baseline_run"] is None


def test_it_records_errors_not_empties_and_fails_closed(finished: RunFactory, stub: StubServer) -> None:
    stub.on("query 2", Reply(status=500, text="boom"))
    stub.on("query 5", Reply(status=404, text="no such index"))

    run = finished()

    assert run.status == Status.SUCCEEDED
    assert run.errors == 2
    errors = dict(
        QueryRunResult.objects.filter(run=run, error__isnull=False).values_list("query_id", "error")
    )
    assert set(errors) == {"q-2", "q-5"}
    assert str(errors["q-2"]).startswith("HTTP 500")
    assert run.report is not None
    assert run.report["empty_rate"] == 0.0  # the failed queries are not counted as empty
    assert run.report["error_rate"] == pytest.approx(2 / 6)
    assert run.verdict == EvaluationRun.Verdict.FAIL
    assert run.gate is not None
    assert [f["kind"] for f in run.gate["failures"]] == ["errors"]
    # The status line says the run is over its error budget.
    assert run.error_message.startswith("current error rate 0.3333 over all 6 queries (every tier) is above")


def test_a_run_whose_every_query_errored_failed_and_says_why(finished: RunFactory, stub: StubServer) -> None:
    # Every query answered 200 with a body that is not JSON: nothing of the engine was measured.
    stub.default = Reply(status=200, text="<html>maintenance</html>", content_type="text/html")

    run = finished()

    assert run.status == Status.FAILED
    assert run.errors == 6
    assert run.error_message.startswith("every one of the 6 queries errored, so nothing was measured: ")
    assert "not JSON" in run.error_message and "(6x)" in run.error_message
    assert run.report is not None and run.report["error_rate"] == 1.0  # the per-query errors stay readable
    assert run.verdict == EvaluationRun.Verdict.FAIL
    assert run.notifications.filter(channel="email").count() == 1  # a failing run is told


def test_it_gates_against_the_promoted_baseline(finished: RunFactory, stub: StubServer, rita: User) -> None:
    baseline_run = finished()
    baseline = baseline_promote(run=baseline_run, by=rita, rationale="first good run")
    # The billing queries (odd ids) lose their grade-3 document.
    for i in (1, 3, 5):
        stub.on(f"query {i}", hits_reply(["d3", "d2", "d9"]))

    run = finished()

    assert run.baseline == baseline
    assert run.verdict == EvaluationRun.Verdict.FAIL
    assert run.gate is not None
    assert run.gate["baseline_run"] == baseline_run.pk
    assert {loser["id"] for loser in run.gate["top_losers"]} == {"q-1", "q-3", "q-5"}
    failing = {(f["scope"], f["metric"]) for f in run.gate["failures"]}
    assert ("core", "ndcg") in failing


def test_it_uses_the_golden_sets_budgets_per_stratum(
    finished: RunFactory, stub: StubServer, rita: User, golden_set: GoldenSet
) -> None:
    baseline_promote(run=finished(), by=rita, rationale="floor")
    stub.on("query 1", hits_reply(["d2", "d1", "d3"]))  # a small billing drop
    budgets_set(
        golden_set=golden_set,
        data={
            "ndcg": {"warn": 0.5, "fail": 0.9},
            "strata": {"billing": {"ndcg": {"warn": 0.01, "fail": 0.02}}},
        },
        by=rita,
    )

    run = finished()

    assert run.verdict == EvaluationRun.Verdict.FAIL
    assert run.gate is not None
    assert [(f["scope"], f["metric"]) for f in run.gate["failures"]] == [("stratum billing", "ndcg")]


def test_a_redelivered_chunk_searches_only_what_has_no_result(
    version: GoldenVersion, target: SearchTarget, stub: StubServer, rita: User
) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)
    plan = run_begin(run_id=run.pk)
    assert plan is not None and plan.chunks == [[f"q-{i}" for i in range(1, 7)]]
    QueryRunResult.objects.create(run=run, query_id="q-3", ids=["d7"])

    first = run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0])
    again = run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0])

    assert "query 3" not in [r.key for r in stub.requests]
    assert len(stub.requests) == 5
    assert (first.written, first.skipped, first.complete) == (5, 1, True)
    assert (again.written, again.skipped) == (0, 6)
    assert QueryRunResult.objects.filter(run=run).count() == 6
    assert QueryRunResult.objects.get(run=run, query_id="q-3").ids == ["d7"]  # the first write stands


def test_finalize_waits_for_missing_results_and_runs_once(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)
    plan = run_begin(run_id=run.pk)
    assert plan is not None
    run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0][:3])

    assert run_finalize_process(run_id=run.pk) == "waiting"
    run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0][3:])
    assert run_finalize_process(run_id=run.pk) == "finalized"
    assert run_finalize_process(run_id=run.pk) == "skipped"
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED


def test_a_cancelled_run_is_not_started_searched_or_finalized(
    version: GoldenVersion, target: SearchTarget, stub: StubServer, rita: User
) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)

    assert run_cancel(run=run, by=rita) is True
    assert run.status == Status.CANCELLED
    assert run.error_message == "cancelled by rita"
    assert run_begin(run_id=run.pk) is None
    outcome = run_chunk_process(run_id=run.pk, query_ids=["q-1"])
    assert outcome.stopped and outcome.written == 0
    assert run_finalize_process(run_id=run.pk) == "skipped"
    assert stub.requests == []
    assert run_cancel(run=run, by=rita) is False  # already final


def test_cancel_during_finalize_wins(version: GoldenVersion, target: SearchTarget, rita: User) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)
    plan = run_begin(run_id=run.pk)
    assert plan is not None
    run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0])
    EvaluationRun.objects.filter(pk=run.pk).update(status=Status.FINALIZING)
    run_cancel(run=run, by=rita)

    assert run_finalize_process(run_id=run.pk) == "skipped"
    run.refresh_from_db()
    assert run.status == Status.CANCELLED and run.report is None


def test_a_missing_secret_becomes_each_querys_error(
    finished: RunFactory, stub: StubServer, golden_set: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSAY_SECRET_TEST_SEARCH_TOKEN", raising=False)
    factories.grant_secrets(golden_set, "ASSAY_SECRET_TEST_SEARCH_TOKEN")
    secret = make_target(
        f"{stub.url}/search",
        golden_set,
        name="secret",
        headers={"Authorization": {"env": "ASSAY_SECRET_TEST_SEARCH_TOKEN"}},
    )

    run = finished(target=secret)

    assert run.errors == 6
    assert stub.requests == []
    error = QueryRunResult.objects.filter(run=run).values_list("error", flat=True).first()
    assert error is not None and "ASSAY_SECRET_TEST_SEARCH_TOKEN is not set" in error
    assert run.verdict == EvaluationRun.Verdict.FAIL


def test_a_secret_header_is_read_from_the_environment_at_call_time(
    finished: RunFactory, stub: StubServer, golden_set: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    factories.grant_secrets(golden_set, "ASSAY_SECRET_TEST_SEARCH_TOKEN")
    secret = make_target(
        f"{stub.url}/search",
        golden_set,
        name="secret",
        headers={"Authorization": {"env": "ASSAY_SECRET_TEST_SEARCH_TOKEN"}},
        cache_bypass_header="Cache-Control: no-cache",
    )
    monkeypatch.setenv("ASSAY_SECRET_TEST_SEARCH_TOKEN", "Bearer s3cr3t")

    run = finished(target=secret)

    assert {r.headers["authorization"] for r in stub.requests} == {"Bearer s3cr3t"}
    assert {r.headers["cache-control"] for r in stub.requests} == {"no-cache"}
    assert "s3cr3t" not in str(run.target_snapshot) + str(run.report)
    assert run.report is not None and run.report["run"]["header_names"] == ["Authorization", "Cache-Control"]


def test_run_params_override_target_stages(
    finished: RunFactory, stub: StubServer, golden_set: GoldenSet
) -> None:
    staged = make_target(
        f"{stub.url}/search", golden_set, name="staged", stages={"rewrite": False}, params={"mode": "x"}
    )

    run = finished(target=staged, params={"rewrite": True})

    assert run.effective_params == {"mode": "x", "rewrite": True}
    assert {(r.json["rewrite"], r.json["mode"]) for r in stub.requests} == {(True, "x")}


def test_it_refuses_a_target_not_set_up_for_the_golden_set(
    version: GoldenVersion, stub: StubServer, rita: User
) -> None:
    other = SearchTarget.objects.create(name="other", url=f"{stub.url}/search")

    with pytest.raises(RunError, match="not set up for golden set help-center"):
        run_create(golden_version=version, target=other, triggered_by=rita)
    assert not EvaluationRun.objects.exists()


def test_a_target_saved_with_a_line_break_in_a_header_is_refused_at_the_start_not_mid_run(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    # A row saved before the rule (the form refuses it now): the run started and every call failed in the
    # HTTP client; now the start says why and nothing is created.
    SearchTarget.objects.filter(pk=target.pk).update(cache_bypass_header="X-Bypass: 1\r\nX-Injected: evil")
    target.refresh_from_db()
    with pytest.raises(RunError) as error:
        run_create(golden_version=version, target=target, triggered_by=rita)
    assert "cache_bypass_header: a header value cannot contain a line break" in str(error.value)
    assert not EvaluationRun.objects.exists()


def test_it_refuses_params_that_clash_with_the_request(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    with pytest.raises(RunError) as error:
        run_create(
            golden_version=version, target=target, triggered_by=rita, params={"q": "x", "n": float("nan")}
        )

    assert "params.n: expected a JSON value" in str(error.value)
    assert not EvaluationRun.objects.exists()


def test_it_records_the_index_generation_and_model_id_the_engine_reported(
    finished: RunFactory, stub: StubServer, golden_set: GoldenSet
) -> None:
    marked = make_target(
        f"{stub.url}/search",
        golden_set,
        name="marked",
        generation_header="X-Index-Generation",
        model_id_field="meta.model",
    )
    stub.default = Reply(
        json={"hits": [{"id": "d1"}], "meta": {"model": "e5-small"}}, headers={"X-Index-Generation": "g41"}
    )
    stub.on(
        "query 6",
        Reply(
            json={"hits": [{"id": "d1"}], "meta": {"model": "e5-small"}},
            headers={"X-Index-Generation": "g42"},
        ),
    )

    run = finished(target=marked)

    rows = QueryRunResult.objects.filter(run=run)
    assert {(r.index_generation, r.model_id) for r in rows if r.query_id != "q-6"} == {("g41", "e5-small")}
    assert run.report is not None
    assert run.report["run"]["index_generations"] == ["g41", "g42"]
    assert run.report["run"]["index_moved"] is True  # the index changed under the run
    assert run.report["run"]["model_ids"] == ["e5-small"]


def test_a_start_that_dies_after_its_claim_leaves_the_run_queued(
    version: GoldenVersion, target: SearchTarget, rita: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    import golden_io.selectors

    run = run_create(golden_version=version, target=target, triggered_by=rita)

    def dies(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("worker lost")

    monkeypatch.setattr(golden_io.selectors, "live_keys", dies)
    with pytest.raises(RuntimeError):
        run_begin(run_id=run.pk)
    run.refresh_from_db()
    assert (run.status, run.started_at, run.total) == (Status.QUEUED, None, 0)

    monkeypatch.undo()
    plan = run_begin(run_id=run.pk)
    run.refresh_from_db()
    assert plan is not None and run.status == Status.RUNNING and run.total == 6
