"""Calibration rounds, the reads: a round's grades as agreement statistics take them, the set's rounds, a
round's page, and what the start form offers (docs/agreement.md, section "Calibration rounds"). The
writes are `labeling.services.calibration`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, OuterRef

from assay.golden.model import Scale
from assay.labels.agreement import AgreementInputError, Figure, PairAgreement, Rating
from assay.labels.calibration import CalibrationReport, RaterCalibration, UnitMedian, calibration_compute
from labeling.models import Assignment, CalibrationRound, Candidate, GoldenSet, Judgment, Query
from labeling.roles import raters_of
from labeling.selectors.grading import count_subquery

PROMOTION_RULE = "median of the round's grades; a tie of an even count is left to a reviewer"


def _scale(golden_set: GoldenSet) -> Scale:
    return Scale(golden_set.rubric.scale_min, golden_set.rubric.scale_max)


def calibration_round_queries(round_: CalibrationRound) -> list[Query]:
    """The round's queries by external id, each with its pool size (`n_pool`)."""
    return list(
        Query.objects.filter(assignments__calibration_round=round_)
        .annotate(n_pool=Count("candidates", distinct=True))
        .distinct()
        .order_by("external_id")
    )


def calibration_round_ratings(*, round: CalibrationRound) -> list[Rating]:
    """The round's current grades as agreement statistics take them: only its own assignments, whatever
    their status (open, done, or closed by a retirement), never the everyday ones."""
    rows = (
        Judgment.objects.filter(assignment__calibration_round=round)
        .order_by()
        .values_list(
            "assignment__query__external_id",
            "document__doc_id",
            "assignment__rater__username",
            "grade",
            "time_spent_ms",
        )
    )
    return [Rating(q, d, r, g, float(t) if t else None) for q, d, r, g, t in rows]


@dataclass(frozen=True, slots=True)
class RoundSummary:
    round: CalibrationRound
    n_raters: int
    n_queries: int
    graded: int
    total: int


def calibration_round_list(*, golden_set: GoldenSet) -> list[RoundSummary]:
    """The set's rounds, newest first, with their size and progress (graded / candidates to grade)."""
    rounds = list(
        CalibrationRound.objects.filter(golden_set=golden_set)
        .select_related("created_by", "promoted_by")
        .annotate(
            n_raters=Count("assignments__rater", distinct=True),
            n_queries=Count("assignments__query", distinct=True),
        )
        .order_by("-created", "-id")
    )
    progress: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for round_id, graded, total in (
        Assignment.objects.filter(calibration_round__in=rounds)
        .annotate(
            n_graded=count_subquery(Judgment.objects.filter(assignment_id=OuterRef("pk"))),
            n_total=count_subquery(Candidate.objects.filter(query_id=OuterRef("query_id"))),
        )
        .values_list("calibration_round_id", "n_graded", "n_total")
    ):
        progress[round_id][0] += graded
        progress[round_id][1] += total
    return [RoundSummary(r, r.n_raters, r.n_queries, *progress[r.pk]) for r in rounds]


@dataclass(frozen=True, slots=True)
class RaterProgress:
    rater: str
    graded: int  # candidates graded over all the rater's queries of the round
    total: int
    done: int  # queries the rater marked done
    open: int
    closed: int  # reassigned, or closed when their query was retired

    @property
    def complete(self) -> bool:
        return self.total > 0 and self.graded >= self.total


@dataclass(frozen=True, slots=True)
class Cell:
    graded: int
    total: int
    status: str


@dataclass(frozen=True, slots=True)
class QueryRow:
    query: Query
    cells: list[Cell | None]  # one per rater of the round (None: that rater has no assignment on it)


@dataclass(frozen=True, slots=True)
class RoundRaterRow:
    figures: RaterCalibration
    progress: RaterProgress
    distribution: dict[int, int]  # grades given in the round


@dataclass(frozen=True, slots=True)
class RoundPage:
    round: CalibrationRound
    raters: list[str]
    progress: list[RaterProgress]
    queries: list[QueryRow]
    n_grades: int
    graded: int
    total: int
    report: CalibrationReport | None  # None when the grades cannot be computed (`problem` says why)
    problem: str | None
    kappa_matrix: list[tuple[str, list[Figure | None]]]  # quadratic; None on the diagonal
    pairs: tuple[PairAgreement, ...]
    rater_rows: list[RoundRaterRow]
    promotable: int
    ties: list[tuple[UnitMedian, Query]]  # left to a reviewer (on the query's adjudication page)
    rule: str = PROMOTION_RULE

    @property
    def complete(self) -> bool:
        return self.total > 0 and self.graded >= self.total


def calibration_round_get(*, round: CalibrationRound) -> RoundPage:
    """Everything the round's page shows: progress per rater and per query, and the figures of
    `assay.labels.calibration` over the round's current grades (its own assignments only)."""
    golden_set = round.golden_set
    assignments = list(
        Assignment.objects.filter(calibration_round=round)
        .select_related("rater")
        .annotate(
            n_graded=count_subquery(Judgment.objects.filter(assignment_id=OuterRef("pk"))),
            n_total=count_subquery(Candidate.objects.filter(query_id=OuterRef("query_id"))),
        )
    )
    raters = sorted({a.rater.username for a in assignments})
    column = {name: i for i, name in enumerate(raters)}
    queries = calibration_round_queries(round)
    by_external_id = {q.external_id: q for q in queries}
    cells: dict[int, list[Cell | None]] = {q.pk: [None] * len(raters) for q in queries}
    counts: dict[str, dict[str, int]] = {
        name: {"graded": 0, "total": 0, "done": 0, "open": 0, "closed": 0} for name in raters
    }
    for a in assignments:
        name = a.rater.username
        graded, total = a.n_graded, a.n_total
        cells[a.query_id][column[name]] = Cell(graded, total, a.status)
        c = counts[name]
        c["graded"] += graded
        c["total"] += total
        key = {"done": "done", "open": "open"}.get(str(a.status), "closed")
        c[key] += 1
    progress = [RaterProgress(name, **counts[name]) for name in raters]
    ratings = calibration_round_ratings(round=round)
    report: CalibrationReport | None = None
    problem = None
    try:
        report = calibration_compute(
            ratings,
            raters=raters,
            scale=_scale(golden_set),
            relevant_min_grade=golden_set.relevant_min_grade,
            reading_thresholds=golden_set.reading_thresholds,
        )
    except AgreementInputError as exc:  # grades off a rubric changed since the round was graded
        problem = str(exc)
    matrix: list[tuple[str, list[Figure | None]]] = []
    rater_rows: list[RoundRaterRow] = []
    if report is not None:
        kappas = report.kappa_matrix("quadratic")
        matrix = [(a, [None if a == b else kappas[a][b] for b in raters]) for a in raters]
        empty = dict.fromkeys(range(golden_set.rubric.scale_min, golden_set.rubric.scale_max + 1), 0)
        for figures, rater_progress in zip(report.rater_figures, progress, strict=True):
            everyday = report.everyday(figures.rater)
            rater_rows.append(
                RoundRaterRow(figures, rater_progress, everyday.distribution if everyday else dict(empty))
            )
    return RoundPage(
        round=round,
        raters=raters,
        progress=progress,
        queries=[QueryRow(q, cells[q.pk]) for q in queries],
        n_grades=len(ratings),
        graded=sum(p.graded for p in progress),
        total=sum(p.total for p in progress),
        report=report,
        problem=problem,
        kappa_matrix=matrix,
        pairs=report.pairs if report is not None else (),
        rater_rows=rater_rows,
        promotable=len(report.promotion.promotable) if report is not None else 0,
        ties=[(t, by_external_id[t.query_id]) for t in report.promotion.ties] if report is not None else [],
    )


def calibration_round_choices(*, golden_set: GoldenSet) -> dict[str, Any]:
    """What the start form offers: the set's active queries (with their pool sizes) and its raters."""
    queries = (
        golden_set.queries.filter(status=Query.Status.ACTIVE)
        .annotate(n_pool=Count("candidates"))
        .order_by("external_id")
    )
    return {
        "queries": [(q.external_id, f"{q.external_id} · {q.text} ({q.n_pool} in pool)") for q in queries],
        "raters": [
            (u, u) for u in raters_of(golden_set).order_by("username").values_list("username", flat=True)
        ],
    }


def calibration_round_resolve(
    *, golden_set: GoldenSet, external_ids: Sequence[str], usernames: Sequence[str]
) -> tuple[list[Query], list[User], list[str]]:
    """The posted ids as rows: (queries, raters, problems for the ids that name nothing)."""
    queries = {q.external_id: q for q in golden_set.queries.filter(external_id__in=list(external_ids))}
    users = {u.username: u for u in User.objects.filter(username__in=list(usernames))}
    problems = [
        f"queries: {e} is not a query of golden set {golden_set.slug}"
        for e in external_ids
        if e not in queries
    ]
    problems += [f"raters: there is no user {u}" for u in usernames if u not in users]
    return (
        [queries[e] for e in external_ids if e in queries],
        [users[u] for u in usernames if u in users],
        problems,
    )
