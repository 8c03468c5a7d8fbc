"""The gate reads each report's per-query rows once, as columns (`assay.changes.QueryColumns`): its pairs,
its checks of the rows and its top losers are the ones the row-by-row definitions give, for rows of every
shape (fields missing, null, of odd types, ids repeated)."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

import assay.gate_losers as gate_losers
from assay.changes import QueryColumns, ReportPairs, pair_scope, per_query_value
from assay.gate import ArtifactError, validate_artifact
from assay.metric_table import BY_KEY, METRIC_KEYS
from tests.assay.finalize_fixture import problems_checking_every_row, seeded_run

_MISSING = object()
_CHOICES: dict[str, tuple[Any, ...]] = {
    "ndcg": (_MISSING, None, 0.0, -0.0, 0.5, 1, True, float("nan")),
    "mrr": (_MISSING, None, 0.25, 1.0, 0),
    "p_at_k": (_MISSING, None, 0.1, 0.3),
    "judged_at_k": (_MISSING, None, 0.0, 1.0),
    "empty": (_MISSING, None, True, False, 1),
    "lt3": (_MISSING, None, True, False),
    "error": (_MISSING, None, None, None, "HTTP 500"),
    "expect_empty": (_MISSING, None, True, False, False, 1, ""),
    "tier": (_MISSING, "core", "core", "shadow", None),
    "weight": (_MISSING, None, 0, -0.0, 1.0, 2.5, True, float("nan"), "2", ""),
    "stratum": (_MISSING, None, "billing", "docs", 3),
    "traffic_band": (_MISSING, "head", "tail"),
}


def _rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    rows = []
    for _ in range(n):
        row: dict[str, Any] = {"id": f"q{rng.randrange(12)}"}  # ids repeat, within and across reports
        for key, choices in _CHOICES.items():
            value = rng.choice(choices)
            if value is not _MISSING:
                row[key] = value
        rows.append(row)
    return rows


def _by_rows(
    current: list[dict[str, Any]], baseline: list[dict[str, Any]], in_scope: Callable[[Any], bool]
) -> tuple[dict[str, list[tuple[float, float, float]]], dict[str, list[str]]]:
    """The pairs and what is left out, row by row from the definitions (`per_query_value`)."""
    before = {row["id"]: row for row in baseline}
    now_ids = {row["id"] for row in current}
    left: dict[str, list[str]] = {
        "errored_baseline": [],
        "errored_current": [],
        "errored_both": [],
        "new": [],
        "retired": [row["id"] for row in baseline if row["id"] not in now_ids and in_scope(row)],
    }
    pairs: dict[str, list[tuple[float, float, float]]] = {key: [] for key in METRIC_KEYS}
    for now in current:
        if not in_scope(now):
            continue
        then = before.get(now["id"])
        if then is None:
            left["new"].append(now["id"])
            continue
        errored = (now.get("error") is not None, then.get("error") is not None)
        reason = {
            (True, True): "errored_both",
            (False, True): "errored_baseline",
            (True, False): "errored_current",
        }
        if errored in reason:
            left[reason[errored]].append(now["id"])
        weight = float(now.get("weight", 1.0) or 0.0)
        for key in METRIC_KEYS:
            was, is_ = per_query_value(then, BY_KEY[key]), per_query_value(now, BY_KEY[key])
            if was is not None and is_ is not None:
                pairs[key].append((was, is_, weight))
    return pairs, left


def _in_slice(field: str, name: str) -> Callable[[Mapping[str, Any]], bool]:
    return lambda row: (
        str(row.get("tier", "core")) == "core" and row.get(field) is not None and str(row[field]) == name
    )


@pytest.mark.parametrize("seed", range(40))
def test_every_scope_pairs_what_the_row_by_row_definition_pairs(seed: int) -> None:
    rng = random.Random(seed)
    current, baseline = _rows(rng, rng.randrange(0, 30)), _rows(rng, rng.randrange(0, 30))
    if seed % 5 == 0:
        baseline = current  # a report against itself
    now = QueryColumns(current)
    then = now if baseline is current else QueryColumns(baseline)
    matched = ReportPairs(now, then)
    scopes: list[tuple[Callable[[Any], bool], Any]] = [
        (lambda row: True, (np.ones(len(current), bool), np.ones(len(baseline), bool))),
        (
            lambda row: str(row.get("tier", "core")) == "core",
            (now.where("tier", "core", "core"), then.where("tier", "core", "core")),
        ),
    ]
    for field, name in (("stratum", "billing"), ("stratum", "3"), ("traffic_band", "head")):
        masks = (
            now.where("tier", "core", "core") & now.where(field, name),
            then.where("tier", "core", "core") & then.where(field, name),
        )
        scopes.append((_in_slice(field, name), masks))
    for in_scope, (in_now, in_then) in scopes:
        expected, left = _by_rows(current, baseline, in_scope)
        for found in (
            pair_scope(current, baseline, in_scope, METRIC_KEYS),
            matched.scope(in_now, in_then, METRIC_KEYS),
        ):
            assert found.left_out.to_dict() == left
            for key in METRIC_KEYS:
                want = np.array(expected[key], dtype=np.float64).reshape(-1, 3)
                got = np.asarray(found.pairs[key])
                assert got.shape == want.shape, key
                assert got.tobytes() == want.tobytes(), key  # the same bits: -0.0 and NaN alike


_BAD: tuple[object, ...] = (
    None,
    True,
    False,
    0,
    -1,
    -0.5,
    -0.0,
    2.5,
    10**400,  # a number (an integer too large for a float)
    -(10**400),
    float("nan"),
    float("-inf"),
    "x",
    "",
    [],
    ["d1"],
    {},
    {"d1": "x"},
    {"d1": None},
    {"d1": True},
    {"d1": 1.5},
    {"d1": 2},
)


def test_the_column_checks_find_what_checking_every_row_finds() -> None:
    _, report, _, _ = seeded_run(30, 7)
    rng = random.Random(11)
    keys = sorted({key for row in report["per_query"] for key in row} | {"ndcg", "ranks", "grades"})
    for trial in range(400):
        broken = copy.deepcopy(report)
        rows = broken["per_query"]
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(rows))
            draw = rng.random()
            if draw < 0.05:
                rows[at] = rng.choice(([], "q", {"ndcg": 0.5}, {"id": 3}))  # not an object with a string id
            elif draw < 0.15:
                rows[at].pop(rng.choice(keys), None)
            else:
                rows[at][rng.choice(keys)] = copy.deepcopy(rng.choice(_BAD))
        try:
            validate_artifact(broken, "current")
            found: list[str] = []
        except ArtifactError as error:
            found = error.problems
        assert found == problems_checking_every_row(broken), trial


def test_an_integer_too_large_for_a_float_is_a_number() -> None:
    _, report, _, _ = seeded_run(5, 1)
    report["per_query"][2]["mrr"] = 10**400
    report["per_query"][3]["weight"] = 10**400
    validate_artifact(report, "current")
    report["per_query"][4]["weight"] = -(10**400)
    with pytest.raises(ArtifactError) as caught:
        validate_artifact(report, "current")
    assert caught.value.problems == ["current: per_query[4].weight: expected a non-negative number, got int"]


def test_rows_not_in_a_list_are_one_problem() -> None:
    _, report, _, _ = seeded_run(5, 1)
    for value in ({"a": 1}, "rows", None):
        report["per_query"] = value
        with pytest.raises(ArtifactError) as caught:
            validate_artifact(report, "current")
        assert [p for p in caught.value.problems if "per_query" in p] == [
            f"current: per_query: expected a list, got {value!r}"
        ]
    del report["per_query"]
    with pytest.raises(ArtifactError, match="current: per_query: missing"):
        validate_artifact(report, "current")


@pytest.mark.parametrize("seed", range(30))
def test_the_top_losers_are_the_row_by_row_ones(seed: int) -> None:
    rng = random.Random(seed)
    # Few distinct values: many drops tie, and the ties go by id.
    ndcgs = (None, 0.0, 0.25, 0.5, 0.75, 1.0, 1 / 3)
    current = [{"id": f"q{rng.randrange(40)}", "ndcg": rng.choice(ndcgs)} for _ in range(rng.randrange(60))]
    baseline = [{"id": f"q{rng.randrange(40)}", "ndcg": rng.choice(ndcgs)} for _ in range(rng.randrange(60))]
    matched = ReportPairs(QueryColumns(current), QueryColumns(baseline))
    paired = np.flatnonzero(matched.match >= 0).tolist()
    for top_n in (0, 1, 3, 10, 100):
        assert gate_losers.top_losers(matched, top_n) == gate_losers._plain_top_losers(matched, paired, top_n)
