"""Rater reads: the queue, the next and previous assignment, the grading page, the saved grades and the
rater's own progress (today's count and pace, the queue's done and remaining).

Blind: nothing here fetches a frozen label, an adjudication or another rater's grade.
"""

from __future__ import annotations

import datetime as dt
import hmac
import re
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    Case,
    CharField,
    Count,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.crypto import salted_hmac

from assay.inputs import id_number
from assay.labels.pace import pace_seconds, time_per_document
from labeling.models import Assignment, Candidate, CantJudgeMark, Document, Judgment, JudgmentEvent, Query
from labeling.roles import rated_filter

# What the grading page and its endpoints show of a candidate, and the order they show candidates in, come
# from a keyed HMAC (Django's SECRET_KEY, one purpose string each), never from the candidate's id. Pools
# create candidates in ranking order (labeling/services/pools.py), so the id, or anything a rater could
# compute from it, would give the systems' ranks back (docs/labeling.md, "Ids that say nothing").
TOKEN_LENGTH = 16  # hex digits: 64 bits, far past guessing, short in the page and the JSON
_TOKEN = re.compile(rf"[0-9a-f]{{{TOKEN_LENGTH}}}")


def _keyed(purpose: str, message: str) -> str:
    return salted_hmac(f"labeling.{purpose}", message, algorithm="sha256").hexdigest()


def shuffle_key(*, rater_id: int, query_id: int, candidate_id: int) -> str:
    """The blind order: fixed per (rater, query), so stable across reloads and different per rater.

    Keyed: with a plain hash of the ids a rater could guess their own id, the query's and the pool's
    consecutive candidate ids, sort the guesses as the page sorts and read each document's id, so its
    rank, off the order."""
    return _keyed("shuffle", f"{rater_id}:{query_id}:{candidate_id}")


def candidate_token(*, assignment_id: int, candidate_id: int) -> str:
    """What the grading page and its endpoints call a candidate: an HMAC of (assignment, candidate) keyed
    with the SECRET_KEY, cut to `TOKEN_LENGTH` hex digits.

    Chosen over random ids stored on the candidate: it needs no migration and no column, is stable
    across reloads and tabs, and differs per assignment, so per rater: two raters (or one rater's two
    assignments of a query in calibration rounds) cannot match their tokens up, and a token carries no
    order that sorting could give back. A SECRET_KEY rotation changes every token; a page loaded before
    it answers "not part of this assignment" to its saves until it is reloaded."""
    return _keyed("candidate", f"{assignment_id}:{candidate_id}")[:TOKEN_LENGTH]


def candidate_for_token(*, assignment_id: int, rater_id: int | None, token: str) -> int | None:
    """The candidate `token` names in the rater's assignment, or None: a token of another assignment,
    another rater's, a made-up one, or an assignment that is not the rater's all answer None, and the
    save then answers as for any candidate outside the assignment. One query (the pool's ids)."""
    if not _TOKEN.fullmatch(token) or id_number(assignment_id) is None:
        return None
    ids = Candidate.objects.filter(
        query__assignments__pk=assignment_id, query__assignments__rater_id=rater_id
    ).values_list("pk", flat=True)
    found = None
    for candidate_id in ids:
        # Every candidate compared, in constant time each: how long the lookup takes says nothing.
        if hmac.compare_digest(
            candidate_token(assignment_id=assignment_id, candidate_id=candidate_id), token
        ):
            found = candidate_id
    return found


def count_subquery(queryset: QuerySet[Any]) -> Coalesce:
    """COUNT(*) of a (correlated) queryset as an expression, so several counts cost one query."""
    sub = queryset.order_by().annotate(n=Func(F("pk"), function="COUNT")).values("n")
    return Coalesce(Subquery(sub, output_field=IntegerField()), Value(0))


# The queue's states of an assignment, as the rater sees them (never its kind: a gold check, a third
# rater's disputed documents or a calibration round would tell of known answers or other raters' grades).
QUEUE_STATES = [("new", "new"), ("started", "started"), ("reopened", "reopened"), ("done", "done")]


def rater_assignments(rater: Any) -> QuerySet[Assignment]:
    """The rater's own assignments of the sets they rate now (`labeling.roles.rated_sets`): taken off a
    set's raters list or out of the raters group, its work is no longer theirs to open (it stays saved)."""
    return Assignment.objects.filter(rated_filter(rater, "query__golden_set"), rater_id=rater.pk)


def assignment_list(*, rater: Any) -> QuerySet[Assignment]:
    """The rater's assignments with progress (`n_graded`, `n_marked` can't judge, `n_total`, `n_left`)
    and `state` (`QUEUE_STATES`: new, started, reopened after being done, done), open ones first, oldest
    first."""
    pool = Candidate.objects.filter(query_id=OuterRef("query_id"))
    scope = Candidate.objects.filter(scoped_assignments=OuterRef("pk"))
    graded = Judgment.objects.filter(assignment_id=OuterRef("pk"))
    marked = CantJudgeMark.objects.filter(assignment_id=OuterRef("pk"))
    return (
        rater_assignments(rater)
        .exclude(status=Assignment.Status.REASSIGNED)
        .select_related("query__golden_set")
        .annotate(
            n_pool=count_subquery(pool),
            n_scope=count_subquery(scope),
            n_graded=count_subquery(graded),
            n_marked=count_subquery(marked),
        )
        .annotate(
            n_total=Case(When(n_scope__gt=0, then=F("n_scope")), default=F("n_pool")),
            state=Case(
                When(status=Assignment.Status.DONE, then=Value("done")),
                When(reopened__isnull=False, then=Value("reopened")),
                When(Q(n_graded__gt=0) | Q(n_marked__gt=0), then=Value("started")),
                default=Value("new"),
                output_field=CharField(),
            ),
        )
        .annotate(n_left=F("n_total") - F("n_graded") - F("n_marked"))
        .order_by("-status", "created", "id")  # "open" sorts after "done": descending puts it first
    )


def _neighbour(*, rater: Any, at: tuple[dt.datetime, int] | None, later: bool) -> Assignment | None:
    """The rater's open assignment (of an active query: retired ones make no label) after (`later`) or
    before the queue position `at` (created, id; oldest first), else, going round, the first (or last)
    other one; with no `at`, the first (or last) at all. One query."""
    open_ = rater_assignments(rater).filter(status=Assignment.Status.OPEN, query__status=Query.Status.ACTIVE)
    order = ("created", "id") if later else ("-created", "-id")
    if at is None:
        return open_.order_by(*order).first()
    created, pk = at
    beyond = (
        Q(created__gt=created) | Q(created=created, id__gt=pk)
        if later
        else Q(created__lt=created) | Q(created=created, id__lt=pk)
    )
    round_ = Case(When(beyond, then=Value(0)), default=Value(1), output_field=IntegerField())
    return open_.exclude(pk=pk).annotate(round=round_).order_by("round", *order).first()


def assignment_next(*, rater: Any, after: int | None = None) -> Assignment | None:
    """Where `n` on the grading page goes: the rater's next open assignment, the first after `after` in
    queue order, else the first at all (done and retired work skipped)."""
    at = None
    if after is not None:
        at = Assignment.objects.filter(pk=after, rater=rater).values_list("created", "id").first()
    return _neighbour(rater=rater, at=at, later=True)


def assignment_previous(*, rater: Any, before: Assignment) -> Assignment | None:
    """Where `p` on the grading page goes, `n` the other way: the rater's open assignment just before
    `before` in queue order, else the last other one, so `p` after `n` comes back (done work is skipped
    both ways; it stays a click away in My queue)."""
    return _neighbour(rater=rater, at=(before.created, before.pk), later=False)


@dataclass(frozen=True, slots=True)
class RaterDay:
    """The progress strip's own figures: documents saved today, the median seconds spent per document
    (`assay.labels.pace`; None before the first), the (assignment, document) pairs saved today, and the
    queue's done and remaining."""

    count: int
    pace: float | None
    saved: frozenset[tuple[int, int]]
    queue_done: int
    queue_remaining: int


def rater_day_get(*, rater: Any, now: dt.datetime | None = None) -> RaterDay:
    """Today (in the server's time zone) from the rater's own save events, and their queue's counts: two
    queries, whatever the day held. Nobody else's saves, and no label, are read."""
    now = now or timezone.now()
    start = timezone.make_aware(dt.datetime.combine(timezone.localdate(now), dt.time.min))
    rows = JudgmentEvent.objects.filter(rater=rater, at__gte=start, at__lte=now).values_list(
        "assignment_id", "document_id", "time_spent_ms"
    )
    spent = time_per_document(((a, d), ms) for a, d, ms in rows)
    queue = (
        rater_assignments(rater)
        .filter(query__status=Query.Status.ACTIVE)
        .exclude(status=Assignment.Status.REASSIGNED)
        .aggregate(
            done=Count("id", filter=Q(status=Assignment.Status.DONE)),
            remaining=Count("id", filter=Q(status=Assignment.Status.OPEN)),
        )
    )
    saved = frozenset(spent)
    return RaterDay(
        count=len(saved),
        pace=pace_seconds(spent.values()),
        saved=saved,
        queue_done=queue["done"],
        queue_remaining=queue["remaining"],
    )


@dataclass(frozen=True, slots=True)
class GradingItem:
    candidate_id: int  # never shown: the page names a candidate by `token`
    token: str  # `candidate_token` of (assignment, candidate)
    document: Document
    grade: int | None  # the rater's own saved grade, nothing else
    note: str  # the note of the rater's own grade or can't-judge mark
    cant_judge: str = ""  # the rater's own can't-judge reason, when the document is marked so


@dataclass(frozen=True, slots=True)
class GradingPage:
    assignment: Assignment
    query: Query
    items: list[GradingItem]
    graded: int
    total: int
    cant_judged: int = 0


def grading_page_get(*, assignment: Assignment) -> GradingPage:
    """What the rater may see: the query, the documents in their blind order and their own grades.

    Never provenance, ranks, frozen labels or anyone else's judgments: those are not even fetched.
    """
    candidates = list(
        Candidate.objects.filter(
            Q(scoped_assignments=assignment) if assignment.scope.exists() else Q(query_id=assignment.query_id)
        )
        .select_related("document")
        .only("id", "query_id", "document")
    )
    own = {
        j.document_id: j
        for j in Judgment.objects.filter(assignment=assignment).only("document_id", "grade", "note")
    }
    marks = {
        m.document_id: m
        for m in CantJudgeMark.objects.filter(assignment=assignment).only("document_id", "reason", "note")
    }
    candidates.sort(
        key=lambda c: shuffle_key(
            rater_id=assignment.rater_id, query_id=assignment.query_id, candidate_id=c.pk
        )
    )
    items = []
    for c in candidates:
        judgment, mark = own.get(c.document_id), marks.get(c.document_id)
        saved = judgment or mark
        items.append(
            GradingItem(
                candidate_id=c.pk,
                token=candidate_token(assignment_id=assignment.pk, candidate_id=c.pk),
                document=c.document,
                grade=judgment.grade if judgment else None,
                note=saved.note if saved else "",
                cant_judge=mark.reason if mark and not judgment else "",
            )
        )
    return GradingPage(
        assignment=assignment,
        query=assignment.query,
        items=items,
        graded=sum(1 for item in items if item.grade is not None),
        total=len(items),
        cant_judged=sum(1 for item in items if item.cant_judge),
    )


def grades_get(*, assignment: Assignment) -> dict[str, Any]:
    """The rater's saved grades by candidate token, and (only when there are some) their can't-judge marks
    by candidate token under `cant_judge` (a second tab refreshes itself from this)."""
    rows = Judgment.objects.filter(assignment=assignment).values_list("document_id", "grade", "note")
    by_document = {doc: (grade, note) for doc, grade, note in rows}
    marked = {
        doc: (reason, note)
        for doc, reason, note in CantJudgeMark.objects.filter(assignment=assignment).values_list(
            "document_id", "reason", "note"
        )
    }
    candidates = list(
        Candidate.objects.filter(query_id=assignment.query_id, document_id__in=[*by_document, *marked]).only(
            "id", "document_id"
        )
    )
    out: dict[str, Any] = {"status": assignment.status, "grades": {}}
    tokens = {c.pk: candidate_token(assignment_id=assignment.pk, candidate_id=c.pk) for c in candidates}
    # In the tokens' order: the rows come in id order, which is the pools' ranking order.
    for c in sorted(candidates, key=lambda c: tokens[c.pk]):
        token = tokens[c.pk]
        if c.document_id in by_document:
            grade, note = by_document[c.document_id]
            out["grades"][token] = {"grade": grade, "note": note}
        elif c.document_id in marked:
            reason, note = marked[c.document_id]
            out.setdefault("cant_judge", {})[token] = {"reason": reason, "note": note}
    return out
