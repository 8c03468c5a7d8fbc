"""The gate's rules that hold whatever the means say (pure): errors on either side above
`max_error_rate` fail (below it, a warning naming the queries), a critical query out of its top ranks
fails (a warning at a rank the noise floor's A/A runs reached by moving alone:
`NoiseFloor.critical_reach`), and a hit on an expected-empty query warns (fails when it is critical).
docs/metrics.md, "The drift gate", items 4 to 6. Each adds its findings to the comparison's
(`assay.gate_findings.Findings`); `assay.gate.compare` runs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from assay.budgets import Budgets
from assay.changes import TOLERANCE, QueryColumns
from assay.display import counted
from assay.gate_findings import Finding, Findings
from assay.metric_table import BY_KEY
from assay.noise_format import CriticalReach


def _value(agg: Mapping[str, Any] | None, metric: str) -> float | None:
    if not agg or not isinstance(agg.get(metric), Mapping):
        return None
    value = agg[metric].get("value")
    return float(value) if value is not None else None


def check_errors(gate: Findings, report: Mapping[str, Any], role: str, budgets: Budgets) -> None:
    # Over every query of the report, whatever its tier, on both sides: an errored query means that run did
    # not see the engine's answer, so its change is unknown. Above max_error_rate the gate fails closed
    # (even on a rebaseline); any error at all is a warning naming the queries.
    rate = _value(report["all"], "error_rate")
    if rate is None or rate <= TOLERANCE:
        return
    errors = report.get("flags", {}).get("errors", [])
    ids = [e.get("id") for e in errors if isinstance(e, Mapping)]
    shown = ", ".join(str(i) for i in ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    over = rate > budgets.max_error_rate + TOLERANCE
    message = (
        f"{role} error rate {BY_KEY['error_rate'].format(rate)} over all "
        f"{report['all'].get('n_queries', '?')} queries (every tier) is "
        + (
            f"above max_error_rate {budgets.max_error_rate}"
            if over
            else f"within max_error_rate {budgets.max_error_rate}"
        )
        + (f"; failed: {shown}" if ids else "")
        + ("" if role == "current" else "; these queries are left out of every change")
    )
    finding = Finding("errors", message, "all" if role == "current" else "baseline", "error_rate")
    (gate.failures if over else gate.warnings).append(finding)


def check_unexpected_hits(gate: Findings, current: Mapping[str, Any], columns: QueryColumns) -> None:
    # A query expected to return nothing that returned something (the report's flags.unexpected_hits): a
    # warning, a failure when the query is critical.
    hits = current.get("flags", {}).get("unexpected_hits", [])
    rows = dict(zip(columns.ids, columns.rows, strict=True)) if hits else {}
    for query_id in hits if isinstance(hits, list) else []:
        row = rows.get(query_id, {})
        critical = bool(row.get("critical"))
        n = row.get("n")
        returned = counted(n, "result") if type(n) is int else "? results"
        finding = Finding(
            "unexpected_hit",
            f"expected-empty query {query_id} returned {returned}"
            + (" and is critical" if critical else "")
            + (f": {', '.join(str(i) for i in (row.get('ids') or [])[:3])}" if row.get("ids") else ""),
            f"query {query_id}",
            "empty_rate",
        )
        (gate.failures if critical else gate.warnings).append(finding)


def check_critical(
    gate: Findings, current: Mapping[str, Any], columns: QueryColumns, budgets: Budgets
) -> None:
    # Judged on the rank the report recorded, against the budgets' critical_rank; a rebaseline does not
    # excuse a critical query (the rule holds "whatever the means say"). A critical expected-empty query
    # must return nothing instead: that is `check_unexpected_hits`. Out of its top ranks at a rank the
    # noise floor's A/A runs reached by moving alone, it is a warning (docs/metrics.md, "The drift gate",
    # item 6).
    expect_empty = {columns.ids[i] for i in np.flatnonzero(columns.expect_empty).tolist()}
    top = budgets.critical_rank
    for entry in current["critical"]:
        if entry["id"] in expect_empty:
            continue
        rank = entry.get("rank")
        if rank is not None and rank <= top:
            continue
        docs = ", ".join(str(d) for d in entry.get("best_docs") or []) or "no positively graded document"
        where = f"at rank {rank}" if rank is not None else "not returned"
        head = (
            f"critical query {entry['id']}: best document ({docs}, grade {entry.get('best_grade')}) {where}"
        )
        scope = f"query {entry['id']}"
        reach = gate.noise_floor.critical_reach(entry["id"], top) if gate.noise_floor is not None else None
        if reach is not None and reach.reaches(rank):
            gate.warnings.append(
                Finding(
                    "critical",
                    f"{head}, outside the top {top} within the A/A runs' reach ({_seen(reach)}): the engine "
                    "is not deterministic for it; re-run, or make it deterministic",
                    scope,
                )
            )
            continue
        past = f"; past the A/A runs' reach ({_seen(reach)})" if reach is not None else ""
        gate.failures.append(Finding("critical", f"{head}, must be within the top {top}{past}", scope))


def _seen(reach: CriticalReach) -> str:
    """The A/A runs' ranks of a critical query and how deep they changed any list, in a finding's words."""
    ranks = ", ".join("not returned" if rank is None else str(rank) for rank in reach.ranks)
    deepest = reach.deepest_change
    return f"its ranks there {ranks}" + (f"; lists changed down to rank {deepest}" if deepest else "")
