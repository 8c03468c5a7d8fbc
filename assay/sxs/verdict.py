"""The study's verdict under its `SxsRule`, with the sentences a reviewer reads (docs/sxs.md, "Verdict").

Part of `assay.sxs`, which is the public API: import from there.
"""

from __future__ import annotations

import math

from assay.changes import TOLERANCE
from assay.metric_table import format_number
from assay.sxs.results import MoreQueries, Summary, Verdict
from assay.sxs.types import SxsRule

# Past this many fully answered queries an inconclusive study's estimate says "more than" this: a mean that
# close to the bound (or to 0) is on it for any study people would run.
MORE_CAP = 10_000


def shown(value: float, threshold: float | None = None) -> str:
    """`value` with two decimals, more when rounding would put it on the other side of `threshold`
    (-0.2549 is "-0.2549" beside a rule's -0.25, never "-0.25", which would read as reaching it)."""
    for decimals in range(2, 17):
        text = format_number(value, decimals=decimals)
        text = text[1:] if float(text) == 0 and text.startswith("-") else text
        if threshold is None or (float(text) >= threshold) == (value >= threshold):
            return text
    return repr(value)


def threshold(value: float) -> str:
    """A rule's number as set: two decimals, or all of its digits when it has more (-0.2549, not -0.25)."""
    text = f"{value:.2f}"
    return text if float(text) == value else repr(float(value))


def _queries(ids: list[str]) -> str:
    return f"{len(ids)} critical {'query' if len(ids) == 1 else 'queries'} ({', '.join(ids)})"


def _more(n: int) -> str:
    return f"{n:,} more fully answered {'query' if n == 1 else 'queries'}"


def _scaled(queries: int, half_width: float, distance: float) -> float | None:
    """The queries at which a half-width of `half_width` over `queries` queries, scaling as 1/sqrt(n),
    shrinks to `distance`; None when there is no width to scale."""
    if half_width <= TOLERANCE:
        return None
    return queries * (half_width / distance) ** 2


def estimate(rule: SxsRule, overall: Summary, need: int) -> tuple[MoreQueries | None, str]:
    """How many more fully answered queries would likely decide an undecided study at its present mean and
    spread, and the sentence that says it (docs/sxs.md, "How many more queries would likely decide it")."""
    m, low, high = overall.mean, overall.low, overall.high
    toward: str | None = None
    at: float | None = None
    if m is not None and low is not None and high is not None:
        if m > rule.min_lower + TOLERANCE:
            toward, at = "pass", _scaled(overall.queries, m - low, m - rule.min_lower)
        elif m < -TOLERANCE:
            toward, at = "fail", _scaled(overall.queries, high - m, -m)
        else:
            return None, (
                f"the mean ({shown(m)}) sits between 0 and the rule's {threshold(rule.min_lower)}: more "
                "queries at this mean would likely not decide it"
            )
    if at is None:
        toward = None
        if overall.answered >= need:
            return None, ""
    capped = at is not None and at > MORE_CAP
    reach = 0
    if at is not None:
        # Pass needs the lower bound at the rule's (n >= at); fail the upper bound strictly below 0 (n > at).
        reach = math.floor(at) + 1 if toward == "fail" else math.ceil(at - TOLERANCE)
    total = MORE_CAP if capped else max(need, reach)
    more = MoreQueries(toward, max(1, total - overall.answered), total, capped)
    if toward is None:
        return more, (
            f"{_more(more.queries)} would reach the rule's minimum of {need};"
            " the spread is not known yet, so whether that decides it is not known either"
        )
    if capped:
        edge = "the rule's bound" if toward == "pass" else "0"
        return more, (
            f"more than {MORE_CAP:,} fully answered queries would likely be needed to decide it: the mean"
            f" ({shown(m or 0.0)}) sits almost on {edge}"
        )
    text = (
        f"about {_more(more.queries)} ({total:,} in all, at this mean and"
        f" spread) would likely decide it toward {toward}"
    )
    if total > overall.asked:
        text += f"; the study asks {overall.asked:,}, so a larger study is needed"
    return more, text


def decide(
    rule: SxsRule, overall: Summary, *, identical: int, answers_per_query: int, critical_junk: list[str]
) -> Verdict:
    """fail when the rule fails a study on junk and a critical query had junk flagged in the candidate's
    top three; else inconclusive when no query was answered or fewer than min(rule.min_queries, asked)
    are fully answered; else pass when the mean's 95% lower bound is at least rule.min_lower, fail when
    its upper bound is below 0, inconclusive otherwise, with how many more queries would likely decide
    it. Every comparison within float noise (`TOLERANCE`): a bound exactly at the rule's number passes.
    The sentences say each part, whatever the result (docs/sxs.md, "Verdict")."""
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
    passes = worse = False
    if overall.mean is not None and overall.low is not None and overall.high is not None:
        passes = overall.low >= rule.min_lower - TOLERANCE
        worse = not passes and overall.high < -TOLERANCE
        side = "at or above" if passes else "below"
        reading = f"the lower bound is {side} the rule's {threshold(rule.min_lower)}"
        if not passes:
            reading += f" and the upper bound is {'below' if worse else 'not below'} 0"
        if enough and not passes:  # with too few answers the interval reads so far, concluding nothing
            reading += (
                ": the candidate is worse" if worse else ": neither non-inferiority nor a loss is shown"
            )
        why.append(
            f"the mean preference is {shown(overall.mean)} (95% interval {shown(overall.low, rule.min_lower)}"
            f" to {shown(overall.high, 0.0)}): {reading}"
        )
    junk_fails = rule.critical_junk_fails and bool(critical_junk)
    more: MoreQueries | None = None
    if junk_fails:
        result = "fail"
    elif enough and passes:
        result = "pass"
    elif enough and worse:
        result = "fail"
    else:
        result = "inconclusive"
        if overall.asked:
            more, sentence = estimate(rule, overall, need)
            if sentence:
                why.append(sentence)
    if critical_junk:
        fails = "fails a study on it" if rule.critical_junk_fails else "does not fail on it"
        where = _queries(critical_junk)
        why.append(f"junk was flagged in the candidate's top three on {where}; the rule {fails}")
    elif rule.critical_junk_fails:
        why.append("no rater flagged junk in the candidate's top three on a critical query")
    return Verdict(result=result, why=why, rule=rule.to_dict(), more=more)
