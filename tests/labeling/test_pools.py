"""Candidate pools: union of systems' top 20 from TREC runs or live search, plus judged documents."""

from __future__ import annotations

import pytest

from labeling import services
from labeling.models import Assignment, Candidate, Document, GoldenSet, Query
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def gset() -> GoldenSet:
    gs = factories.GoldenSetFactory.create(slug="hc")
    for i in range(1, 31):
        factories.DocumentFactory.create(
            golden_set=gs, doc_id=f"d{i}", title=f"Refund article {i}", body="refund"
        )
    factories.QueryFactory.create(golden_set=gs, external_id="q1", text="refund", filters={})
    factories.QueryFactory.create(golden_set=gs, external_id="q2", text="invoice", filters={})
    return gs


def _run(rows: dict[str, list[str]], tag: str = "sys") -> bytes:
    lines = [
        f"{qid} Q0 {doc} {rank} {100 - rank} {tag}"
        for qid, docs in rows.items()
        for rank, doc in enumerate(docs, start=1)
    ]
    return "\n".join(lines).encode()


def _pool(query: str) -> dict[str, list[dict[str, object]]]:
    return {
        c.document.doc_id: c.provenance
        for c in Candidate.objects.filter(query__external_id=query).select_related("document")
    }


def test_it_pools_the_union_of_each_systems_top_20(gset: GoldenSet) -> None:
    a = _run({"q1": [f"d{i}" for i in range(1, 26)]})
    b = _run({"q1": ["d25", "d1", "d26"]})
    report_a = services.pool_import_run(golden_set=gset, data=a, source="bm25.run")
    report_b = services.pool_import_run(golden_set=gset, data=b, source="x.run", system="dense")
    assert report_a.ok and report_b.ok
    pool = _pool("q1")
    assert set(pool) == {f"d{i}" for i in range(1, 21)} | {"d25", "d26"}  # d21..d24 are below bm25's 20
    assert pool["d1"] == [{"system": "bm25", "rank": 1}, {"system": "dense", "rank": 2}]
    assert pool["d25"] == [{"system": "dense", "rank": 1}]
    assert Candidate.objects.get(query__external_id="q1", document__doc_id="d1").best_rank == 1
    assert report_b.counts["candidates added"] == 2


def test_rebuilding_a_pool_is_idempotent_and_replaces_a_systems_rank(gset: GoldenSet) -> None:
    services.pool_import_run(golden_set=gset, data=_run({"q1": ["d1", "d2"]}), source="s.run", system="s")
    again = services.pool_import_run(
        golden_set=gset, data=_run({"q1": ["d2", "d1"]}), source="s.run", system="s"
    )
    assert again.counts["candidates added"] == 0
    assert _pool("q1")["d1"] == [{"system": "s", "rank": 2}]
    assert Candidate.objects.count() == 2


def test_it_adds_documents_judged_before_to_the_pool(gset: GoldenSet) -> None:
    q1 = Query.objects.get(external_id="q1")
    judged = Document.objects.get(doc_id="d30")
    factories.FrozenLabelFactory.create(query=q1, document=judged, grade=2)
    report = services.pool_import_run(golden_set=gset, data=_run({"q1": ["d1"]}), source="s.run", system="s")
    assert report.counts["judged candidates added"] == 1
    assert _pool("q1")["d30"] == [{"system": "judged", "rank": None}]


def test_a_run_naming_unknown_documents_imports_nothing(gset: GoldenSet) -> None:
    data = _run({"q1": ["d1", "ghost"], "q-unknown": ["d2"]})
    report = services.pool_import_run(golden_set=gset, data=data, source="s.run", system="s")
    assert [str(p) for p in report.problems] == [
        "s query q1 rank 2: ghost is not a document of golden set hc (import the documents first)"
    ]
    assert "q-unknown" in report.notes[0]
    assert not Candidate.objects.exists()


def test_a_malformed_run_file_is_reported_by_line(gset: GoldenSet) -> None:
    report = services.pool_import_run(golden_set=gset, data=b"q1 Q0 d1 1 9.5 s\nq1 Q0 d2\n", source="s.run")
    assert [p.where for p in report.problems] == ["line 2"]
    assert not Candidate.objects.exists()


def test_a_grown_pool_reopens_a_finished_assignment(gset: GoldenSet, alice) -> None:
    services.pool_import_run(golden_set=gset, data=_run({"q1": ["d1"]}), source="s.run", system="s")
    assignment = factories.AssignmentFactory.create(query=Query.objects.get(external_id="q1"), rater=alice)
    candidate = Candidate.objects.get()
    services.judgment_submit(assignment_id=assignment.pk, rater=alice, candidate_id=candidate.pk, grade=2)
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.DONE
    services.candidates_add(
        query=assignment.query,
        entries=[services.PoolEntry(Document.objects.get(doc_id="d9"), "run-17", 4)],
    )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.OPEN


def test_it_pools_from_a_live_search_endpoint_through_the_harness(gset: GoldenSet, search_url: str) -> None:
    report = services.pool_fetch(golden_set=gset, url=search_url, system="live", depth=20)
    assert report.ok, report.problems
    pool = _pool("q1")
    assert len(pool) == 20  # "refund" matches all 30 documents; the top 20 are pooled
    assert all(p == [{"system": "live", "rank": p[0]["rank"]}] for p in pool.values())
    assert sorted(p[0]["rank"] for p in pool.values()) == list(range(1, 21))  # type: ignore[type-var]
    assert _pool("q2") == {}  # "invoice" matches nothing


def test_an_unreachable_search_endpoint_imports_nothing(gset: GoldenSet) -> None:
    report = services.pool_fetch(golden_set=gset, url="http://127.0.0.1:9/search", system="down")
    assert not report.ok
    assert {p.where for p in report.problems} == {"query q1", "query q2"}
    assert not Candidate.objects.exists()
