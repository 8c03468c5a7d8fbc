"""The consolidated labels: per judged (query, document), the final grade and how it was reached, or
why there is none yet (docs/agreement.md, "Final labels"). A golden-version freeze reads them
(`golden_io.selectors`)."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeVar

from django.db.models import Q, QuerySet

from assay.golden.model import Scale
from assay.labels.disputes import consolidate
from assay.memory import gc_paused
from labeling.models import (
    Adjudication,
    Assignment,
    Candidate,
    FrozenLabel,
    GoldenSet,
    GoldItem,
    Judgment,
    Query,
    TierMove,
)
from labeling.selectors.judge_scope import qualified_judge_labels

FROZEN = "frozen"  # a label carried over from the set's current frozen labels: nothing judged since
JUDGE = "judge"  # a qualified judge's label filling a pool pair no human labeled (method and source)
HUMAN = "human"  # the source of every label humans decided
REJUDGE = str(Assignment.Kind.REJUDGE)
# Why a judged pair has no label yet when its only grades are on work the rater has not marked done.
NOT_DONE = "graded on work not marked done yet: the grades count once the rater marks the query done"
T = TypeVar("T")


def single_rater_work(kind: str, *, dual: bool) -> bool:
    """Work whose grade stands alone in consolidation (`single`): a re-judgment, or the primary rater of
    a query outside the dual sample (`dual`: the query has a live second assignment). Dual-labeled work
    is checked by agreement and disputes instead."""
    return kind == Assignment.Kind.REJUDGE or (kind == Assignment.Kind.PRIMARY and not dual)


def grade_counts(kind: str, status: str, *, dual: bool) -> bool:
    """Does a grade saved on a live everyday assignment (not reassigned, not a calibration round's) of
    this kind and status count toward the final label? The one rule every reader of labels applies
    (docs/agreement.md, "Final labels", "Which grades count"):

    - a gold check never does (it measures the rater);
    - single-rater work (`single_rater_work`) only once the rater has marked the query done: nothing
      stands between one rater's grade and the label but that, so work in progress is no label;
    - the first and second raters of the dual sample and a third rater as they are given, since the
      agreement check, the third rater and the reviewer stand between two raters' grades and the label.
    """
    if kind == Assignment.Kind.GOLD:
        return False
    return status == Assignment.Status.DONE or not single_rater_work(kind, dual=dual)


@dataclass(frozen=True, slots=True)
class FinalLabel:
    """A (query, document)'s final grade and how it was reached: single, agreed, median, adjudicated,
    frozen or judge. `content_hash` is the document content the deciding grade was given on (None: not
    known, e.g. a frozen label or grades saved before hashes were recorded).

    `source` is `human`, or `judge` for a qualified judge's label (`judge_id`, `judge_name` say which;
    `judge_id` is None for a judge label frozen from an imported file, which names no judge row)."""

    query_id: int
    document_id: int
    grade: int
    method: str
    content_hash: str | None = None
    source: str = HUMAN
    judge_id: int | None = None
    judge_name: str = ""


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A judged (query, document) with no final grade yet; `awaiting` is second_rater, third_rater or
    reviewer, `reason` says why in words (with the grades)."""

    query_id: int
    document_id: int
    reason: str
    awaiting: str = "reviewer"


@dataclass(frozen=True, slots=True)
class NotDone:
    """A (query, document) graded on single-rater work not marked done: those grades (`grades`) do not
    count yet. `label` is the final grade the pair has without them (its earlier label, an adjudication
    or a judge's), None when it has none and is left out of a freeze."""

    query_id: int
    document_id: int
    grades: tuple[int, ...]
    label: int | None


@dataclass(frozen=True, slots=True)
class Consolidated:
    labels: list[FinalLabel]
    unresolved: list[Unresolved]
    not_done: list[NotDone] = field(default_factory=list)


class FrozenRow(NamedTuple):
    """A frozen label's values as consolidation reads them."""

    grade: int
    source: str = HUMAN
    judge_id: int | None = None
    judge_name: str = ""


Pair = tuple[int, int]  # (query pk, document pk)


@dataclass(frozen=True, slots=True)
class Unwritten:
    """Changes to a set not written (yet), read as if they were: what a golden-file import or its undo
    would leave, so that it is checked before anything is written and under no lock (golden_io's
    import). Everything else is read as it stands.

    `frozen`: per (query pk, document pk) the frozen label the pair would have, None for none.
    `queries`: per query pk the row as it would be (its fields and status); a query to be created has a
    negative pk, which no row has. A query that returns from retirement gets back the work its retirement
    closed (`assignments_retirement_closed`), as `labeling.services.retired_work_reopen` gives it back.
    `pool_added`, `pool_removed`: candidates (query pk, document pk) joining or leaving pools.
    `keys` (document pk -> key) and `settings` (the set's k, relevant_min_grade): what
    `golden_io.selectors.working_golden_get` reads of them."""

    frozen: Mapping[Pair, FrozenRow | None] = field(default_factory=dict)
    queries: Mapping[int, Query] = field(default_factory=dict)
    pool_added: frozenset[Pair] = frozenset()
    pool_removed: frozenset[Pair] = frozenset()
    keys: Mapping[int, str | None] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Scope:
    """The queries whose rows consolidation reads (a subquery) and, with unwritten changes, those that
    count as active (`active`: None when the rows' own status says) and the assignments they reopen."""

    queries: QuerySet[Query]
    active: frozenset[int] | None = None
    reopened: frozenset[int] = frozenset()

    def counts(self, query_id: int) -> bool:
        return self.active is None or query_id in self.active


def _scope(
    golden_set: GoldenSet, query_ids: Collection[int] | QuerySet[Any, int] | None, unwritten: Unwritten | None
) -> _Scope:
    queries = Query.objects.filter(golden_set=golden_set, status=Query.Status.ACTIVE)
    if query_ids is not None:
        # A QuerySet of ids stays a subquery: a long list of ids repeated in every statement costs more.
        queries = queries.filter(pk__in=query_ids if isinstance(query_ids, QuerySet) else list(query_ids))
    if unwritten is None:
        return _Scope(queries)
    if query_ids is not None:
        raise ValueError("unwritten changes are read over the whole set, not some of its queries")
    statuses = dict(Query.objects.filter(golden_set=golden_set).values_list("pk", "status"))
    active = {pk for pk, status in statuses.items() if status == Query.Status.ACTIVE}
    for pk, row in unwritten.queries.items():
        if row.status == Query.Status.ACTIVE:
            active.add(pk)
        else:
            active.discard(pk)
    returning = [pk for pk in active if pk in statuses and statuses[pk] != Query.Status.ACTIVE]
    if returning:  # their rows are read too
        queries = Query.objects.filter(golden_set=golden_set)
    return _Scope(queries, frozenset(active), frozenset(assignments_retirement_closed(query_ids=returning)))


def assignments_retirement_closed(*, query_ids: Collection[int]) -> set[int]:
    """The assignments each query's latest retirement closed (`labeling.services.query_retire` stamps
    them `reassigned` with its time): the work the query gets back when it returns."""
    last: dict[int, Any] = {}
    retired = TierMove.objects.filter(query_id__in=list(query_ids), to_status=Query.Status.RETIRED)
    for query_id, at in retired.order_by("at", "id").values_list("query_id", "at"):
        last[query_id] = at
    closed = Assignment.objects.filter(query_id__in=list(last), status=Assignment.Status.REASSIGNED)
    return {
        pk
        for pk, query_id, completed in closed.values_list("pk", "query_id", "completed")
        if completed == last[query_id]
    }


class _Graded(NamedTuple):
    pk: int  # creation order; first, so that a plain sort orders by it
    grade: int
    kind: str
    content_hash: str
    updated: Any  # datetime; fetched for re-judgments only (they are compared with adjudications)


# The same few inputs come back for every document (two grades of 0..3, expected 1 or 2): computing each
# once keeps consolidating a set of 40,000 documents well under a second.
_consolidate = functools.lru_cache(maxsize=8192)(consolidate)


@gc_paused()
def labels_consolidated(
    *,
    golden_set: GoldenSet,
    query_ids: Collection[int] | QuerySet[Any, int] | None = None,
    document_ids: Collection[int] | None = None,
    judges: bool = True,
    unwritten: Unwritten | None = None,
) -> Consolidated:
    """Per judged (query, document) of the set's active queries (all, or `query_ids`), the final grade
    with its method, or why there is none yet. Retired queries are left out; with `document_ids` only
    those documents of the queries are consolidated.

    The rules are `assay.labels.disputes.consolidate`'s (docs/agreement.md), over the current grades of the
    live assignments (reassigned ones and gold checks make no label), with these additions:
    - a re-judgment (a `rejudge` assignment, for changed content) replaces the earlier grades, and an
      adjudication older than it no longer counts;
    - a (query, document) nobody judged keeps its frozen label (method `frozen`), so a golden file
      imported and frozen without changes comes back unchanged;
    - two disagreeing grades with no third rater coming (the dual assignments are done and no live third
      assignment covers the document) wait for a reviewer, not for a third rater;
    - a single rater's grade counts once the rater marked the query done (`grade_counts`); until then
      the pair is as if ungraded, and is listed in `not_done` (with the label it has without them);
    - a single rater's grade (`single`) that differs from the frozen label keeps the frozen label: it is
      a proposed change (`LabelProposal`) until a reviewer accepts it, which is an adjudication. Dual
      work (agreed, median) and adjudications change labels as before. Calibration rounds make none.

    With `judges` (the default), a pool pair (a candidate of the query) that no human labeled in any way
    (no grade, no adjudication, no gold item, no frozen label humans decided) takes the label of a judge
    qualified for it (`labeling.selectors.judge_scope`, the one reading of which judge labels count):
    method and source `judge`, with the judge named. A judge label never overrides a human one and never
    adjudicates; a frozen label that came from a judge gives way to any human grade, and to the judge
    label counted now. Readings of the humans' work (agreement, disputes, a judge's human consensus)
    pass `judges=False`.

    With `unwritten`, changes not written yet are read as if they were (`Unwritten`).
    """
    labels: list[FinalLabel] = []
    unresolved: list[Unresolved] = []
    not_done: list[NotDone] = []
    scope = _scope(golden_set, query_ids, unwritten)
    pairs = _pair_labels(golden_set, query_ids, document_ids, unwritten, scope)
    if judges:
        _judge_fill(pairs, golden_set, scope, document_ids, unwritten)
    for (query_id, document_id), label in sorted(pairs.items()):
        if not scope.counts(query_id):
            continue
        if label.not_done:
            not_done.append(NotDone(query_id, document_id, label.not_done, label.grade))
        if label.graded_not_done_only:
            continue  # as if nobody graded it yet: neither a label nor unresolved
        if label.grade is not None and label.method is not None:
            labels.append(
                FinalLabel(
                    query_id,
                    document_id,
                    label.grade,
                    label.method,
                    label.content_hash,
                    label.source,
                    label.judge_id,
                    label.judge_name,
                )
            )
        else:
            unresolved.append(
                Unresolved(query_id, document_id, label.reason or "unresolved", label.awaiting or "reviewer")
            )
    return Consolidated(labels=labels, unresolved=unresolved, not_done=not_done)


@dataclass(frozen=True, slots=True)
class PairLabel:
    """One (query, document)'s consolidation: the final grade and method, or the reason and who acts."""

    grade: int | None
    method: str | None
    reason: str | None = None
    awaiting: str | None = None
    content_hash: str | None = None
    grades: tuple[int, ...] = ()  # the grades it was decided on (after a re-judgment: that grade only)
    held: int | None = None  # a single rater's grade that overturns the frozen label, held for review
    source: str = HUMAN  # or JUDGE (a judge's fill-in, or a frozen label that came from one)
    judge_id: int | None = None
    judge_name: str = ""
    # Grades on single-rater work not marked done: they do not count (yet), `grade_counts`.
    not_done: tuple[int, ...] = ()

    @property
    def graded_not_done_only(self) -> bool:
        """Nothing that counts decides the pair: its only grades are on work not marked done."""
        return self.method is None and not self.grades and bool(self.not_done)


def _judge_fill(
    pairs: dict[tuple[int, int], PairLabel],
    golden_set: GoldenSet,
    scope: _Scope,
    document_ids: Collection[int] | None,
    unwritten: Unwritten | None,
) -> None:
    """Fill, in place, the pool pairs no human labeled with the counted judge labels."""
    counted = qualified_judge_labels(
        golden_set=golden_set, query_ids=scope.queries.values_list("pk", flat=True)
    )
    if document_ids is not None:
        wanted = set(document_ids)
        counted = {pair: label for pair, label in counted.items() if pair[1] in wanted}
    if not counted:
        return
    query_pks = {q for q, _ in counted}
    pool = set(Candidate.objects.filter(query_id__in=query_pks).values_list("query_id", "document_id"))
    if unwritten is not None:
        pool = (pool | unwritten.pool_added) - unwritten.pool_removed
    gold = set(GoldItem.objects.filter(query_id__in=query_pks).values_list("query_id", "document_id"))
    for pair, label in counted.items():
        if pair not in pool or pair in gold:
            continue
        held = pairs.get(pair)
        if held is not None and not (
            held.graded_not_done_only or (held.source == JUDGE and held.method == FROZEN and not held.grades)
        ):
            continue  # humans labeled it: judged, adjudicated, or a frozen label humans decided
        pairs[pair] = PairLabel(
            label.grade,
            JUDGE,
            source=JUDGE,
            judge_id=label.judge_id,
            judge_name=label.judge_name,
            not_done=held.not_done if held is not None else (),
        )


def _pair_labels(
    golden_set: GoldenSet,
    query_ids: Collection[int] | QuerySet[Any, int] | None,
    document_ids: Collection[int] | None = None,
    unwritten: Unwritten | None = None,
    scope: _Scope | None = None,
) -> dict[tuple[int, int], PairLabel]:
    rubric = golden_set.rubric
    scale = Scale(rubric.scale_min, rubric.scale_max)
    scope = scope or _scope(golden_set, query_ids, unwritten)
    queries = scope.queries
    live = Assignment.objects.everyday().filter(query__in=queries)
    if scope.reopened:
        live = live.filter(~Q(status=Assignment.Status.REASSIGNED) | Q(pk__in=scope.reopened))
    else:
        live = live.exclude(status=Assignment.Status.REASSIGNED)
    assignments = [
        (pk, query_id, kind, Assignment.Status.OPEN if pk in scope.reopened else status)
        for pk, query_id, kind, status in live.values_list("pk", "query_id", "kind", "status")
    ]
    dual = {query_id for _, query_id, kind, _ in assignments if kind == Assignment.Kind.SECOND}
    done: dict[int, set[str]] = {}
    counted: dict[int, tuple[int, str]] = {}  # assignment -> (query, kind), for the ones that make labels
    not_done: dict[int, int] = {}  # assignment -> query, for single-rater work not marked done
    for pk, query_id, kind, status in assignments:
        if status == Assignment.Status.DONE:
            done.setdefault(query_id, set()).add(kind)
        if grade_counts(kind, status, dual=query_id in dual):
            counted[pk] = (query_id, kind)
        elif kind != Assignment.Kind.GOLD:
            not_done[pk] = query_id
    third_scope = set(
        live.filter(kind=Assignment.Kind.THIRD).values_list("scope__query_id", "scope__document_id")
    )
    judgments = Judgment.objects.all()
    adjudicated = Adjudication.objects.all()
    frozen_labels = FrozenLabel.objects.all()
    if document_ids is not None:
        wanted = list(document_ids)
        judgments = judgments.filter(document_id__in=wanted)
        adjudicated = adjudicated.filter(document_id__in=wanted)
        frozen_labels = frozen_labels.filter(document_id__in=wanted)
    # Plain columns, no joins and no timestamps: this reads every judgment of the set.
    rows = (
        judgments.filter(assignment__in=live.exclude(kind=Assignment.Kind.GOLD))
        .order_by()
        .values_list("assignment_id", "document_id", "grade", "content_hash", "pk")
    )
    rejudged_at = dict(
        judgments.filter(assignment__in=live.filter(kind=Assignment.Kind.REJUDGE)).values_list(
            "pk", "updated"
        )
    )
    graded: dict[tuple[int, int], list[_Graded]] = defaultdict(list)
    waiting: dict[tuple[int, int], list[int]] = defaultdict(list)
    for assignment_id, document_id, grade, digest, pk in rows:
        if assignment_id in not_done:
            waiting[(not_done[assignment_id], document_id)].append(grade)
            continue
        query_id, kind = counted[assignment_id]
        graded[(query_id, document_id)].append(_Graded(pk, grade, kind, digest, rejudged_at.get(pk)))
    adjudications: dict[tuple[int, int], tuple[int, Any, str]] = {}
    for query_id, document_id, grade, at, digest in (
        adjudicated.filter(query__in=queries)
        .order_by("at", "id")
        .values_list("query_id", "document_id", "grade", "at", "content_hash")
    ):
        adjudications[(query_id, document_id)] = (grade, at, digest)  # the newest wins
    out: dict[tuple[int, int], PairLabel] = {}
    frozen: dict[tuple[int, int], int] = {}
    frozen_rows = {
        (query_id, document_id): FrozenRow(grade, source, judge_id, judge_name)
        for query_id, document_id, grade, source, judge_id, judge_name in frozen_labels.filter(
            query__in=queries
        ).values_list("query_id", "document_id", "grade", "source", "judge_id", "judge_name")
    }
    if unwritten is not None:
        for pair, row in unwritten.frozen.items():
            if row is None:
                frozen_rows.pop(pair, None)
            elif document_ids is None or pair[1] in document_ids:
                frozen_rows[pair] = row
    for pair, (grade, source, judge_id, judge_name) in frozen_rows.items():
        if source != JUDGE:  # a frozen judge label is no human decision: any human grade replaces it
            frozen[pair] = grade
        out[pair] = PairLabel(grade, FROZEN, source=source, judge_id=judge_id, judge_name=judge_name)
    dual_done = {q for q, kinds in done.items() if {Assignment.Kind.PRIMARY, Assignment.Kind.SECOND} <= kinds}
    with_third = {query_id for query_id, kind in counted.values() if kind == Assignment.Kind.THIRD}
    for pair in graded.keys() | adjudications.keys():
        grades = graded.get(pair, [])
        out[pair] = _pair_label(
            third_counted(grades, key=lambda g: (g.kind, g.grade)) if pair[0] in with_third else grades,
            adjudications.get(pair),
            expected=2 if pair[0] in dual else 1,
            third_coming=pair in third_scope or pair[0] not in dual_done,
            scale=scale,
            frozen=frozen.get(pair),
        )
    for pair, given in waiting.items():
        held = out.get(pair)
        out[pair] = (
            replace(held, not_done=tuple(sorted(given)))
            if held is not None
            else PairLabel(None, None, NOT_DONE, None, not_done=tuple(sorted(given)))
        )
    return out


KindGrade = tuple[str, int]
# The first two raters' assignments (labeling.services checks a query when both are done).
DUAL_KINDS = (Assignment.Kind.PRIMARY, Assignment.Kind.SECOND)


def third_counted(items: list[T], *, key: Callable[[T], KindGrade]) -> list[T]:
    """One document's grades without the third rater's where the first two raters do not disagree.

    A third rater is there for the documents the first two disagree on, and only there does their
    grade count. A rater who checked the query's gold items before becoming its third rater keeps
    them in their (third) assignment's scope; their grades on those stay gold checks, as they were:
    they make no label and show in no reviewer column, but count in the agreement figures."""
    dual = {grade for kind, grade in map(key, items) if kind in DUAL_KINDS}
    if len(dual) > 1:
        return items
    return [item for item in items if key(item)[0] != Assignment.Kind.THIRD]


def _pair_label(
    graded: list[_Graded],
    adjudication: tuple[int, Any, str] | None,
    *,
    expected: int,
    third_coming: bool,
    scale: Scale,
    frozen: int | None,
) -> PairLabel:
    rejudged = [g for g in graded if g.kind == REJUDGE]
    if rejudged:
        latest = max(rejudged, key=lambda g: (g.updated, g.pk))
        basis, expected = [latest], 1
        if adjudication is not None and adjudication[1] < latest.updated:
            adjudication = None  # decided on the content before it changed
    else:
        basis = sorted(graded)  # by pk: in the order they were first given, for a stable reason
    grades = tuple([g.grade for g in basis])
    try:
        final = _consolidate(
            grades, adjudication=adjudication[0] if adjudication else None, expected=expected, scale=scale
        )
    except ValueError as exc:  # a grade off the current rubric's scale (the rubric changed since)
        return PairLabel(None, None, f"cannot consolidate: {exc}", "reviewer", grades=grades)
    if final.grade is not None and final.method == "single" and frozen is not None and final.grade != frozen:
        # One rater's overturn of a frozen label is a proposal (LabelProposal) until a reviewer accepts
        # it (an adjudication): the label stays what was frozen.
        return PairLabel(frozen, FROZEN, grades=grades, held=final.grade)
    if final.grade is not None:
        if final.method == "adjudicated" and adjudication is not None:
            digest = adjudication[2] or None
        else:
            digest = _judged_hash(basis)
        return PairLabel(final.grade, final.method, content_hash=digest, grades=grades)
    reason, awaiting = final.unresolved_reason, final.awaiting
    if awaiting == "third_rater" and not third_coming:
        reason = f"{reason.removesuffix(': awaiting third rater') if reason else 'grades disagree'}: "
        reason += "no third rater is available, a reviewer decides"
        awaiting = "reviewer"
    return PairLabel(None, None, reason, awaiting, grades=grades)


def _judged_hash(basis: list[_Graded]) -> str | None:
    """The content the grades were given on; when they were given on different content, the first
    judgment's (so that the label reads as stale against the current content)."""
    known = [g for g in basis if g.content_hash]  # basis is in pk order
    return known[0].content_hash if known else None
