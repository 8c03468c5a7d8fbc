"""What the compare page shows of two runs on one query (display only): the two ranked lists rank by rank
with each document's title, grade and rank in the other run, each list alone for a phone, one query's
values in each run, and the picker of run B's queries by their nDCG change
(`templates/evaluation/runs/compare.html`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.runs.models import EvaluationRun
from evaluation.runs.numbers_page import Num, delta_css, num


def compare_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rank by rank, each run's document with its title and grade."""
    a_hits, b_hits = data["a"]["hits"], data["b"]["hits"]
    moves = {d["doc_id"]: d for d in data["documents"]}
    rows = []
    for i in range(max(len(a_hits), len(b_hits))):
        row: dict[str, Any] = {"rank": i + 1}
        for side, hits in (("a", a_hits), ("b", b_hits)):
            hit = hits[i] if i < len(hits) else None
            if hit is not None:
                move = moves.get(hit["doc_id"], {})
                other = move.get("rank_b" if side == "a" else "rank_a")
                hit = {**hit, "other_rank": other}
            row[side] = hit
        rows.append(row)
    return rows


def compare_lists(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each run's list alone, from `compare_rows`: a phone shows A's, then B's
    (templates/evaluation/runs/compare.html)."""
    return {side: [row[side] for row in rows if row[side]] for side in ("a", "b")}


def query_values(row: Mapping[str, Any] | None) -> dict[str, Num]:
    """One query's nDCG, RR and P@k in one run (its per-query row of the report), for the side-by-side."""
    row = row or {}
    fields = {"ndcg": "ndcg", "mrr": "mrr", "p_at_k": "precision_at_k"}  # per-query field -> metric
    return {
        name: num(row.get(name), why="errored: no value", metric=metric) for name, metric in fields.items()
    }


def compare_choices(run_a: EvaluationRun, run_b: EvaluationRun) -> list[dict[str, Any]]:
    """The queries of run B with their nDCG in both runs, biggest loss first (the side-by-side's menu):
    the values only; `compare_choice_shown` formats the rows a page shows."""
    before = {row["id"]: row.get("ndcg") for row in (run_a.report or {}).get("per_query", [])}
    choices = []
    for row in (run_b.report or {}).get("per_query", []):
        a, b = before.get(row["id"]), row.get("ndcg")
        change = b - a if a is not None and b is not None else None
        choices.append(
            {
                "id": row["id"],
                "text": row.get("text", ""),
                "stratum": row.get("stratum") or "",
                "a_value": a,
                "b_value": b,
                "change_value": change,  # the picker's filters and sorts (evaluation.runs.list_specs)
            }
        )
    choices.sort(key=lambda c: (c["change_value"] if c["change_value"] is not None else 0.0, c["id"]))
    return choices


def compare_choice_shown(choice: dict[str, Any]) -> dict[str, Any]:
    """A picker row with its numbers as shown: nDCG in A and B and the change, each with why it is
    undefined."""
    change = choice["change_value"]
    return {
        **choice,
        "a": num(choice["a_value"], why="errored or not in run A", metric="ndcg"),
        "b": num(choice["b_value"], why="errored", metric="ndcg"),
        "change": num(
            change, signed=True, why="undefined on one side", css=delta_css("ndcg", change), metric="ndcg"
        ),
    }
