"""The gate's top losers (pure): the queries whose nDCG dropped most between the baseline and the current
report, each with its documents' grades and ranks on both sides, the best graded first. Taken over the
pairs every scope of the gate uses (`assay.changes.ReportPairs`); `assay.gate.compare` lists them beside
the verdict, never in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from assay.changes import ReportPairs
from assay.golden.format import natural_key


def top_losers(pairs: ReportPairs, top_n: int) -> list[dict[str, Any]]:
    """The `top_n` queries whose nDCG dropped most (ties by id), each row paired as every scope pairs it.
    The drops are taken over numpy's arrays and only the few that may be shown sorted, by the very key
    (and figures) the rows' own numbers give: a drop of two floats is the same IEEE subtraction either way;
    integer nDCGs (hand-made reports) go the plain way, their drop staying an integer."""
    now, then = pairs.current, pairs.baseline
    at = np.flatnonzero(pairs.match >= 0)
    if top_n <= 0 or int in set(map(type, now.field("ndcg"))) | set(map(type, then.field("ndcg"))):
        return _plain_top_losers(pairs, at.tolist(), top_n)
    now_ndcg, now_has = now.numbers("ndcg")
    then_ndcg, then_has = then.numbers("ndcg")
    match = pairs.match[at]
    scored = now_has[at] & then_has[match]
    at, match = at[scored], match[scored]
    drops = then_ndcg[match] - now_ndcg[at]
    losing = drops > 0
    if losing.sum() > top_n:  # only drops at least the top_n-th largest (with its ties) can be shown
        found = drops[losing]
        losing &= drops >= np.partition(found, found.size - top_n)[found.size - top_n]
    shown = at[losing].tolist()
    losers = sorted(
        zip(
            (-drops[losing]).tolist(), [now.ids[i] for i in shown], shown, match[losing].tolist(), strict=True
        ),
        key=lambda loser: (loser[0], loser[1]),
    )
    return [_loser(now.rows[i], then.rows[j], -drop) for drop, _, i, j in losers[:top_n]]


def _plain_top_losers(pairs: ReportPairs, paired: list[int], top_n: int) -> list[dict[str, Any]]:
    losers: list[tuple[float, str, Mapping[str, Any], Mapping[str, Any]]] = []
    match = pairs.match.tolist()
    for i in paired:
        now, then = pairs.current.rows[i], pairs.baseline.rows[match[i]]
        if now.get("ndcg") is None or then.get("ndcg") is None:
            continue
        drop = then["ndcg"] - now["ndcg"]
        if drop > 0:
            losers.append((-drop, now["id"], now, then))
    # Only the shown losers get their documents listed (sorting every loser's documents is the slow part).
    losers.sort(key=lambda loser: (loser[0], loser[1]))
    return [_loser(now, then, -drop) for drop, _, now, then in losers[:top_n]]


def _loser(now: Mapping[str, Any], then: Mapping[str, Any], drop: float) -> dict[str, Any]:
    """One of the top losers: its nDCG drop and its documents, the best graded first."""
    ranks_now, ranks_then = now.get("ranks") or {}, then.get("ranks") or {}
    grades = {**(then.get("grades") or {}), **(now.get("grades") or {})}
    docs = sorted(set(ranks_now) | set(ranks_then), key=lambda d: (-(grades.get(d) or 0), natural_key(d)))
    return {
        "id": now["id"],
        "text": now.get("text", then.get("text")),
        "stratum": now.get("stratum"),
        "tier": now.get("tier"),
        "baseline_ndcg": then["ndcg"],
        "current_ndcg": now["ndcg"],
        "drop": drop,
        "documents": [
            {
                "doc_id": d,
                "grade": grades.get(d),
                "baseline_rank": ranks_then.get(d),
                "current_rank": ranks_now.get(d),
            }
            for d in docs
        ],
    }
