"""Calibration rounds, the writes: starting a round and promoting its medians (docs/agreement.md, section
"Calibration rounds"); the round's pages read through `labeling.selectors.calibration`.

A round gives each of its N raters one `Assignment(kind=calibration, calibration_round=round)` per query,
with no scope (the whole pool), graded through the ordinary grading page and endpoint. Its figures come
from `assay.labels.calibration` over the round's own judgments only; the everyday paths leave its
assignments out (`Assignment.objects.everyday()`), so it changes no label and no everyday figure until a
reviewer promotes it: one `Adjudication` per unit with a median, ties left to a reviewer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from assay.labels.calibration import UnitMedian, calibration_promotion
from labeling.models import Adjudication, Assignment, CalibrationRound, Document, GoldenSet, Query
from labeling.roles import raters_of
from labeling.selectors.calibration import calibration_round_queries, calibration_round_ratings
from labeling.services.judge_qualification import drift_check_schedule
from labeling.services.review import ReviewError, adjudication_create

NAME_MAX = CalibrationRound._meta.get_field("name").max_length or 200


class CalibrationError(Exception):
    """A round that cannot be started or promoted; `problems` names every field or rule at once."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


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
    set_raters = set(raters_of(golden_set).values_list("pk", flat=True))
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
    queries = {q.external_id: q for q in calibration_round_queries(locked)}
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
                adjudication_create(
                    query=query,
                    document=documents[unit.doc_id],
                    reviewer=by,
                    grade=unit.grade,
                    rationale=_rationale(locked, unit),
                    watch=False,  # once for the round, below
                )
            )
        except ReviewError as exc:  # e.g. a grade off a rubric changed since
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
