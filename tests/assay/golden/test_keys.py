"""Durable key resolution (pure): renumbered ids resolve, missing keys are listed, nothing vanishes."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from assay.golden.fields import natural_key
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


def _reference(
    golden: GoldenFile, live: dict[str, str]
) -> tuple[tuple[GoldenQuery, ...], list[Any], list[Any]]:
    """`resolve_keys` as first written: every query walked, its judgments re-sorted, the lists sorted."""

    owner = {doc_id: key for key, doc_id in live.items()}
    unresolved: list[Any] = []
    remapped: list[Any] = []
    queries = []
    for query in golden.queries:
        resolved: dict[str, Judgment] = {}
        plain: list[Judgment] = []
        for j in query.judgments:
            if j.key is not None and j.key in live:
                if live[j.key] != j.doc_id:
                    remapped.append((query.id, j.key, j.doc_id, live[j.key]))
                resolved[live[j.key]] = replace(j, doc_id=live[j.key])
            elif j.key is not None and owner.get(j.doc_id, j.key) != j.key:
                unresolved.append((query.id, j.key, j.doc_id, j.grade, False, ID_TAKEN))
            else:
                if j.key is not None:
                    unresolved.append((query.id, j.key, j.doc_id, j.grade, True, MISSING))
                plain.append(j)
        out = list(resolved.values())
        for j in plain:
            if j.doc_id in resolved:
                unresolved.append((query.id, j.key, j.doc_id, j.grade, False, COLLISION))
            else:
                out.append(j)
        out.sort(key=lambda j: natural_key(j.doc_id))
        queries.append(replace(query, judgments=tuple(out)))
    unresolved.sort(key=lambda u: (natural_key(u[0]), natural_key(u[2])))
    remapped.sort(key=lambda r: (natural_key(r[0]), natural_key(r[2])))
    return tuple(queries), unresolved, remapped


@pytest.mark.parametrize("seed", range(40))
def test_it_gives_what_walking_every_query_gives(seed: int) -> None:
    """Only the queries a map can change are worked out (the others are kept as they are): random files
    (keyed or not, ids in natural order or not, an id twice) and maps (none, each key to its own id,
    renumbered, partial, ids taken) resolve as the walk over every query resolves them."""

    rng = random.Random(seed)
    docs = [f"d{i}" for i in (1, 2, 3, 9, 10, 11, 20, 100)] + ["a", "a1", "a01", "b-2"]
    keyed = rng.random() < 0.7
    queries = []
    for i in range(rng.randint(0, 30)):
        chosen = rng.sample(docs, rng.randint(0, 5))
        if rng.random() < 0.05 and chosen:
            chosen.append(chosen[0])  # an id twice
        if rng.random() < 0.7:
            chosen.sort(key=natural_key)
        queries.append(
            _q(
                f"q-{i}",
                *(
                    Judgment(d, rng.randint(0, 3), key=f"k:{d}" if keyed and rng.random() < 0.8 else None)
                    for d in chosen
                ),
            )
        )
    golden = _golden(*queries)
    keys = [f"k:{d}" for d in docs]
    maps: list[dict[str, str]] = [{}, {key: key[2:] for key in keys}]
    renumbered = dict(zip(keys, rng.sample([*docs, "x1", "x2", "x3"], len(keys)), strict=True))
    maps.append(renumbered)
    maps.append({key: renumbered[key] for key in rng.sample(keys, 6)})
    for live in maps:
        for _ in range(2):  # the second time from what the first one worked out
            out = resolve_keys(golden, live)
            queries_ref, unresolved_ref, remapped_ref = _reference(golden, live)
            assert out.golden.queries == queries_ref
            assert [
                (u.query_id, u.key, u.doc_id, u.grade, u.kept, u.reason) for u in out.unresolved
            ] == unresolved_ref
            assert [(r.query_id, r.key, r.old_doc_id, r.new_doc_id) for r in out.remapped] == remapped_ref
            if out.golden.queries == golden.queries:
                assert out.golden is golden
