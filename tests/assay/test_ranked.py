"""The two ways of matching a run to a golden file's judgments agree: a TREC run's columns matched in bulk
(`match_table`) and the same lists read line by line and matched a list at a time (`match_results`), on
random runs with ties, unknown topics, golden queries the run lacks and documents nobody judged; and so
do the artifacts built from them."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.golden.columns import GoldenColumns
from assay.golden.format import from_dict
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.golden.trec import read_run, read_run_table
from assay.ranked import Matched, match_results, match_table
from assay.report import build_report
from assay.results import QueryResult

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DOCS = [f"d{i}" for i in range(12)]


@st.composite
def cases(draw: st.DrawFn) -> tuple[GoldenColumns, str]:
    qids = draw(st.lists(st.sampled_from([f"q{i}" for i in range(8)]), min_size=1, max_size=6, unique=True))
    queries = [
        {
            "id": qid,
            "text": f"text {qid}",
            "judgments": [
                {"doc_id": doc, "grade": draw(st.integers(0, 3))}
                for doc in draw(st.lists(st.sampled_from(DOCS), max_size=6, unique=True))
            ],
        }
        for qid in qids
    ]
    golden = from_dict({"version": "v1", "k": draw(st.integers(1, 5)), "queries": queries})
    topics = draw(
        st.lists(st.sampled_from([f"q{i}" for i in range(10)]), min_size=1, max_size=6, unique=True)
    )
    lines = []
    for topic in topics:
        for rank, doc in enumerate(
            draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=9, unique=True))
        ):
            score = draw(st.sampled_from(["1", "2", "0.5", "-1", str(10 - rank)]))
            lines.append(f"{topic} Q0 {doc} {rank + 1} {score} run-a\n")
    if draw(st.booleans()):
        lines = draw(st.permutations(lines))
    return GoldenColumns.from_file(golden), "".join(lines)


def _same(a: Matched, b: Matched) -> None:
    assert a.n.tolist() == b.n.tolist()
    assert a.errors == b.errors
    assert a.top_ids == b.top_ids
    assert a.grades.tolist() == b.grades.tolist()
    assert a.first_rank.tolist() == b.first_rank.tolist()
    assert a.unknown == b.unknown
    assert (a.repeats is None or not a.repeats.any()) and (b.repeats is None or not b.repeats.any())


@SETTINGS
@given(cases())
def test_matching_a_run_table_equals_matching_its_lists_one_by_one(case: tuple[GoldenColumns, str]) -> None:
    golden, text = case
    table = read_run_table(text.encode("ascii"))
    assert table is not None
    lists = read_run(text)
    by_lists = match_results(golden, {qid: QueryResult(qid, ids) for qid, ids in lists.items()})
    _same(match_table(golden, table), by_lists)


@SETTINGS
@given(cases())
def test_the_artifact_from_a_run_table_is_the_artifact_from_its_lists(
    case: tuple[GoldenColumns, str],
) -> None:
    golden, text = case
    table = read_run_table(text.encode("ascii"))
    assert table is not None
    results = {qid: QueryResult(qid, ids) for qid, ids in read_run(text).items()}
    known = {q.id for q in golden.queries}
    unknown = [qid for qid in results if qid not in known]
    scored = {qid: r for qid, r in results.items() if qid in known}
    expected: dict[str, Any] = build_report(golden.to_file(), scored, extra_queries=unknown)
    for compact in (False, True):
        expected = build_report(golden.to_file(), scored, extra_queries=unknown, compact_ranks=compact)
        assert build_report(golden, match_table(golden, table), compact_ranks=compact) == expected


def test_repeats_and_errors_reach_the_matched_lists() -> None:
    golden = GoldenColumns.from_file(
        from_dict(
            {
                "version": "v1",
                "k": 3,
                "queries": [
                    {
                        "id": "a",
                        "text": "a",
                        "judgments": [{"doc_id": "x", "grade": 3}, {"doc_id": "y", "grade": 1}],
                    },
                    {"id": "b", "text": "b"},
                ],
            }
        )
    )
    matched = match_results(
        golden, {"a": QueryResult("a", ("x", "x", "z", "y")), "b": QueryResult("b", error="boom")}
    )
    assert matched.n.tolist() == [4, 0]
    assert matched.errors == [None, "boom"]
    assert matched.top_ids == [["x", "x", "z"], []]
    assert matched.first_rank.tolist() == [1, 4]  # y is at 4, past k, still ranked
    assert matched.repeats is not None and matched.repeats[:, 0].tolist() == [False, True, False]
    assert np.array_equal(matched.grades[:, 0], [3, 3, np.iinfo(np.int64).min])


def _matched_one_by_one(golden: GoldenColumns, results: dict[str, QueryResult]) -> Matched:
    """`match_results` as first written, each list's grades and first ranks looked up a list at a time
    (except that a doc id judged twice gives both judgments its rank: that code failed on it)."""
    from assay.metrics import first_ranks, top_grades

    k = golden.k
    answers = [results.get(q.id) or QueryResult(query_id=q.id) for q in golden.queries]
    ranked = [a.ids if a.ok else () for a in answers]
    ends = golden.bounds.tolist()
    grades = golden.grades.tolist()
    judgments = [
        dict(zip(golden.doc_ids[start:end], grades[start:end], strict=True)) for start, end in pairwise(ends)
    ]
    top, repeats = top_grades(judgments, ranked, k)
    first_rank = np.zeros(len(golden.doc_ids), dtype=np.int64)
    for start, end, ids in zip(ends, ends[1:], ranked, strict=False):
        if ids and end > start:
            ranks = first_ranks(ids, golden.doc_ids[start:end])
            first_rank[start:end] = [ranks[doc] or 0 for doc in golden.doc_ids[start:end]]
    return Matched(
        n=np.array([len(ids) for ids in ranked], dtype=np.int64),
        errors=[a.error for a in answers],
        top_ids=[list(ids[:k]) for ids in ranked],
        grades=top,
        repeats=repeats,
        first_rank=first_rank,
        titles=None,
        unknown=[qid for qid in results if qid not in {q.id for q in golden.queries}],
    )


@SETTINGS
@given(st.data())
def test_matching_every_list_at_once_equals_matching_them_one_by_one(data: st.DataObject) -> None:
    """Lists longer than k, repeats, errors, absent and unknown queries, and (in a golden object built in
    code, never a valid file) a doc id judged twice in a query: the bulk match gives what a list at a
    time gives, twice over the same golden object (the second time from its cached lookups)."""
    draw = data.draw
    queries = [
        GoldenQuery(
            id=f"q{i}",
            text="t",
            judgments=tuple(
                Judgment(doc, draw(st.integers(0, 3)))
                for doc in draw(st.lists(st.sampled_from(DOCS), max_size=6))
            ),
        )
        for i in range(draw(st.integers(0, 6)))
    ]
    golden = GoldenColumns.from_file(
        GoldenFile(version="v", queries=tuple(queries), k=draw(st.integers(1, 4)))
    )
    results: dict[str, QueryResult] = {}
    for qid in draw(st.lists(st.sampled_from([f"q{i}" for i in range(8)]), unique=True)):
        if draw(st.integers(0, 5)) == 0:
            results[qid] = QueryResult(qid, error="HTTP 503")
        else:
            results[qid] = QueryResult(qid, tuple(draw(st.lists(st.sampled_from(DOCS), max_size=9))))
    expected = _matched_one_by_one(golden, results)
    for _ in range(2):
        matched = match_results(golden, results)
        assert matched.n.tolist() == expected.n.tolist()
        assert matched.errors == expected.errors
        assert matched.top_ids == expected.top_ids
        assert matched.grades.tolist() == expected.grades.tolist()
        assert matched.first_rank.tolist() == expected.first_rank.tolist()
        assert matched.unknown == expected.unknown
        assert (matched.repeats is None) == (expected.repeats is None)
        if matched.repeats is not None and expected.repeats is not None:
            assert matched.repeats.tolist() == expected.repeats.tolist()
