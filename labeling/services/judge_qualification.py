"""Qualifying a machine judge and watching it drift (docs/judge-qualification.md, "Qualifying a judge" and
"The drift watch").

- A judge's answers as the figures take them (`judge_grades`): its `JudgeLabel` grades on the documents
  as they are now, and `None` where its latest answer for a pair was an error (`JudgeAnswer.error`: an
  answer that broke the contract, never a grade). A call that got no answer at all (`JudgeJobItem.failure`)
  is no answer: the pair is left out.
- Its figures and verdicts against the humans (`qualification_report`), and the same on a chosen scope
  of strata and locales (`scope_verdict`): the rule a reviewer's qualification must pass.
- `judge_qualify` stores a `JudgeQualification` only where the scope's verdict is "qualified", with the
  bar and the figures; `judge_qualification_withdraw` ends one with the reviewer's reason.
- `qualification_job_create`: a judge job over exactly the qualification items' pairs.
- The drift watch (`drift_check`): the judge's running agreement with the human grades that landed after
  its qualification; a fall below the bar suspends the qualification, mails the set's reviewers, and the
  judge's labels stop counting there (`labeling.selectors.judge_scope` reads only active rows). A human
  label lands when a rater marks a query done (`labeling.services.done`) and when a reviewer's final grade
  is recorded (`labeling.services.review.adjudication_create`: an adjudication, an accepted proposal, a
  promoted calibration round); each schedules the check (`drift_check_schedule`), which a worker runs
  (the task `labeling.judge_drift_check`) after the commit, never the request.

Imported as `labeling.services.judge_qualification` (not re-exported by `labeling.services`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Max, Q
from django.urls import reverse
from django.utils import timezone

from assay.golden.model import Scale
from assay.labels.judge_agreement import JudgeAgreement
from assay.labels.judge_verdicts import (
    DEFAULT_BAR,
    DEFAULT_DRIFT_MIN_PAIRS,
    DEFAULT_DRIFT_WINDOW,
    FELL_BELOW,
    QUALIFIED,
    DriftWatch,
    Qualification,
    QualificationBar,
    Verdict,
    drift_watch,
    qualification_verdicts,
)
from labeling.models import (
    Adjudication,
    Assignment,
    GoldenSet,
    Judge,
    JudgeJob,
    JudgeJobItem,
    JudgeLabel,
    JudgeQualification,
    Judgment,
    Query,
)
from labeling.roles import reviewer_emails
from labeling.selectors.judge_items import JudgeItems, JudgeItemsFigures, judge_figures_get, judge_items_get
from labeling.services.judges import judge_job_create

logger = logging.getLogger(__name__)

PkKey = tuple[int, int]  # (query pk, document pk)
Active = JudgeQualification.Status.ACTIVE
# The drift watch's running window and the pairs it needs before it can fall (assay.labels.judge_agreement's
# defaults; read at each check).
DRIFT_WINDOW: int | None = DEFAULT_DRIFT_WINDOW
DRIFT_MIN_PAIRS = DEFAULT_DRIFT_MIN_PAIRS
# The grades that make labels: a human grade of these kinds, once its query is marked done, is one the
# drift watch compares the judge with (gold checks measure the rater, calibration rounds the rubric).
HUMAN_KINDS = (
    Assignment.Kind.PRIMARY,
    Assignment.Kind.SECOND,
    Assignment.Kind.THIRD,
    Assignment.Kind.REJUDGE,
)


class QualificationRefused(ValueError):
    pass


# --- the judge's answers -------------------------------------------------------------------------------


def judge_grades(*, judge: Judge, pairs: Iterable[PkKey] | None = None) -> dict[PkKey, int | None]:
    """The judge's answer per (query pk, document pk): its label's grade where the label was given on the
    document as it is now; otherwise None where its latest answer for the pair (on that content) was an
    error. `pairs` limits the reading to those pairs."""
    wanted = set(pairs) if pairs is not None else None
    query_ids = sorted({q for q, _ in wanted}) if wanted is not None else None
    labels = JudgeLabel.objects.filter(judge=judge, content_hash=F("document__content_hash"))
    items = JudgeJobItem.objects.filter(job__judge=judge, done=True, answer__isnull=False).filter(
        answer__document_hash=F("document__content_hash")
    )
    if query_ids is not None:
        labels = labels.filter(query_id__in=query_ids)
        items = items.filter(query_id__in=query_ids)
    grades: dict[PkKey, int | None] = {}
    latest: dict[PkKey, bool] = {}  # the pair's latest answer was an error
    for query_id, document_id, grade in items.order_by("job_id", "index").values_list(
        "query_id", "document_id", "answer__grade"
    ):
        latest[(query_id, document_id)] = grade is None
    for key, error in latest.items():
        if error:
            grades[key] = None
    for query_id, document_id, grade in labels.values_list("query_id", "document_id", "grade"):
        key = (query_id, document_id)
        if not latest.get(key):
            grades[key] = grade
    if wanted is not None:
        grades = {key: value for key, value in grades.items() if key in wanted}
    return grades


# --- figures and verdicts ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QualificationReport:
    judge: Judge
    result: JudgeItemsFigures
    verdicts: Qualification
    bar: QualificationBar

    @property
    def figures(self) -> JudgeAgreement:
        return self.result.figures

    @property
    def rows(self) -> list[tuple[Any, Verdict]]:
        """Each scope's figures with its verdict: overall, the strata, the locales."""
        v = self.verdicts
        return list(zip(self.figures.scopes, (v.overall, *v.strata, *v.locales), strict=True))


def qualification_report(
    *, judge: Judge, items: JudgeItems | None = None, bar: QualificationBar = DEFAULT_BAR
) -> QualificationReport:
    """The judge against the human consensus on the set's items, beside the humans against each other,
    overall, per stratum and per locale, with each scope's verdict."""
    items = items if items is not None else judge_items_get(golden_set=judge.golden_set)
    grades = judge_grades(judge=judge, pairs=items.pks.values())
    result = judge_figures_get(golden_set=judge.golden_set, grades=grades, items=items)
    return QualificationReport(judge, result, qualification_verdicts(result.figures, bar), bar)


def items_in_scope(items: JudgeItems, strata: Sequence[str], locales: Sequence[str]) -> JudgeItems:
    """The items (and human pairs) of queries in the scope: empty lists mean every stratum, every locale."""

    def inside(row: Any) -> bool:
        return (not strata or row.stratum in strata) and (not locales or row.locale in locales)

    kept = tuple(i for i in items.items if inside(i))
    keys = {(i.query_id, i.doc_id) for i in kept}
    return dataclasses.replace(
        items,
        items=kept,
        pairs=tuple(p for p in items.pairs if inside(p)),
        pks={key: pk for key, pk in items.pks.items() if key in keys},
    )


def scope_verdict(
    *,
    judge: Judge,
    strata: Sequence[str],
    locales: Sequence[str],
    items: JudgeItems | None = None,
    bar: QualificationBar = DEFAULT_BAR,
) -> tuple[Verdict, QualificationReport]:
    """The verdict on exactly the scope's items (the figures over the queries of those strata and
    locales, humans likewise): with every stratum and locale, the overall verdict."""
    items = items if items is not None else judge_items_get(golden_set=judge.golden_set)
    report = qualification_report(judge=judge, items=items_in_scope(items, strata, locales), bar=bar)
    return report.verdicts.overall, report


def scope_text(strata: Sequence[str], locales: Sequence[str]) -> str:
    """ "billing, de-DE", "every stratum and locale"."""
    parts = [*(s or "(no stratum)" for s in strata), *(loc or "(no locale)" for loc in locales)]
    return ", ".join(parts) if parts else "every stratum and locale"


# --- qualify, withdraw ---------------------------------------------------------------------------------


def judge_qualify(
    *,
    judge: Judge,
    strata: Sequence[str],
    locales: Sequence[str],
    rationale: str,
    by: User,
    bar: QualificationBar = DEFAULT_BAR,
) -> JudgeQualification:
    """Qualify the judge for a scope of its set: refused (QualificationRefused, saying why) unless the
    figures on exactly that scope say "qualified". Stores the scope's bar and a snapshot of the figures."""
    rationale = rationale.strip()
    if not rationale:
        raise QualificationRefused("a rationale is required")
    strata, locales = sorted(set(strata)), sorted(set(locales))
    verdict, report = scope_verdict(judge=judge, strata=strata, locales=locales, bar=bar)
    scope = scope_text(strata, locales)
    if verdict.verdict != QUALIFIED:
        raise QualificationRefused(
            f"not qualified for {scope}: the figures say {verdict.verdict} ({verdict.why})"
        )
    assert isinstance(verdict.bar, float)  # a "qualified" verdict has a numeric bar
    return JudgeQualification.objects.create(
        judge=judge,
        strata=strata,
        locales=locales,
        rationale=rationale,
        bar=verdict.bar,
        figures={
            "scope": scope,
            "verdict": verdict.to_dict(),
            "rule": bar.to_dict(),
            "figures": report.figures.overall.to_dict(),
            "n_not_graded": report.result.n_not_graded,
        },
        by=by,
    )


def judge_qualification_withdraw(*, qualification: JudgeQualification, by: User, reason: str) -> bool:
    """End an active qualification with the reviewer's reason; False when it was no longer active."""
    reason = reason.strip()
    if not reason:
        raise QualificationRefused("a reason is required")
    return bool(
        JudgeQualification.objects.filter(pk=qualification.pk, status=Active).update(
            status=JudgeQualification.Status.WITHDRAWN,
            ended_at=timezone.now(),
            ended_reason=f"withdrawn by {by.get_username()}: {reason}",
        )
    )


# --- a job over the qualification items ----------------------------------------------------------------


def qualification_job_create(*, judge: Judge, pairs: Iterable[PkKey], by: User | None) -> JudgeJob:
    """A job over exactly these (query pk, document pk) pairs of the judge's set that are in a pool
    (`judge_job_create` with `pairs`: each query's pairs in the judge's blind order), queued once the
    transaction commits."""
    wanted = set(pairs)
    queries = Query.objects.filter(golden_set=judge.golden_set_id, pk__in=sorted({q for q, _ in wanted}))
    return judge_job_create(judge=judge, queries=list(queries), by=by, pairs=wanted)


# --- status --------------------------------------------------------------------------------------------


def qualification_status(judge: Judge) -> str:
    """ "not qualified", "qualified for billing, de-DE since 2026-08-01", "suspended: ..."."""
    rows = list(JudgeQualification.objects.filter(judge=judge).order_by("-at", "-id"))
    active = [q for q in rows if q.status == Active]
    if active:
        return "; ".join(
            f"qualified for {scope_text(q.strata, q.locales)} since {q.at:%Y-%m-%d}" for q in active
        )
    if rows and rows[0].status == JudgeQualification.Status.SUSPENDED:
        return f"suspended: {rows[0].ended_reason}"
    return "not qualified"


# --- the drift watch -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DriftReading:
    qualification: JudgeQualification
    watch: DriftWatch


def drift_pairs(qualification: JudgeQualification) -> list[tuple[int | None, int]]:
    """(judge grade, human grade) for the human labels that landed after the qualification in its scope,
    in the order they landed: a rater's grade when the query is marked done (the assignment's
    `completed`), a reviewer's final grade when it is recorded (`Adjudication.at`), on the document as it
    is now. Only pairs the judge answered (a grade, or None for an error) on that content."""
    graded = (
        Judgment.objects.filter(
            assignment__query__golden_set=qualification.judge.golden_set_id,
            assignment__query__status=Query.Status.ACTIVE,
            assignment__kind__in=HUMAN_KINDS,
            assignment__calibration_round__isnull=True,
            assignment__status=Assignment.Status.DONE,
            assignment__completed__gt=qualification.at,
        )
        # A grade given on other content than the document's now is not compared with the judge's.
        .filter(Q(content_hash="") | Q(content_hash=F("document__content_hash")))
        .values_list(
            "assignment__completed",
            "assignment__query_id",
            "document_id",
            "grade",
            "assignment__query__stratum",
            "assignment__query__locale",
        )
    )
    decided = (
        Adjudication.objects.filter(
            query__golden_set=qualification.judge.golden_set_id,
            query__status=Query.Status.ACTIVE,
            at__gt=qualification.at,
        )
        .filter(Q(content_hash="") | Q(content_hash=F("document__content_hash")))
        .values_list("at", "query_id", "document_id", "grade", "query__stratum", "query__locale")
    )

    def in_scope(rows: Any, kind: int) -> list[tuple[Any, int, int, PkKey, int]]:
        """(when it landed, kind, order within its kind, pair, grade) of the rows in the scope."""
        return [
            (at, kind, n, (query, document), grade)
            for n, (at, query, document, grade, stratum, locale) in enumerate(rows)
            if qualification.covers(stratum, locale)
        ]

    # In the order they landed; a rater's grades before a reviewer's decided at the same instant.
    landed = in_scope(graded.order_by("assignment__completed", "pk"), 0) + in_scope(
        decided.order_by("at", "pk"), 1
    )
    scoped = [(pair, grade) for *_, pair, grade in sorted(landed)]
    grades = judge_grades(judge=qualification.judge, pairs={pair for pair, _ in scoped})
    return [(grades[pair], grade) for pair, grade in scoped if pair in grades]


def drift_reading(qualification: JudgeQualification) -> DriftReading:
    window, min_pairs = DRIFT_WINDOW, DRIFT_MIN_PAIRS
    if window is not None and min_pairs > window:
        min_pairs = window
    rubric = qualification.judge.rubric
    watch = drift_watch(
        drift_pairs(qualification),
        bar=qualification.bar,
        window=window,
        min_pairs=min_pairs,
        scale=Scale(rubric.scale_min, rubric.scale_max),
    )
    return DriftReading(qualification, watch)


def drift_check(*, golden_set_id: int) -> list[JudgeQualification]:
    """Run the drift watch on the set's active qualifications: each whose judge fell below its bar is
    suspended (with the numbers), and the set's reviewers are mailed. Returns the suspended ones."""
    suspended = []
    active = JudgeQualification.objects.filter(
        judge__golden_set_id=golden_set_id, status=Active
    ).select_related("judge__golden_set", "judge__rubric")
    for qualification in active:
        reading = drift_reading(qualification)
        if reading.watch.status != FELL_BELOW:
            continue
        reason = f"the drift watch: {reading.watch.why} (exact agreement {_share(reading.watch.exact)})"
        ended = JudgeQualification.objects.filter(pk=qualification.pk, status=Active).update(
            status=JudgeQualification.Status.SUSPENDED, ended_at=timezone.now(), ended_reason=reason
        )
        if ended:
            qualification.refresh_from_db()
            suspended.append(qualification)
            _mail_reviewers(qualification)
    return suspended


def _share(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _mail_reviewers(qualification: JudgeQualification) -> None:
    judge = qualification.judge
    golden_set = judge.golden_set
    to = reviewer_emails(golden_set)
    if not to:
        return
    scope = scope_text(qualification.strata, qualification.locales)
    page = reverse("labeling:judge_qualification", kwargs={"slug": golden_set.slug, "pk": judge.pk})
    body = (
        f"The judge {judge.name} (#{judge.pk}, {judge.model}) of the golden set {golden_set.name} was"
        f" qualified for {scope} on {qualification.at:%Y-%m-%d %H:%M} UTC.\n\n"
        f"Suspended by {qualification.ended_reason}.\n\n"
        f"Its labels no longer count there. Its qualification page: {page}\n"
    )
    send_mail(f"[Assay] Judge {judge.name} suspended in {golden_set.name}", body, None, to)


DRIFT_CHECK = "labeling.judge_drift_check"  # the task's name: queued by name, as judge jobs are


def drift_check_schedule(*, golden_set_id: int) -> None:
    """After the current transaction commits, queue the drift watch of the set for a worker (the task
    `labeling.judge_drift_check`), only if the set has an active qualification (one cheap query
    otherwise). A failure to queue it is logged, never raised: the human's work is saved either way."""
    from celery import current_app

    def queue() -> None:
        current_app.tasks[DRIFT_CHECK].delay(golden_set_id)

    try:
        if not JudgeQualification.objects.filter(judge__golden_set_id=golden_set_id, status=Active).exists():
            return
        transaction.on_commit(queue, robust=True)
    except Exception:
        logger.exception("drift watch of golden set %s could not be scheduled", golden_set_id)


def drift_check_safely(*, golden_set_id: int) -> None:
    """The drift watch as the worker runs it: a failure is logged with the set, never raised."""
    try:
        drift_check(golden_set_id=golden_set_id)
    except Exception:
        logger.exception("drift watch of golden set %s failed", golden_set_id)


def suspended_recently(*, golden_set: GoldenSet) -> list[JudgeQualification]:
    """The set's suspended qualifications whose judge has been neither qualified again nor replaced by a
    new version since: the banner on the set's judge pages."""
    rows = JudgeQualification.objects.filter(judge__golden_set=golden_set)
    suspended = list(
        rows.filter(status=JudgeQualification.Status.SUSPENDED).select_related("judge__golden_set")
    )
    if not suspended:
        return []
    # Three statements whatever the number of suspensions: the latest qualification of each judge and the
    # latest new version made from it, compared with each suspension's time.
    judge_ids = {q.judge_id for q in suspended}
    qualified = dict(
        rows.filter(judge_id__in=judge_ids)
        .values("judge_id")
        .annotate(at=Max("at"))
        .values_list("judge_id", "at")
    )
    replaced = dict(
        Judge.objects.filter(previous_id__in=judge_ids)
        .values("previous_id")
        .annotate(at=Max("created"))
        .values_list("previous_id", "at")
    )
    out = []
    for q in suspended:
        since = q.ended_at or q.at
        later = [at for at in (qualified.get(q.judge_id), replaced.get(q.judge_id)) if at is not None]
        if not any(at > since for at in later):
            out.append(q)
    return out
