"""The drift gate's result for humans: the CI log, the pull-request comment, GitHub annotations (pure).

Numbers go through `assay.metric_table.format_number` (4 decimals, "—" for an undefined value), as on the
pages; the result itself (`assay.gate.GateResult`) is never rounded.

Every value that comes from a golden file, a report or a budgets file (a stratum, a query id or text, a
document id, a finding's message) is user text. In the CI log a line that starts with `::` is a GitHub
workflow command, so `render_text` writes user text on one line (`one_line`) and no line of it starts with
`::` (`log_line`); annotations escape it by the workflow-command rules; the markdown comment escapes
Markdown and HTML in it (`_md`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.budgets import SLICE_KEYS
from assay.changes import LeftOut
from assay.display import counted
from assay.gate import GateResult
from assay.metric_table import GATED_METRICS, LABELS, UNDEFINED, format_budget, format_number, format_p_value
from assay.overlap import describe

# Every character `str.splitlines` (and so a CI log reader) may take for the end of a line.
_LINE_BREAKS = str.maketrans(
    {c: c.encode("unicode_escape").decode() for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
)


def one_line(value: object) -> str:
    """User text on one line of the CI log: each line break written as its escape (`\\n`, `\\r`)."""
    return str(value).translate(_LINE_BREAKS)


def log_line(line: str) -> str:
    # The runner takes a line whose text, after leading blanks, starts with `::` for a workflow command
    # (the legacy `##[` form is read anywhere in a line); no line of the log may be one.
    if line.lstrip().startswith("::"):
        line = "> " + line
    return line.replace("##[", "#\u200b#[")  # a zero-width space between the two #


def _num(value: float | None, signed: bool = False) -> str:
    # Every value here is an nDCG or a metric of the comparison tables (all shown with the same decimals).
    return format_number(value, signed=signed)


def _rank(rank: int | None) -> str:
    return UNDEFINED if rank is None else str(rank)


def _brackets(interval: Mapping[str, Any] | None) -> str | None:
    """`[-0.0190, -0.0040]`: a change's interval as shown; None when it has none."""
    if not interval or interval.get("low") is None:
        return None
    return f"[{_num(interval['low'], True)}, {_num(interval['high'], True)}]"


def _interval_text(interval: Mapping[str, Any] | None) -> str | None:
    brackets = _brackets(interval)
    if interval is None or brackets is None:
        return None
    p_value = interval.get("p_value")
    return (
        f"nDCG change {_num(interval['mean'], True)}, {interval['level']:.0%} paired bootstrap interval "
        f"{brackets}"
        + (f", randomization test p={format_p_value(p_value)}" if p_value is not None else "")
        + f" over {interval['n']} core queries both reports counted"
    )


def _change_text(row: Mapping[str, Any]) -> str:
    """`0.8123 -> 0.8012 (-0.0111) [-0.0190, -0.0040] p=0.004 n=78`: one change as the gate computed it."""
    shown = f"{_num(row.get('baseline'))} -> {_num(row.get('current'))} ({_num(row.get('delta'), True)})"
    brackets = _brackets(row.get("interval"))
    if brackets:
        shown += f" {brackets}"
    if row.get("p_value") is not None:
        shown += f" p={format_p_value(row['p_value'])}"
    return shown + f" n={row.get('n', 0)}"


def _left_out_text(left_out: Mapping[str, Sequence[str]]) -> str | None:
    described = LeftOut.from_dict(left_out).describe()
    return f"Left out of every core change: {described}" if described else None


def _moved(loser: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [d for d in loser["documents"] if d["baseline_rank"] != d["current_rank"]]


def _doc_text(doc: Mapping[str, Any], quote: Callable[[object], str]) -> str:
    grade = f" (grade {doc['grade']})" if doc["grade"] is not None else ""
    return (
        f"{quote(doc['doc_id'])}{grade}: rank {_rank(doc['baseline_rank'])} -> {_rank(doc['current_rank'])}"
    )


def render_text(result: GateResult) -> str:
    """Plain text for the CI log: verdict, failures, warnings, notes, the interval, top losers."""
    ident = result.current
    lines = [
        f"Relevance gate: {result.verdict.upper()}"
        + (" (rebaseline)" if result.rebaseline else "")
        + f" — {counted(len(result.failures), 'failure')}, {counted(len(result.warnings), 'warning')}",
        f"golden {one_line(ident['golden_version'])}, k={one_line(ident['k'])}, "
        f"relevant_min_grade={one_line(ident['relevant_min_grade'])}, "
        f"metrics_spec {one_line(ident['metrics_spec'])}",
    ]
    lines += [f"FAIL  {one_line(f.message)}" for f in result.failures]
    lines += [f"WARN  {one_line(w.message)}" for w in result.warnings]
    lines += [f"note  {one_line(n)}" for n in result.notes]
    core = result.comparison.get("core", {})
    weighted = result.comparison.get("core_weighted", {})
    if core:
        lines.append(
            "Core tier (over the queries both reports counted: baseline -> current (change) "
            "[95% interval] p n; then the traffic-weighted change):"
        )
        for metric, row in core.items():
            twin = weighted.get(metric)
            lines.append(
                f"  {LABELS[metric]:<16} {_change_text(row)} {row['status']}"
                + (f" | weighted {_change_text(twin)} {twin['status']}" if twin else "")
            )
    interval = _interval_text(result.delta_interval)
    if interval:
        lines.append(interval)
    left_out = _left_out_text(result.left_out)
    if left_out:
        lines.append(one_line(left_out))
    if result.overlap:
        lines.append(describe(result.overlap))
    if result.top_losers:
        lines.append(f"Top losers ({len(result.top_losers)}):")
        for i, loser in enumerate(result.top_losers, start=1):
            where = ", ".join(one_line(x) for x in (loser["stratum"], loser["tier"]) if x)
            lines.append(
                f"  {i}. {one_line(loser['id'])} {one_line(repr(loser['text']))} ({where}): "
                f"nDCG {_num(loser['baseline_ndcg'])} -> "
                f"{_num(loser['current_ndcg'])} (-{_num(loser['drop'])})"
            )
            lines += [f"       {_doc_text(doc, one_line)}" for doc in _moved(loser)]
    return "\n".join(log_line(line) for line in lines) + "\n"


_MARKDOWN = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
    | {c: "\\" + c for c in "\\`*_[]|~"}
    | {c: " " for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
)


def _md(value: object) -> str:
    """User text in the markdown comment: one line, HTML as entities, Markdown's marks escaped."""
    return str(value).translate(_MARKDOWN)


def _status_cell(status: str) -> str:
    return {"fail": "**fail**", "warn": "warn", "pass": "ok"}.get(status, "")


def render_markdown(result: GateResult) -> str:
    """A PR comment: verdict line, core metric table with deltas, strata, shadow, top losers."""
    verdict = {"pass": "pass", "warn": "warn", "fail": "FAIL"}[result.verdict]
    ident = result.current
    out = [
        f"### Relevance gate: **{verdict}**" + (" (rebaseline)" if result.rebaseline else ""),
        "",
        f"Golden {_md(ident['golden_version'])}, k={_md(ident['k'])}, relevant grade >= "
        f"{_md(ident['relevant_min_grade'])}; {counted(len(result.failures), 'failure')}, "
        f"{counted(len(result.warnings), 'warning')}.",
        "",
    ]
    out += [f"- :x: {_md(f.message)}" for f in result.failures]
    out += [f"- :warning: {_md(w.message)}" for w in result.warnings]
    out += [f"- {_md(n)}" for n in result.notes]
    if result.failures or result.warnings or result.notes:
        out.append("")
    header = [
        "| metric | n | baseline | current | delta | 95% interval | p | budget warn / fail | status |",
        "|---|---:|---:|---:|---:|---|---:|---|---|",
    ]

    def table(rows: Mapping[str, Mapping[str, Any]], suffix: str = "") -> list[str]:
        lines = []
        for m, r in rows.items():
            shown = _brackets(r.get("interval")) or UNDEFINED
            p_value = format_p_value(r.get("p_value"))
            lines.append(
                f"| {_md(LABELS[m])}{suffix} | {r.get('n', 0)} | {_num(r['baseline'])} | "
                f"{_num(r['current'])} | "
                f"{_num(r['delta'], True)} | {shown} | {p_value} | {format_budget(r['warn'], r['fail'])} | "
                f"{_status_cell(r['status'])} |"
            )
        return lines

    if result.comparison.get("core"):
        weighted = table(result.comparison.get("core_weighted", {}), " (weighted)")
        out += ["#### Core tier", "", *header, *table(result.comparison["core"]), *weighted, ""]
        out.append(
            "Each change is over the queries both reports counted (n): the two means over them, their "
            "difference, a paired bootstrap interval and a paired randomization test's p-value; the "
            "weighted rows weight each query by its traffic."
        )
        out.append("")
    interval = _interval_text(result.delta_interval)
    if interval:
        out += [interval + ".", ""]
    left_out = _left_out_text(result.left_out)
    if left_out:
        out += [_md(left_out) + ".", ""]
    if result.overlap:
        out += [describe(result.overlap) + ' (docs/metrics.md, "Overlap").', ""]
    for key, field in SLICE_KEYS.items():
        named = result.comparison.get(key, {})
        if not named:
            continue
        title = field.replace("_", " ")
        out += [
            f"#### By {title} (core tier)",
            "",
            f"| {title} | " + " | ".join(_md(LABELS[m]) for m in GATED_METRICS) + " |",
        ]
        out.append("|---|" + "---:|" * len(GATED_METRICS))
        for name, rows in named.items():
            cells = []
            for metric in GATED_METRICS:
                row = rows[metric]
                mark = {"fail": " **fail**", "warn": " warn"}.get(row["status"], "")
                cells.append(f"{_num(row['current'])} ({_num(row['delta'], True)}){mark}")
            out.append(f"| {_md(name)} | " + " | ".join(cells) + " |")
        out.append("")
    if result.comparison.get("shadow"):
        out += [
            "#### Shadow tier (gated on empty rate only)",
            "",
            *header,
            *table(result.comparison["shadow"]),
            "",
        ]
    if result.top_losers:
        out += [
            "#### Top losers",
            "",
            "| query | text | stratum | nDCG baseline | nDCG current | drop | rank changes |",
        ]
        out.append("|---|---|---|---:|---:|---:|---|")
        for loser in result.top_losers:
            moves = "; ".join(_doc_text(d, _md) for d in _moved(loser)) or UNDEFINED
            out.append(
                f"| {_md(loser['id'])} | {_md(loser['text'])} | {_md(loser['stratum'] or '')} | "
                f"{_num(loser['baseline_ndcg'])} | {_num(loser['current_ndcg'])} | {_num(loser['drop'])} | "
                f"{moves} |"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _escape_data(text: str) -> str:
    # GitHub workflow commands: these three would end or corrupt the command.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(result: GateResult) -> list[str]:
    """`::error title=...::message` for each failure and `::warning ...` for each warning."""
    lines = []
    for command, findings in (("error", result.failures), ("warning", result.warnings)):
        for finding in findings:
            what = " ".join(x for x in (finding.scope, LABELS.get(finding.metric or "")) if x) or finding.kind
            title = f"Relevance gate — {what}"
            lines.append(f"::{command} title={_escape_property(title)}::{_escape_data(finding.message)}")
    return lines
