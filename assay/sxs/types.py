"""The side-by-side study's inputs (one query, one answer), its rule, the preference scale and the reason
tags, and the refusal of bad input (docs/sxs.md, "Analysis" and "Verdict").

Part of `assay.sxs`, which is the public API: import from there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from assay.labels.agreement_types import AgreementInputError

# The seven-point preference in the candidate's favour, with the sides undone: -3 the baseline much better,
# 0 the same, +3 the candidate much better. The app stores answers as shown (left/right) and turns them.
PREFERENCE_SCALE = (-3, -2, -1, 0, 1, 2, 3)
REASONS = ("relevance", "snippet", "duplicates", "surface", "missing", "freshness", "other")
# The words shown to raters beside each tag.
REASON_LABELS: dict[str, str] = {
    "relevance": "relevance at the top",
    "snippet": "titles and snippets",
    "duplicates": "duplicates or near-duplicates",
    "surface": "presentation of the results",
    "missing": "an expected result is missing",
    "freshness": "freshness (outdated results)",
    "other": "something else (see the note)",
}


class SxsInputError(AgreementInputError):
    """Every problem in the analysis' input at once, each naming its place (`answers[3].preference: ...`)."""


@dataclass(frozen=True, slots=True)
class SxsQuery:
    """One query of the study. `ndcg_change` is the candidate's nDCG@k minus the baseline's for this query
    (None when unknown); an `identical` query (both lists the same in the shown top) is not asked."""

    query_id: str
    stratum: str = ""
    critical: bool = False
    ndcg_change: float | None = None
    identical: bool = False


@dataclass(frozen=True, slots=True)
class SxsAnswer:
    """One rater's answer on one query, sides undone: `preference` is in the candidate's favour and
    `candidate_left` says where the candidate was shown (only the position bias reads it)."""

    query_id: str
    rater: str
    preference: int
    candidate_left: bool
    reasons: tuple[str, ...] = ()
    junk_baseline: bool = False
    junk_candidate: bool = False


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def rule_errors(min_lower: object, critical_junk_fails: object, min_queries: object) -> dict[str, str]:
    """What is wrong with these rule settings, by field (empty when nothing is)."""
    errors: dict[str, str] = {}
    low, high = PREFERENCE_SCALE[0], PREFERENCE_SCALE[-1]
    if not _is_number(min_lower):
        errors["min_lower"] = f"{min_lower!r} must be a number"
    elif not low <= float(min_lower) <= high:  # type: ignore[arg-type]
        errors["min_lower"] = f"{min_lower!r} must be between {low} and {high} (the preference scale)"
    if not isinstance(critical_junk_fails, bool):
        errors["critical_junk_fails"] = f"{critical_junk_fails!r} must be true or false"
    if type(min_queries) is not int or min_queries < 1:
        errors["min_queries"] = f"{min_queries!r} must be a whole number of at least 1"
    return errors


@dataclass(frozen=True, slots=True)
class SxsRule:
    """When a study passes (docs/sxs.md, "Verdict"): the 95% interval's lower bound of the mean preference
    is at least `min_lower`, no critical query has junk flagged in the candidate's top three (when
    `critical_junk_fails`), and at least min(`min_queries`, queries asked) queries are fully answered."""

    min_lower: float = -0.25
    critical_junk_fails: bool = True
    min_queries: int = 20

    def __post_init__(self) -> None:
        errors = rule_errors(self.min_lower, self.critical_junk_fails, self.min_queries)
        if errors:
            raise ValueError("; ".join(f"{name}: {message}" for name, message in errors.items()))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: object) -> SxsRule:
        """The rule a stored or posted mapping describes; a missing field takes its default. Raises
        ValueError naming every unknown field and every bad value."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a rule must be a mapping of its fields, not {type(data).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(str(k) for k in data if k not in known)
        values = {name: data.get(name, getattr(cls(), name)) for name in known}
        problems = [f"{name}: unknown field (the fields are {', '.join(known)})" for name in unknown]
        problems += [f"{name}: {message}" for name, message in rule_errors(**values).items()]
        if problems:
            raise ValueError("; ".join(problems))
        return cls(**values)
