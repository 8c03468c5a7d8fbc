"""The study's verdict under its `SxsRule`, with the sentences a reviewer reads (docs/sxs.md, "Verdict").

Part of `assay.sxs`, which is the public API: import from there.
"""

from __future__ import annotations

from assay.changes import TOLERANCE
from assay.metric_table import format_number
from assay.sxs.results import Summary, Verdict
from assay.sxs.types import SxsRule


def shown(value: float, threshold: float | None = None) -> str:
    """`value` with two decimals, more when rounding would put it on the other side of `threshold`
    (-0.2549 is "-0.2549" beside a rule's -0.25, never "-0.25", which would read as reaching it)."""
    for decimals in range(2, 17):
        text = format_number(value, decimals=decimals)
        text = text[1:] if float(text) == 0 and text.startswith("-") else text
        if threshold is None or (float(text) >= threshold) == (value >= threshold):
            return text
    return repr(value)


def _queries(ids: list[str]) -> str:
    return f"{len(ids)} critical {'query' if len(ids) == 1 else 'queries'} ({', '.join(ids)})"


def decide(
    rule: SxsRule, overall: Summary, *, identical: int, answers_per_query: int, critical_junk: list[str]
) -> Verdict:
    """not_enough when fewer than min(rule.min_queries, asked) queries are fully answered, or when no
    query was answered at all; else fail when the mean's 95% lower bound is below rule.min_lower (within
    float noise, `TOLERANCE`) or, when the rule says so, a critical query had junk flagged in the
    candidate's top three; else pass. The sentences say each part, whatever the result."""
    need = min(rule.min_queries, overall.asked)
    why: list[str] = []
    enough = overall.answered >= need and overall.mean is not None
    if overall.asked == 0:
        why.append(f"no query was asked: all {identical} are identical on both sides, nothing was compared")
    elif not enough:
        why.append(
            f"{overall.answered} of {overall.asked} asked queries have all {answers_per_query} answers; the"
            f" rule needs {need} (the smaller of its {rule.min_queries} and the queries asked)"
        )
    below = False
    if overall.mean is not None and overall.low is not None and overall.high is not None:
        below = overall.low < rule.min_lower - TOLERANCE
        side = "below" if below else "at or above"
        why.append(
            f"the mean preference is {shown(overall.mean)} (95% interval {shown(overall.low, rule.min_lower)}"
            f" to {shown(overall.high)}): the lower bound is {side} the rule's {shown(rule.min_lower)}"
        )
    junk_fails = rule.critical_junk_fails and bool(critical_junk)
    if critical_junk:
        fails = "fails a study on it" if rule.critical_junk_fails else "does not fail on it"
        where = _queries(critical_junk)
        why.append(f"junk was flagged in the candidate's top three on {where}; the rule {fails}")
    elif rule.critical_junk_fails:
        why.append("no rater flagged junk in the candidate's top three on a critical query")
    if not enough:
        result = "not_enough"
    elif below or junk_fails:
        result = "fail"
    else:
        result = "pass"
    return Verdict(result=result, why=why, rule=rule.to_dict())
