"""Calibration rounds: services and selectors (docs/agreement.md, section "Calibration rounds").

A round gives each of its N raters one `Assignment(kind=calibration, calibration_round=round)` per query,
with no scope (the whole pool), graded through the ordinary grading page and endpoint. Its figures come
from `assay.labels.calibration` over the round's own judgments only; the everyday paths leave its
assignments out (`Assignment.objects.everyday()`), so it changes no label and no everyday figure until a
reviewer promotes it: one `Adjudication` per unit with a median, ties left to a reviewer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Count, OuterRef
from django.utils import timezone

from assay.golden.model import Scale
from assay.labels.agreement import AgreementInputError, Figure, PairAgreement, Rating
from assay.labels.calibration import (
    CalibrationReport,
    RaterCalibration,
    UnitMedian,
    calibration_compute,
    calibration_promotion,
)
from labeling import services
from labeling.models import (
    Adjudication,
    Assignment,
    CalibrationRound,
    Candidate,
    Document,
    GoldenSet,
    Judgment,
    Query,
)
from labeling.selectors import count_subquery
from labeling.services.judge_qualification import drift_check_schedule

NAME_MAX = CalibrationRound._meta.get_field("name").max_length or 200
PROMOTION_RULE = "median of the round's grades; a tie of an even count is left to a reviewer"


class CalibrationError(Exception):
    """A round that cannot be started or promoted; `problems` names every field or rule at once."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


# --- services -----------------------------------------------------------------------------------


@transaction.atomic
def calibration_round_start(
    *,
    golden_set: GoldenSet,
    name: str,
    queries: Sequence[Query],
    raters: Sequence[User],
    by: User,
) -> CalibrationRound:
    """A new round: every rater gets every query, the whole pool each, as `kind=calibration` work.

    Refused, with every problem named and nothing written, when the name is empty, too long or taken in
    the set, fewer than two raters are given, a rater is not one of the set's raters, or a query is not
    an active query of the set or has no candidate pool.
    """
    name = (name or "").strip()
    problems: list[str] = []
    if not name:
        problems.append("name: give the round a name (it is quoted in every grade it promotes)")
    elif len(name) > NAME_MAX:
        problems.append(f"name: longer than {NAME_MAX} characters")
    elif CalibrationRound.objects.filter(golden_set=golden_set, name=name).exists():
        problems.append(f"name: golden set {golden_set.slug} already has a round named {name!r}")

    chosen_raters = list({r.pk: r for r in raters}.values())
    if len(chosen_raters) < 2:
        problems.append(
            f"raters: a calibration round needs two or more raters, got {len(chosen_raters)}"
            " (agreement is between raters)"
        )
    set_raters = set(golden_set.raters.values_list("pk", flat=True))
    problems += [
        f"raters: {r.username} is not a rater of golden set {golden_set.slug}"
        for r in sorted(chosen_raters, key=lambda r: r.username)
        if r.pk not in set_raters
    ]

    chosen_queries = list({q.pk: q for q in queries}.values())
    if not chosen_queries:
        problems.append("queries: choose at least one query")
    found = {
        q.pk: q
        for q in Query.objects.filter(pk__in=[q.pk for q in chosen_queries]).annotate(
            n_pool=Count("candidates")
        )
    }
    for q in sorted(chosen_queries, key=lambda q: q.external_id):
        row = found.get(q.pk)
        if row is None or row.golden_set_id != golden_set.pk:
            problems.append(f"queries: {q.external_id} is not a query of golden set {golden_set.slug}")
        elif row.status != Query.Status.ACTIVE:
            problems.append(f"queries: {q.external_id} is retired: a round grades active queries only")
        elif not row.n_pool:
            problems.append(f"queries: {q.external_id} has no candidate pool yet: nothing to grade")
    if problems:
        raise CalibrationError(problems)

    try:
        with transaction.atomic():
            round_ = CalibrationRound.objects.create(golden_set=golden_set, name=name, created_by=by)
    except IntegrityError as exc:  # the same name, started a moment ago by someone else
        raise CalibrationError(
            [f"name: golden set {golden_set.slug} already has a round named {name!r}"]
        ) from exc
    Assignment.objects.bulk_create(
        Assignment(query=q, rater=r, kind=Assignment.Kind.CALIBRATION, calibration_round=round_)
        for q in sorted(chosen_queries, key=lambda q: q.external_id)
        for r in sorted(chosen_raters, key=lambda r: r.username)
    )
    return round_


@dataclass(frozen=True, slots=True)
class PromotionResult:
    adjudications: list[Adjudication]  # one per promoted (query, document), in (query, document) order
    ties: list[UnitMedian]  # left to a reviewer, with their grades
    skipped: list[str]  # units not promoted for another reason, in words (a query retired since)


@transaction.atomic
def calibration_round_promote(*, round: CalibrationRound, by: User) -> PromotionResult:
    """Make the round's medians the final labels: one `Adjudication` by `by` per graded unit whose median
    is defined (`assay.labels.calibration`: ties are left to a reviewer and listed), with the rationale
    "calibration round <name>: median of <grades> (<n> raters)".

    Refused, changing nothing, when the round was promoted before, has no grades, or has only ties.
    Queries retired since the round started are skipped and listed (a retired query takes no label).
    """
    locked = (
        CalibrationRound.objects.select_for_update(of=("self",))
        .select_related("golden_set__rubric", "promoted_by")
        .get(pk=round.pk)
    )
    if locked.promoted_at is not None:
        when = timezone.localtime(locked.promoted_at).strftime("%Y-%m-%d %H:%M")
        raise CalibrationError([f"already promoted by {locked.promoted_by} at {when}: nothing changed"])
    ratings = calibration_round_ratings(round=locked)
    if not ratings:
        raise CalibrationError(["the round has no grades yet: nothing to promote"])
    # The rule only: a grade off the scale (a rubric changed since) is refused by adjudication_create.
    promotion = calibration_promotion(ratings)
    queries = {q.external_id: q for q in _round_queries(locked)}
    documents = {
        d.doc_id: d
        for d in Document.objects.filter(
            golden_set=locked.golden_set, doc_id__in={u.doc_id for u in promotion.promotable}
        )
    }
    adjudications: list[Adjudication] = []
    skipped: list[str] = []
    for unit in promotion.promotable:
        query = queries[unit.query_id]
        if query.status != Query.Status.ACTIVE:
            skipped.append(f"{unit.query_id}/{unit.doc_id}: query {unit.query_id} is retired, no label")
            continue
        assert unit.grade is not None  # promotable units have a median
        try:
            adjudications.append(
                services.adjudication_create(
                    query=query,
                    document=documents[unit.doc_id],
                    reviewer=by,
                    grade=unit.grade,
                    rationale=_rationale(locked, unit),
                    watch=False,  # once for the round, below
                )
            )
        except services.ReviewError as exc:  # e.g. a grade off a rubric changed since
            raise CalibrationError([f"{unit.query_id}/{unit.doc_id}: {exc}; nothing was promoted"]) from exc
    if not adjudications:
        raise CalibrationError(
            [
                "every graded document's query was retired since the round started: nothing to promote"
                if skipped
                else "every graded document is a tie: nothing to promote; a reviewer decides them one by one"
            ]
        )
    locked.promoted_by, locked.promoted_at = by, timezone.now()
    locked.save(update_fields=["promoted_by", "promoted_at"])
    # The medians are human labels that landed: the set's qualified judges are checked against them.
    drift_check_schedule(golden_set_id=locked.golden_set_id)
    round.promoted_by, round.promoted_at = locked.promoted_by, locked.promoted_at
    return PromotionResult(adjudications=adjudications, ties=list(promotion.ties), skipped=skipped)


def _rationale(round_: CalibrationRound, unit: UnitMedian) -> str:
    n = len(unit.grades)
    return f"calibration round {round_.name}: median of {unit.grades_text} ({n} rater{'s' if n != 1 else ''})"


# --- selectors ----------------------------------------------------------------------------------


def _scale(golden_set: GoldenSet) -> Scale:
    return Scale(golden_set.rubric.scale_min, golden_set.rubric.scale_max)


def _round_queries(round_: CalibrationRound) -> list[Query]:
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
class RaterRow:
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
    rater_rows: list[RaterRow]
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
    queries = _round_queries(round)
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
    rater_rows: list[RaterRow] = []
    if report is not None:
        kappas = report.kappa_matrix("quadratic")
        matrix = [(a, [None if a == b else kappas[a][b] for b in raters]) for a in raters]
        empty = dict.fromkeys(range(golden_set.rubric.scale_min, golden_set.rubric.scale_max + 1), 0)
        for figures, rater_progress in zip(report.rater_figures, progress, strict=True):
            everyday = report.everyday(figures.rater)
            rater_rows.append(
                RaterRow(figures, rater_progress, everyday.distribution if everyday else dict(empty))
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
        "raters": [(u, u) for u in golden_set.raters.order_by("username").values_list("username", flat=True)],
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
