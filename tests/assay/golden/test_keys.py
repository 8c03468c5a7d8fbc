"""Durable key resolution (pure): renumbered ids resolve, missing keys are listed, nothing vanishes."""

from __future__ import annotations

import pytest

from assay.golden.keys import COLLISION, ID_TAKEN, MISSING, resolve_keys
from assay.golden.model import GoldenFile, GoldenQuery, Judgment


def _golden(*queries: GoldenQuery) -> GoldenFile:
    return GoldenFile(version="2026-08-01", queries=queries)


def _q(qid: str, *judgments: Judgment) -> GoldenQuery:
    return GoldenQuery(id=qid, text=f"text of {qid}", judgments=judgments)


def test_it_resolves_keys_to_renumbered_ids() -> None:
    golden = _golden(
        _q(
            "q-1",
            Judgment("101", 3, key="https://h/a"),
            Judgment("102", 0, key="https://h/b"),
        )
    )
    # A re-ingest renumbered every document: 101 -> 9001, 102 -> 9002.
    out = resolve_keys(golden, {"https://h/a": "9001", "https://h/b": "9002"})

    assert out.golden.query("q-1").grades == {"9001": 3, "9002": 0}
    assert [(r.key, r.old_doc_id, r.new_doc_id) for r in out.remapped] == [
        ("https://h/a", "101", "9001"),
        ("https://h/b", "102", "9002"),
    ]
    assert out.unresolved == ()
    # Keys travel with the judgments so the next resolution still works.
    assert {j.key for j in out.golden.query("q-1").judgments} == {"https://h/a", "https://h/b"}


def test_it_keeps_and_lists_a_key_that_resolves_to_nothing() -> None:
    golden = _golden(
        _q("q-1", Judgment("101", 3, key="https://h/gone"), Judgment("102", 2, key="https://h/b"))
    )

    out = resolve_keys(golden, {"https://h/b": "9002"})

    assert out.golden.query("q-1").grades == {"101": 3, "9002": 2}
    [u] = out.unresolved
    assert (u.query_id, u.key, u.doc_id, u.grade, u.kept, u.reason) == (
        "q-1",
        "https://h/gone",
        "101",
        3,
        True,
        MISSING,
    )
    assert "https://h/gone" in u.detail and "101" in u.detail


def test_it_withholds_a_missing_key_whose_old_id_now_belongs_to_another_document() -> None:
    # 101 was article A; A is gone and the re-ingest gave 101 to article C. Scoring the judgment under 101
    # would grade C with A's grade: a silent remap. It is withheld and listed instead.
    golden = _golden(_q("q-1", Judgment("101", 3, key="https://h/a"), Judgment("102", 1)))

    out = resolve_keys(golden, {"https://h/c": "101"})

    assert out.golden.query("q-1").grades == {"102": 1}
    [u] = out.unresolved
    assert (u.doc_id, u.kept, u.reason) == ("101", False, ID_TAKEN)
    assert "https://h/c" in u.detail
    assert out.withheld == (u,)


def test_it_lists_an_unkeyed_judgment_displaced_by_a_resolved_one() -> None:
    golden = _golden(_q("q-1", Judgment("7", 1), Judgment("55", 3, key="https://h/a")))

    out = resolve_keys(golden, {"https://h/a": "7"})

    assert out.golden.query("q-1").grades == {"7": 3}
    [u] = out.unresolved
    assert (u.key, u.doc_id, u.grade, u.kept, u.reason) == (None, "7", 1, False, COLLISION)


def test_it_leaves_unkeyed_judgments_and_other_queries_alone() -> None:
    golden = _golden(_q("q-1", Judgment("1", 2)), _q("q-2", Judgment("2", 3, key="k2")))

    out = resolve_keys(golden, {"k2": "2"})

    assert out.golden is golden  # nothing changed: the very same object
    assert out.unresolved == () and out.remapped == ()


def test_it_orders_lists_naturally_and_sorts_judgments_by_live_id() -> None:
    golden = _golden(
        _q("q-10", Judgment("a", 1, key="ka")),
        _q("q-2", Judgment("b", 2, key="kb"), Judgment("c", 0, key="kc")),
    )

    out = resolve_keys(golden, {"kc": "doc-1"})

    assert [(u.query_id, u.doc_id) for u in out.unresolved] == [("q-2", "b"), ("q-10", "a")]
    assert [j.doc_id for j in out.golden.query("q-2").judgments] == ["b", "doc-1"]
    data = out.to_dict()
    assert data["counts"] == {"unresolved": 2, "withheld": 0, "remapped": 1}
    assert data["remapped"] == [{"query_id": "q-2", "key": "kc", "old_doc_id": "c", "new_doc_id": "doc-1"}]


def test_it_refuses_a_live_map_sending_two_keys_to_one_id() -> None:
    golden = _golden(_q("q-1", Judgment("1", 2, key="k1")))

    with pytest.raises(ValueError, match=r"live\['k2'\]: id '9' is also the live id of key 'k1'"):
        resolve_keys(golden, {"k1": "9", "k2": "9"})
    with pytest.raises(ValueError, match="non-empty strings"):
        resolve_keys(golden, {"k1": ""})
