"""Overlap as the pages show it (docs/metrics.md, "Overlap"): how much two result lists overlap, beside
every comparison of two lists (the compare page, a run's report against its baseline, a study, an
experiment), per query and as means with their intervals, with the formula and p stated
(`templates/evaluation/runs/_overlap.html`). The figures are `assay.overlap`'s; this module only finds the two
lists and formats what it computes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from assay.changes import report_seed
from assay.overlap import (
    DEFAULT_P,
    Overlap,
    OverlapSummary,
    formula_text,
    overlap,
    report_overlap,
    top_weight,
)
from evaluation.runs.models import EvaluationRun
from evaluation.runs.numbers_page import interval_text, num

_NO_LISTS = "no query has a list in both"


def runs_overlap(run_a: EvaluationRun, run_b: EvaluationRun) -> OverlapSummary | None:
    """Run B's lists against run A's, from their reports (as the gate compares a run with its baseline,
    with run B's seed); None while either has no report or no query has a list in both."""
    if not run_a.report or not run_b.report:
        return None
    return report_overlap(run_b.report, run_a.report, seed=report_seed(run_b.report))


def run_overlap(run: EvaluationRun, baseline_run: EvaluationRun | None) -> dict[str, Any] | None:
    """A run's report page: its overlap with the baseline it was gated against, as its gate stored it (a
    gate stored before the gate carried it: computed from the two reports), shown (`summary_shown`)."""
    gate = run.gate or {}
    if "overlap" in gate:
        shown = summary_shown(gate["overlap"])
    else:
        found = runs_overlap(baseline_run, run) if baseline_run is not None else None
        shown = summary_shown(found.to_dict() if found is not None else None)
    if shown is not None and baseline_run is not None:  # each query's figures: the compare page, least first
        query = urlencode({"a": baseline_run.pk, "b": run.pk, "sort": "overlap"})
        shown["link"] = f"{reverse('evaluation:run_compare')}?{query}#choices"
    return shown


def summary_shown(summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A stored summary (`OverlapSummary.to_dict`) as `_overlap.html` shows it; None for none."""
    if not summary:
        return None
    shown: dict[str, Any] = {
        **note(summary["k"], summary["p"]),
        "n": summary["n"],
        "identical": summary["identical"],
    }
    for figure in ("jaccard", "rbo"):
        data = summary[figure]
        shown[figure] = num(data.get("mean"), why=_NO_LISTS)
        shown[f"{figure}_interval"] = interval_text(data, _NO_LISTS, signed=False)
    return shown


def query_shown(found: Overlap | None) -> dict[str, Any]:
    """One query's figures as a row shows them: `identical` says so; no lists (an errored side) shows a
    dash that says why."""
    if found is None:
        missing = num(None, why="no list on one side (an error, or not in both)")
        return {"identical": False, "jaccard": missing, "rbo": missing}
    return {"identical": found.identical, "jaccard": num(found.jaccard), "rbo": num(found.rbo)}


def by_query(summary: OverlapSummary | None) -> dict[str, Overlap]:
    return dict(summary.per_query) if summary is not None else {}


def with_rbo(rows: Sequence[dict[str, Any]], found: Mapping[str, Overlap]) -> None:
    """Each row (a dict with the query id at `id`) given its query's RBO as `rbo_value` (None without
    one), for a list's sort by overlap; the page formats only the rows it shows (`query_shown`)."""
    for row in rows:
        figures = found.get(row["id"])
        row["rbo_value"] = None if figures is None else figures.rbo


def query_overlap(data: Mapping[str, Any], run_b: EvaluationRun) -> dict[str, Any]:
    """One query of the compare page (`selectors.run_compare_query`'s two ranked lists) at run B's k, with
    the formula: the figures the picker and the run page show for it."""
    lists = [[hit["doc_id"] for hit in data[side]["hits"]] for side in ("a", "b")]
    k = int((run_b.report or {}).get("k") or max(1, *map(len, lists)))
    answered = not data["a"]["error"] and not data["b"]["error"]
    shown = query_shown(overlap(lists[0], lists[1], k=k) if answered else None)
    return {**shown, "k": k, "formula": formula_text(k, DEFAULT_P)}


_NOT_RECORDED = "not recorded: the experiment concluded before overlap was"


def mean_cells(summary: Mapping[str, Any] | None, *, recorded: bool = True) -> dict[str, Any]:
    """A configuration's means against the baseline as a table's cells (`summary_shown`'s figures and
    intervals, and these in words); `recorded` False when its result predates overlap."""
    shown = summary_shown(summary)
    if shown is None:
        why = _NO_LISTS if recorded else _NOT_RECORDED
        return {"jaccard": num(None, why=why), "rbo": num(None, why=why), "words": why, "intervals": {}}
    intervals = {"jaccard": shown["jaccard_interval"], "rbo": shown["rbo_interval"]}
    words = (
        f"95% intervals: Jaccard@{shown['k']} {intervals['jaccard']}, RBO {intervals['rbo']}, over "
        f"{shown['n']} queries both answered ({shown['identical']} identical)"
    )
    return {"jaccard": shown["jaccard"], "rbo": shown["rbo"], "intervals": intervals, "words": words}


def note(k: int, p: float = DEFAULT_P) -> dict[str, Any]:
    """The formula and p as the pages state them beside the figures (`_overlap.html`, a table's note)."""
    return {"k": k, "p": p, "formula": formula_text(k, p), "top_weight": f"{top_weight(p, 10):.0%}"}
