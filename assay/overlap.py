"""How much two result lists overlap (pure): Jaccard@k and rank-biased overlap, per query and as a mean
over queries with its bootstrap interval.

docs/metrics.md, "Overlap", is the specification; in short:

- each list is first read as its distinct ids in the order of their first occurrence (a repeated id counts
  at its first place only, and what follows moves up one place), then cut at k;
- **Jaccard@k** = |A ∩ B| / |A ∪ B| of the two top-k sets;
- **RBO** is the extrapolated rank-biased overlap of Webber, Moffat and Zobel (2010), eq. 32, which takes
  lists of different lengths: with the shorter list S of length s, the longer L of length l, X_d the
  number of ids the two lists' first d places share (for d > s, S whole against L's first d) and
  persistence p (0.9 by default),
  RBO = (1 - p) / p · (Σ_{d=1..l} X_d / d · p^d + Σ_{d=s+1..l} X_s · (d - s) / (s · d) · p^d)
        + ((X_l - X_s) / l + X_s / s) · p^l;
- two empty lists are identical (both 1.0); one empty list against a non-empty one shares nothing (both
  0.0); identical lists give exactly 1.0 and are flagged `identical` (a list that is a prefix of the other
  also has RBO 1.0, the extrapolation's assumption, but is not identical: its Jaccard@k says so);
- the mean over queries carries the percentile bootstrap interval every other mean of Assay carries
  (`assay.report.bootstrap_interval`: 1,000 resamples of the queries, `assay.resampling`).

Lists come from stored results as plain sequences of ids: ties were broken before they were stored (a
TREC run's by trec_eval's rule, docs/metrics.md), so a list here has no ties, only its order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from assay.display import counted
from assay.metric_table import format_number
from assay.report import bootstrap_intervals
from assay.resampling import DEFAULT_SEED

DEFAULT_P = 0.9
# Where docs/metrics.md states the formulas (the pages link to it beside each figure).
DOC_SECTION = "Overlap"


class OverlapError(ValueError):
    """A persistence outside (0, 1) or a cutoff below 1: the message names it."""


def _checked_p(p: float) -> float:
    if not (isinstance(p, int | float) and not isinstance(p, bool) and 0.0 < p < 1.0):
        raise OverlapError(f"p (the persistence of rank-biased overlap) must be between 0 and 1, got {p!r}")
    return float(p)


def _checked_k(k: int) -> int:
    if not (isinstance(k, int) and not isinstance(k, bool) and k >= 1):
        raise OverlapError(f"k (the depth compared) must be a whole number of at least 1, got {k!r}")
    return k


def distinct(ids: Iterable[str]) -> list[str]:
    """The ids in the order of their first occurrence: a repeat counts at its first place only."""
    return list(dict.fromkeys(ids))


def jaccard_at_k(a: Sequence[str], b: Sequence[str], k: int) -> float:
    """|A ∩ B| / |A ∪ B| of the two lists' first k distinct ids; 1.0 when both are empty."""
    _checked_k(k)
    top_a, top_b = set(distinct(a)[:k]), set(distinct(b)[:k])
    union = len(top_a | top_b)
    return 1.0 if union == 0 else len(top_a & top_b) / union


def _rbo_ext(a: list[str], b: list[str], p: float) -> float:
    """Eq. 32 of Webber, Moffat and Zobel (2010) on two lists of distinct ids, neither empty."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    s, l = len(short), len(long)  # noqa: E741  (the paper's names)
    seen_short: set[str] = set()
    seen_long: set[str] = set()
    shared = 0  # X_d
    total = 0.0  # the bracket of eq. 32
    weight = 1.0  # p^d
    for d in range(1, s + 1):
        mine, theirs = short[d - 1], long[d - 1]
        if mine == theirs:
            shared += 1
        else:
            shared += (mine in seen_long) + (theirs in seen_short)
        seen_short.add(mine)
        seen_long.add(theirs)
        weight *= p
        total += shared / d * weight
    at_s = shared  # X_s: the shorter list is exhausted from here on
    for d in range(s + 1, l + 1):
        shared += long[d - 1] in seen_short
        weight *= p
        total += shared / d * weight + at_s * (d - s) / (s * d) * weight
    found = (1.0 - p) / p * total + ((shared - at_s) / l + at_s / s) * weight
    return min(1.0, max(0.0, found))  # float noise only: the formula lies within [0, 1]


def rbo_ext(a: Sequence[str], b: Sequence[str], p: float = DEFAULT_P) -> float:
    """Extrapolated rank-biased overlap of two lists (each read as its distinct ids), at persistence p:
    1.0 for identical lists (both empty included), 0.0 when one is empty and the other not."""
    p = _checked_p(p)
    first, second = distinct(a), distinct(b)
    if first == second:
        return 1.0
    if not first or not second:
        return 0.0
    return _rbo_ext(first, second, p)


def top_weight(p: float, depth: int) -> float:
    """The share of RBO's weight on the first `depth` places at persistence p (the paper's eq. 21): 0.86
    for p = 0.9 and depth 10, what the pages say beside the figure."""
    p = _checked_p(p)
    _checked_k(depth)
    tail = sum(p**i / i for i in range(1, depth))
    return 1.0 - p ** (depth - 1) + (1.0 - p) / p * depth * (math.log(1.0 / (1.0 - p)) - tail)


@dataclass(frozen=True, slots=True)
class Overlap:
    """One query's two lists compared: Jaccard@k, RBO, and whether the top-k lists are identical."""

    jaccard: float
    rbo: float
    identical: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_IDENTICAL, _DISJOINT = Overlap(1.0, 1.0, True), Overlap(0.0, 0.0, False)


def _overlap(a: Sequence[str], b: Sequence[str], k: int, p: float) -> Overlap:
    """`overlap` with k and p checked by the caller (a summary checks them once for every query)."""
    if a == b:  # most queries of two runs of one system: no list to read
        return _IDENTICAL
    first, second = distinct(a)[:k], distinct(b)[:k]
    if first == second:
        return _IDENTICAL
    if not first or not second:
        return _DISJOINT
    top_a, top_b = set(first), set(second)
    shared = len(top_a & top_b)
    if not shared:
        return _DISJOINT
    return Overlap(shared / len(top_a | top_b), _rbo_ext(first, second, p), False)


def overlap(a: Sequence[str], b: Sequence[str], *, k: int, p: float = DEFAULT_P) -> Overlap:
    """Both figures for one query, on each list's first k distinct ids (module docstring)."""
    return _overlap(a, b, _checked_k(k), _checked_p(p))


@dataclass(frozen=True, slots=True)
class OverlapSummary:
    """Every query's overlap (in the order given) and the means over them with their intervals."""

    k: int
    p: float
    per_query: list[tuple[str, Overlap]]
    jaccard: dict[str, Any]  # `assay.report.bootstrap_interval`: mean, low, high, level, resamples, seed, n
    rbo: dict[str, Any]

    @property
    def n(self) -> int:
        return len(self.per_query)

    @property
    def identical(self) -> int:
        return sum(1 for _, o in self.per_query if o.identical)

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        """The summary as stored and served (docs/metrics.md, "Overlap"); each query's figures only when
        asked for (a report's gate keeps the means)."""
        data: dict[str, Any] = {
            "k": self.k,
            "p": self.p,
            "n": self.n,
            "identical": self.identical,
            "jaccard": self.jaccard,
            "rbo": self.rbo,
        }
        if per_query:
            data["per_query"] = [{"id": qid, **o.to_dict()} for qid, o in self.per_query]
        return data


def summarize(
    pairs: Iterable[tuple[str, Sequence[str], Sequence[str]]],
    *,
    k: int,
    p: float = DEFAULT_P,
    seed: int = DEFAULT_SEED,
) -> OverlapSummary:
    """Each (query id, list A, list B) compared, and the means of Jaccard@k and RBO over the queries with
    their percentile bootstrap intervals (the same draws for both: one seed, one size)."""
    k, p = _checked_k(k), _checked_p(p)
    per_query = [(qid, _overlap(a, b, k, p)) for qid, a, b in pairs]
    jaccard, rbo = bootstrap_intervals(
        [[o.jaccard for _, o in per_query], [o.rbo for _, o in per_query]], seed=seed
    )
    return OverlapSummary(k=k, p=p, per_query=per_query, jaccard=jaccard, rbo=rbo)


def _answered_ids(row: Mapping[str, Any]) -> list[str] | None:
    """A report row's returned top k (ids are strings in a valid report), or None when the query errored
    or the row keeps no list."""
    ids = row.get("ids")
    if row.get("error") is not None or not isinstance(ids, list):
        return None
    return ids


def report_pairs(
    current: Mapping[str, Any], baseline: Mapping[str, Any]
) -> list[tuple[str, list[str], list[str]]]:
    """(query id, baseline's list, current's list) of every query both reports answered (errored in
    neither, each row keeping its list), in the current report's order."""
    then: dict[str, list[str]] = {}
    for row in baseline.get("per_query") or []:
        found = _answered_ids(row)
        if found is not None:
            then[row.get("id")] = found
    pairs = []
    for row in current.get("per_query") or []:
        qid, now = row.get("id"), _answered_ids(row)
        if now is not None and qid in then:
            pairs.append((qid, then[qid], now))
    return pairs


def report_overlap(
    current: Mapping[str, Any], baseline: Mapping[str, Any], *, p: float = DEFAULT_P, seed: int = DEFAULT_SEED
) -> OverlapSummary | None:
    """The overlap of two reports' lists (`report_pairs`) at the current report's k, or None when no query
    has a list on both sides."""
    pairs = report_pairs(current, baseline)
    if not pairs:
        return None
    return summarize(pairs, k=int(current["k"]), p=p, seed=seed)


def formula_text(k: int, p: float) -> str:
    """The two figures' names as every page and log states them: the depth, the formula and p."""
    return f"Jaccard@{k} and RBO (extrapolated, eq. 32 of Webber et al. 2010, p = {p:g})"


def _mean_text(figure: Mapping[str, Any]) -> str:
    low, high = figure.get("low"), figure.get("high")
    shown = format_number(figure.get("mean"))
    return shown if low is None else f"{shown} [{format_number(low)}, {format_number(high)}]"


def describe(summary: Mapping[str, Any], against: str = "the baseline") -> str:
    """One sentence of a stored summary (`OverlapSummary.to_dict`): the gate's log and pull-request
    comment, the pages' notes."""
    k, p, n = summary["k"], summary["p"], summary["n"]
    jaccard, rbo = summary["jaccard"], summary["rbo"]
    return (
        f"Overlap with {against} ({formula_text(k, p)}, means with 95% intervals over "
        f"{counted(n, 'query', 'queries')} both answered): Jaccard@{k} {_mean_text(jaccard)}, "
        f"RBO {_mean_text(rbo)}; {summary['identical']} identical"
    )
