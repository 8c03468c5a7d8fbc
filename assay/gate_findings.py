"""The gate's findings as one comparison gathers them (pure): `Finding` (a failure or warning: its kind,
scope, metric and sentence), each comparison row held to its budget (`Findings.row`: a budget trips AT its
threshold), and the fail-budget trips on a metric the noise floor says moves between runs, decided on
evidence over their family (`Findings.judge`: the one-sided p-value, Holm-adjusted, below `ALPHA`, and the
interval wholly on the worse side of 0; otherwise a `within_noise` warning naming n). docs/metrics.md,
"The drift gate", item 7. The comparison that fills it is `assay.gate.compare`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from assay.budgets import Budget
from assay.changes import TOLERANCE, Change
from assay.display import counted
from assay.metric_table import BY_KEY, format_p_value
from assay.noise_format import NoiseFloor
from assay.resampling import LEVEL, holm

# The chance of a false FAIL the gate allows over its family of changes on metrics that move between runs.
ALPHA = 0.05


@dataclass(frozen=True, slots=True)
class Finding:
    """One failure or warning: what kind, where (scope, metric) and a sentence for humans."""

    kind: Literal[
        "refusal", "budget", "errors", "critical", "coverage", "unexpected_hit", "noise", "within_noise"
    ]
    message: str
    scope: str | None = None
    metric: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "scope": self.scope, "metric": self.metric, "message": self.message}


def _trips(change: float, threshold: float | None) -> bool:
    return threshold is not None and change >= threshold - TOLERANCE


def _p_text(p_value: float | None) -> str:
    return "" if p_value is None else f", p={format_p_value(p_value)}"


@dataclass(slots=True)
class _Judged:
    """A change held to a fail budget on a metric that moves between runs: one of the gate's family, and,
    when it reached its budget, the finding its evidence decides."""

    row: dict[str, Any]
    scope: str
    metric: str
    worsening: float
    low: float
    high: float
    p_value: float  # two-sided
    n: int
    message: str | None = None  # the trip's message; None: within its budget
    at: tuple[int, int] = (0, 0)  # where its finding goes among the failures and the warnings, in row order


def _one_sided(judged: _Judged) -> float:
    # The sign-flip distribution of a mean change is symmetric around 0: the share of flips at least as
    # bad as a worsening is half the two-sided share (docs/metrics.md, "The drift gate", item 7).
    half = judged.p_value / 2
    return half if judged.worsening > 0 else 1.0 - half


def _where(scope: str) -> str:
    """Where to add queries, in the within-noise warning's words."""
    if scope.startswith("stratum "):
        return "this stratum"
    if scope in ("core", "shadow"):
        return f"the {scope} tier"
    return f"this {scope.rsplit(' ', 1)[0]}"  # "traffic band head" -> "this traffic band"


class Findings:
    """One comparison's findings as it gathers them: failures, warnings and notes, and the family of
    fail-budget trips on moving metrics that `judge` decides on evidence."""

    def __init__(self, rebaseline: bool, seed: int, noise_floor: NoiseFloor | None) -> None:
        self.rebaseline = rebaseline
        self.seed = seed
        self.noise_floor = noise_floor
        self.failures: list[Finding] = []
        self.warnings: list[Finding] = []
        self.notes: list[str] = []
        self.family: list[_Judged] = []
        self.untested_fail = False  # a fail budget reached with no floor to test it against

    def judge(self) -> None:
        """Decide each fail-budget trip of the family on its evidence (Holm over the whole family), each
        finding put where its row's would have gone."""
        adjusted = holm([_one_sided(judged) for judged in self.family])
        size = len(self.family)
        decided: list[tuple[tuple[int, int], Finding]] = []
        for judged, p_holm in zip(self.family, adjusted, strict=True):
            assert p_holm is not None
            worse = BY_KEY[judged.metric].worsening
            worse_side = min(worse(0.0, judged.low), worse(0.0, judged.high)) > TOLERANCE
            beyond = p_holm < ALPHA and worse_side
            judged.row["evidence"] = {
                "p_one_sided": _one_sided(judged),
                "p_holm": p_holm,
                "family": size,
                "alpha": ALPHA,
                "interval_worse": worse_side,
                "beyond_noise": beyond,
            }
            if judged.message is None:
                continue
            p_text = (
                f"one-sided p={format_p_value(p_holm)} Holm-adjusted over {counted(size, 'gated change')}"
            )
            if beyond:
                message = f"{judged.message}; beyond run-to-run noise: {p_text}"
                decided.append((judged.at, Finding("budget", message, judged.scope, judged.metric)))
                continue
            judged.row["status"] = "warn"
            why = [f"{p_text}, not below {ALPHA}"] if p_holm >= ALPHA else []
            if not worse_side:
                why.append(f"the {LEVEL:.0%} interval reaches 0")
            message = (
                f"{judged.message}; past the budget but within noise ({'; '.join(why)}): re-run, or add "
                f"queries to {_where(judged.scope)} (n={judged.n})"
            )
            decided.append((judged.at, Finding("within_noise", message, judged.scope, judged.metric)))
        # From the last: an insertion leaves the places of the findings before it as they were.
        for (failures_at, warnings_at), finding in reversed(decided):
            if finding.kind == "budget":
                self.failures.insert(failures_at, finding)
            else:
                self.warnings.insert(warnings_at, finding)

    def row(
        self,
        scope: str,
        metric: str,
        change: Change,
        budget: Budget | None,
        *,
        weighted: bool = False,
    ) -> dict[str, Any]:
        """One comparison row from the scope's change of `metric` (`assay.changes`), recording a failure or
        warning when its budget trips."""
        shown = BY_KEY[metric]
        label = f"{shown.label} (weighted)" if weighted else shown.label
        gated = budget is not None and (budget.warn is not None or budget.fail is not None)
        row: dict[str, Any] = {
            **change.to_dict(),
            "change": None,  # how much worse (`Metric.worsening`): a drop for nDCG/MRR/P, a rise for rates
            "warn": budget.warn if budget else None,
            "fail": budget.fail if budget else None,
            "status": "not gated",
        }
        if change.baseline is None or change.current is None:
            if gated:
                self.notes.append(f"{scope} {label}: no query counted in both reports, not compared")
            return row
        row["change"] = shown.worsening(change.baseline, change.current)
        if not gated or budget is None:
            return row
        interval = (
            f"; {change.level:.0%} interval [{shown.format(change.low, signed=True)}, "
            f"{shown.format(change.high, signed=True)}]"
            if change.low is not None
            else ""
        )
        detail = (
            f"(baseline {shown.format(change.baseline)} -> current {shown.format(change.current)} over "
            f"{change.n} paired quer{'y' if change.n == 1 else 'ies'}{interval}{_p_text(change.p_value)})"
        )
        judged = None
        moves = self.noise_floor is not None and self.noise_floor.moves(metric)
        if moves and budget.fail is not None and change.p_value is not None and change.low is not None:
            assert change.high is not None
            judged = _Judged(
                row, scope, metric, row["change"], change.low, change.high, change.p_value, change.n
            )
            self.family.append(judged)
        for level in ("fail", "warn"):
            threshold = getattr(budget, level)
            if not _trips(row["change"], threshold):
                continue
            row["status"] = level
            message = (
                f"{scope} {label} {shown.worse_word} {shown.format(row['change'])} >= {level} budget "
                f"{threshold} {detail}"
            )
            if level == "fail" and not self.rebaseline and judged is not None:
                judged.message = message  # failure or within-noise warning: `judge` decides on the family
                judged.at = (len(self.failures), len(self.warnings))
            elif level == "fail" and not self.rebaseline:
                self.untested_fail = self.untested_fail or self.noise_floor is None
                self.failures.append(Finding("budget", message, scope, metric))
            else:
                suffix = "; accepted by rebaseline" if level == "fail" else ""
                self.warnings.append(Finding("budget", message + suffix, scope, metric))
            break
        else:
            row["status"] = "pass"
        return row
