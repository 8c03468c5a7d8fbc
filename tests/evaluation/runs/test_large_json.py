"""The report-sized JSON columns (evaluation/fields.py `LargeJSONField`: a run's report, gate and key map,
a re-scored baseline's report): every value comes back as `json.loads` reads what `json.dumps` wrote, the
migration to them keeps the values, a run's result rows read as written, and finalize reads a baseline's
report once. Run this module with DATABASE_URL=sqlite:///... as well (docs/deployment.md, "SQLite or
PostgreSQL")."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from assay.results import QueryResult
from evaluation.fields import LargeJSONField, large_json_write
from evaluation.models import Baseline, BaselineRescore, EvaluationRun, QueryRunResult, SearchTarget
from evaluation.runs import selectors
from evaluation.runs.services.finalize import run_finalize_process
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.runs import make_version

pytestmark = pytest.mark.django_db

FLOATS = [0.1 + 0.2, 1e-300, 5e-324, 1.7976931348623157e308, -0.0, 1e16, 1e22, 123456.789, 2.5, -1.5e-7]
DOCUMENT: dict[str, Any] = {
    # Keys in no sorted order: they come back in the order written.
    "zeta": 'é ü 日本語 😀 \u2028 tab\t newline\n quote" backslash\\ </script>',
    "alpha": FLOATS,
    "ints": [0, -1, 2**63 - 1, -(2**63), 2**64 - 1],
    "big ints": [2**64, 2**70, -(2**80), 10**30],
    "none": None,
    "bools": [True, False],
    "nested": {"a": [{"b": [[], {}, [[None]]]}], "": ""},
    "k": 10,
}


def _same(read: Any, written: Any) -> None:
    """Equal as `json.loads(json.dumps(written))` reads, to the float's bit and the keys' order."""
    expected = json.loads(json.dumps(written))
    assert read == expected
    assert json.dumps(read) == json.dumps(expected)  # -0.0 stays -0.0, keys stay in their order


@pytest.fixture
def run(golden_set: GoldenSet, rita: User) -> EvaluationRun:
    target = SearchTarget.objects.create(name="t", url="http://127.0.0.1:9/search")
    return EvaluationRun.objects.create(
        golden_version=make_version(golden_set), target=target, triggered_by=rita
    )


def test_every_json_value_comes_back_as_json_loads_reads_json_dumps(run: EvaluationRun) -> None:
    run.report, run.gate, run.key_map = DOCUMENT, {"notes": [DOCUMENT]}, {"key:d1": "d1", "ключ": "文書"}
    run.save(update_fields=["report", "gate", "key_map"])
    fresh = EvaluationRun.objects.get(pk=run.pk)
    _same(fresh.report, DOCUMENT)
    _same(fresh.gate, {"notes": [DOCUMENT]})
    _same(fresh.key_map, {"key:d1": "d1", "ключ": "文書"})
    assert [math.copysign(1, f) for f in fresh.report["alpha"]] == [math.copysign(1, f) for f in FLOATS]
    assert all(type(i) is int for i in fresh.report["big ints"])
    # The other ways of reading and writing: values(), update(), a key's value, NULL.
    EvaluationRun.objects.filter(pk=run.pk).update(gate=[DOCUMENT, 1, "s"])
    _same(EvaluationRun.objects.values_list("gate", flat=True).get(pk=run.pk), [DOCUMENT, 1, "s"])
    assert EvaluationRun.objects.values_list("report__k", "report__nested__a").get(pk=run.pk) == (
        10,
        [{"b": [[], {}, [[None]]]}],
    )
    EvaluationRun.objects.filter(pk=run.pk).update(report=None)
    assert EvaluationRun.objects.get(pk=run.pk).report is None
    assert not EvaluationRun.objects.filter(pk=run.pk, report__isnull=False).exists()


@pytest.mark.parametrize(
    "value",
    [
        {1: "one", 2.5: "two and a half", None: "none", False: "false"},  # keys written as json.dumps does
        {"x": np.float64(0.1), "y": [np.float64(-2.5)]},  # a float subclass: orjson refuses it
        {"big": 2**70, "keys": {3: 2**65}},  # beyond 64 bits and a key that is not a string
        {"lone": "\ud800"},  # a lone surrogate, which only json.dumps writes (as an escape)
        "a string",
        [],
        12,
    ],
)
def test_what_orjson_refuses_is_written_by_json_dumps(run: EvaluationRun, value: Any) -> None:
    BaselineRescore.objects.create(source_run=run, golden_version=run.golden_version, report=value)
    _same(BaselineRescore.objects.get(source_run=run).report, value)


def test_what_json_dumps_refuses_is_refused(run: EvaluationRun) -> None:
    from datetime import UTC, datetime

    run.report = {"when": datetime.now(UTC)}
    with pytest.raises(TypeError):
        run.save(update_fields=["report"])


@pytest.mark.parametrize(
    "report",
    [
        DOCUMENT,
        {"lone": "\ud800", "big": 2**70, 1: "one"},
        None,
        [{"per_query": [{"id": "q1", "ndcg": 0.5}]}],
    ],
)
def test_large_json_write_writes_what_save_writes(run: EvaluationRun, report: Any) -> None:
    run.verdict = "pass"  # not among the fields written: stays as stored
    run.report, run.gate = report, {"notes": ["n"], "x": 1.5}
    large_json_write(run, ["report", "gate"])
    fresh = EvaluationRun.objects.get(pk=run.pk)
    _same(fresh.report, report)
    _same(fresh.gate, {"notes": ["n"], "x": 1.5})
    assert fresh.verdict == EvaluationRun.objects.model._meta.get_field("verdict").get_default()


def test_large_json_write_refuses_other_fields(run: EvaluationRun) -> None:
    with pytest.raises(ValueError, match="not all LargeJSONFields"):
        large_json_write(run, ["report", "verdict"])


def test_large_json_write_is_part_of_the_callers_transaction(run: EvaluationRun) -> None:
    run.report = {"kept": True}
    run.save(update_fields=["report"])
    with pytest.raises(RuntimeError), transaction.atomic():
        run.report = {"kept": False}
        large_json_write(run, ["report"])
        assert EvaluationRun.objects.get(pk=run.pk).report == {"kept": False}  # seen inside it
        raise RuntimeError("rolled back")
    assert EvaluationRun.objects.get(pk=run.pk).report == {"kept": True}


# --- reading runs and baselines


def test_run_results_reads_each_row_as_it_was_written(run: EvaluationRun) -> None:
    rows = [
        QueryRunResult(run=run, query_id="q-1", ids=["d1", "d2"], titles=["Été", "😀"], latency_ms=1.5),
        QueryRunResult(run=run, query_id="q-2", error="HTTP 503", http_status=503, attempts=3),
        QueryRunResult(
            run=run, query_id="q-3", ids=[], index_generation="g7", model_id="m1", http_status=200
        ),
    ]
    QueryRunResult.objects.bulk_create(rows)
    assert selectors.run_results(run=run) == {
        "q-1": QueryResult("q-1", ("d1", "d2"), latency_ms=1.5, titles=("Été", "😀")),
        "q-2": QueryResult("q-2", error="HTTP 503", status=503, attempts=3),
        "q-3": QueryResult("q-3", (), status=200, index_generation="g7", model_id="m1"),
    }


def _report_reads(queries: list[dict[str, str]]) -> int:
    """How many of the queries read a run's report (the column in their select list)."""
    return sum('"evaluation_evaluationrun"."report"' in q["sql"].split(" FROM ")[0] for q in queries)


def test_a_baseline_is_read_without_its_report_until_the_report_is_used(
    run: EvaluationRun, golden_set: GoldenSet, rita: User
) -> None:
    finished = {"status": EvaluationRun.Status.SUCCEEDED, "report": {"per_query": []}}
    EvaluationRun.objects.filter(pk=run.pk).update(**finished)
    again = EvaluationRun.objects.create(
        golden_version=run.golden_version, target=run.target, triggered_by=rita, **finished
    )
    Baseline.objects.create(
        golden_set=golden_set, target=run.target, run=run, approved_by=rita, rationale="r"
    )
    with CaptureQueriesContext(connection) as reading:
        baseline = selectors.baseline_get(golden_set=golden_set, target=run.target)
        assert baseline is not None
        assert [b.run_id for b in selectors.baseline_list(golden_set=golden_set)] == [run.pk]
        assert [b.run_id for b in selectors.baselines_in_force(golden_set=golden_set)] == [run.pk]
    assert _report_reads(reading.captured_queries) == 0
    # The noise floor reads each run's report once: the baseline's (among its runs) and the other's.
    with CaptureQueriesContext(connection) as measuring:
        assert {r.pk for r in selectors.noise_runs(baseline=baseline)} == {run.pk, again.pk}
        assert baseline.run.report == {"per_query": []}
    assert _report_reads(measuring.captured_queries) == 2


def test_finalize_reads_the_baselines_report_once(
    finished: Any, golden_set: GoldenSet, rita: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = finished()
    assert first.status == EvaluationRun.Status.SUCCEEDED and first.errors == 0  # among its noise runs
    Baseline.objects.create(
        golden_set=golden_set, target=first.target, run=first, approved_by=rita, rationale="r"
    )
    second = finished()
    EvaluationRun.objects.filter(pk=second.pk).update(status=EvaluationRun.Status.RUNNING, report=None)
    read: list[int | None] = []
    parse = LargeJSONField.from_db_value

    def counted(field: LargeJSONField, value: Any, expression: Any, conn: Any) -> Any:
        parsed = parse(field, value, expression, conn)
        if field.name == "report" and isinstance(parsed, dict):
            read.append(parsed["run"]["run_id"])
        return parsed

    monkeypatch.setattr(LargeJSONField, "from_db_value", counted)
    assert run_finalize_process(run_id=second.pk) == "finalized"
    assert read == [first.pk]
    second.refresh_from_db()
    assert second.gate["baseline_run"] == first.pk


# --- the migration


def _migrate(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


def _column(table: str, column: str) -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT format_type(atttypid, atttypmod), attcompression FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attname = %s",
            [table, column],
        )
        return cursor.fetchone()


def _lz4_server() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
    return row is not None and "lz4" in row[0]


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_every_report(golden_set: GoldenSet, rita: User) -> None:
    version: GoldenVersion = make_version(golden_set)
    target = SearchTarget.objects.create(name="t", url="http://127.0.0.1:9/search")
    kept = {**DOCUMENT, "per_query": [{"id": f"q-{i}", "ndcg": i / 7} for i in range(2000)]}
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        old = _migrate([("evaluation", "0014_pending_studies")])
        OldRun = old.get_model("evaluation", "EvaluationRun")
        run = OldRun.objects.create(
            golden_version_id=version.pk,
            target_id=target.pk,
            report=kept,
            gate={"notes": []},
            key_map={"a": "b"},
        )
        empty = OldRun.objects.create(golden_version_id=version.pk, target_id=target.pk)
        old.get_model("evaluation", "BaselineRescore").objects.create(
            source_run_id=run.pk, golden_version_id=version.pk, report=kept
        )
        # As jsonb holds it: a float written 1e+16 reads back as the integer 10000000000000000.
        held = OldRun.objects.get(pk=run.pk).report
    finally:
        _migrate(latest)
    fresh = EvaluationRun.objects.get(pk=run.pk)
    _same(fresh.report, held)
    assert fresh.gate == {"notes": []} and fresh.key_map == {"a": "b"}
    assert EvaluationRun.objects.get(pk=empty.pk).report is None
    _same(BaselineRescore.objects.get(source_run_id=run.pk).report, held)
    if connection.vendor == "postgresql":
        compression = "l" if _lz4_server() else ""
        for table, column in [
            ("evaluation_evaluationrun", "report"),
            ("evaluation_evaluationrun", "gate"),
            ("evaluation_evaluationrun", "key_map"),
            ("evaluation_baselinerescore", "report"),
        ]:
            assert _column(table, column) == ("json", compression)
        if compression:  # the values kept were compressed with it as they were rewritten
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_column_compression(report) FROM evaluation_evaluationrun WHERE id = %s",
                    [run.pk],
                )
                assert cursor.fetchone() == ("lz4",)
