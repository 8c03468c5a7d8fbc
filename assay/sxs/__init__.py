"""Side-by-side (SxS) studies: the analysis of raters' preferences between two result lists (pure: numpy and
the standard library only; scipy and the krippendorff package are the tests' oracles, never imported here).

Raters see a baseline's and a candidate's lists for one query, blind, the sides drawn per rater and query,
and answer a seven-point preference, reason tags and a junk-in-the-top-three flag per side. The app
stores the answers as shown and hands them over here with the sides undone (`SxsAnswer.preference` in
the candidate's favour). `analyse` returns every figure and the verdict under an `SxsRule`;
`SxsAnalysis.to_dict()` is what the app stores and the API returns. Definitions and formulas:
docs/sxs.md, "Analysis" and "Verdict".

The code, by part (their names re-exported here, the public API; import from here): `types` (the inputs,
the rule, the scale and the tags), `checks` (the refusal of bad input), `stats` (Wilson's interval, the
sign and signed-rank tests), `analysis`, `results` (the result's dataclasses), `verdict` (with how many
more queries would likely decide an inconclusive study), `planning` (the interval a size will likely
give, before a study is made) and `names` (the name raters read for a study).
"""

from __future__ import annotations

from assay.sxs.analysis import PREFERENCE_MIN, analyse
from assay.sxs.names import dated_name, rater_name_default, rater_name_problem
from assay.sxs.planning import DEFAULT_SPREAD, Expectation, expect, pooled_spread
from assay.sxs.results import (
    ANALYSIS_VERSION,
    Agreement,
    MoreQueries,
    OfflineRow,
    Position,
    RaterPosition,
    Summary,
    SxsAnalysis,
    Verdict,
)
from assay.sxs.stats import sign_test_p, wilcoxon_p, wilson_interval
from assay.sxs.types import (
    PREFERENCE_SCALE,
    REASON_LABELS,
    REASONS,
    SxsAnswer,
    SxsInputError,
    SxsQuery,
    SxsRule,
)

__all__ = [
    "ANALYSIS_VERSION",
    "DEFAULT_SPREAD",
    "PREFERENCE_MIN",
    "PREFERENCE_SCALE",
    "REASONS",
    "REASON_LABELS",
    "Agreement",
    "Expectation",
    "MoreQueries",
    "OfflineRow",
    "Position",
    "RaterPosition",
    "Summary",
    "SxsAnalysis",
    "SxsAnswer",
    "SxsInputError",
    "SxsQuery",
    "SxsRule",
    "Verdict",
    "analyse",
    "dated_name",
    "expect",
    "pooled_spread",
    "rater_name_default",
    "rater_name_problem",
    "sign_test_p",
    "wilcoxon_p",
    "wilson_interval",
]
