"""What reviewers (and the dispute check) do: tier moves, retirement, adjudication, proposal decisions,
dispute thresholds and checks, third raters, re-judgments, gold items (docs/agreement.md, "In the app").

Raw judgments are never changed here: a tier move, a dispute decision, an adjudication and a gold
answer are each rows of their own (TierMove, DisputeCheck, Adjudication, GoldItem).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from assay.display import counted, in_number
from assay.golden.model import Scale
from assay.labels.agreement import ReadingThresholds
from assay.labels.disputes import DocGrades, Thresholds, choose_third_rater, query_dispute
from labeling.models import (
    Adjudication,
    Assignment,
    Candidate,
    DisputeCheck,
    Document,
    GoldenSet,
    GoldItem,
    Judgment,
    LabelProposal,
    Query,
    TierMove,
)
from labeling.roles import raters_of
from labeling.selectors import DUAL_KINDS, assignments_retirement_closed
from labeling.services.assignments import AssignmentError, _refresh_completion, gold_distribute
from labeling.services.grading import MAX_NOTE
from labeling.services.judge_qualification import drift_check_schedule


class ReviewError(Exception):
    """A reviewer action that breaks a rule; the message names the field or the rule."""


def _reason(text: str, what: str, *, limit: int | None = None) -> str:
    text = text.strip()
    if not text:
        raise ReviewError(f"{what}: say why (it is kept with the record)")
    if limit is not None and len(text) > limit:
        raise ReviewError(f"{what}: longer than {limit} characters")
    return text


@transaction.atomic
def query_move_tier(*, query: Query, tier: str, by: User | None, reason: str) -> TierMove | None:
    """Move an active query to `tier`, recording who (None: the system), when, from, to and why.

    Moving to shadow sets the query's quarantine reason; moving out of shadow clears it (the TierMove
    rows keep every reason). A query already in `tier` is left alone: None, nothing recorded.
    """
    if tier not in Query.Tier.values:
        raise ReviewError(f"tier: {tier!r} is not one of {', '.join(Query.Tier.values)}")
    reason = _reason(reason, "reason")
    locked = Query.objects.select_for_update().get(pk=query.pk)
    if locked.status != Query.Status.ACTIVE:
        raise ReviewError(f"query {locked.external_id} is retired: it has no tier to move")
    if locked.tier == tier:
        return None
    move = TierMove.objects.create(query=locked, by=by, from_tier=locked.tier, to_tier=tier, reason=reason)
    locked.tier = tier
    locked.quarantine_reason = reason if tier == Query.Tier.SHADOW else ""
    locked.save(update_fields=["tier", "quarantine_reason"])
    query.tier, query.quarantine_reason = locked.tier, locked.quarantine_reason
    return move


@transaction.atomic
def query_retire(*, query: Query, by: User, reason: str) -> TierMove:
    """Take a query out of the set (status retired; its judgments stay). Recorded like a tier move.

    Its open assignments close the way a reassignment closes one (status `reassigned`: out of every
    queue and count, grades refused), stamped `completed` with the retirement's time, so that bringing
    the query back (`retired_work_reopen`) reopens exactly these. Finished ones stay as they are.
    """
    reason = _reason(reason, "reason")
    locked = Query.objects.select_for_update().get(pk=query.pk)
    if locked.status == Query.Status.RETIRED:
        raise ReviewError(f"query {locked.external_id} is already retired")
    move = TierMove.objects.create(
        query=locked,
        by=by,
        from_tier=locked.tier,
        to_tier=locked.tier,
        from_status=locked.status,
        to_status=Query.Status.RETIRED,
        reason=reason,
    )
    locked.status = Query.Status.RETIRED
    locked.save(update_fields=["status"])
    query.status = locked.status
    Assignment.objects.filter(query=locked, status=Assignment.Status.OPEN).update(
        status=Assignment.Status.REASSIGNED, completed=move.at
    )
    return move


def retired_work_reopen(*, queries: Sequence[Query]) -> int:
    """Retired queries come back: the assignments their retirement closed are open again; returns how
    many. Call it once the queries are active: golden_io's golden-file import does, for the queries the
    file brings back. Beside `query_retire`, whose stamp on the closed assignments it reads
    (`labeling.selectors.assignments_retirement_closed`)."""
    closed = assignments_retirement_closed(query_ids=[query.pk for query in queries])
    return Assignment.objects.filter(pk__in=closed, status=Assignment.Status.REASSIGNED).update(
        status=Assignment.Status.OPEN, completed=None
    )


@transaction.atomic
def adjudication_create(
    *,
    query: Query,
    document: Document,
    reviewer: User,
    grade: int,
    rationale: str,
    watch: bool = True,
) -> Adjudication:
    """A reviewer's final grade for one judged document of an active query, with a required rationale.

    It becomes the final label (method `adjudicated`) until a newer adjudication or a re-judgment of
    changed content. The raters' judgments stay as they are. A human label landed: the set's qualified
    judges are checked against it after the commit (`watch=False`: the caller schedules that check once
    for a batch, as a calibration round's promotion does).
    """
    rubric = query.golden_set.rubric
    if type(grade) is not int or not rubric.scale_min <= grade <= rubric.scale_max:
        raise ReviewError(f"grade: {grade!r} is outside the scale {rubric.scale_min}..{rubric.scale_max}")
    rationale = _reason(rationale, "rationale", limit=MAX_NOTE)
    if query.status != Query.Status.ACTIVE:
        raise ReviewError(f"query {query.external_id} is retired: nothing to adjudicate")
    if document.golden_set_id != query.golden_set_id or not (
        Judgment.objects.filter(assignment__query=query, document=document).exists()
        or Candidate.objects.filter(query=query, document=document).exists()
    ):
        raise ReviewError(f"document {document.doc_id} is not in the pool of query {query.external_id}")
    adjudication = Adjudication.objects.create(
        query=query,
        document=document,
        reviewer=reviewer,
        grade=grade,
        rationale=rationale,
        content_hash=document.content_hash,
    )
    if watch:
        drift_check_schedule(golden_set_id=query.golden_set_id)
    return adjudication


@transaction.atomic
def proposal_decide(*, proposal: LabelProposal, by: User, accept: bool, rationale: str) -> LabelProposal:
    """Accept (the proposed grade becomes the final label: an `Adjudication` by `by`, naming the rater)
    or reject (the frozen label stays) a pending proposal, with a rationale kept on the record."""
    locked = (
        LabelProposal.objects.select_for_update(of=("self",))
        .select_related("query__golden_set__rubric", "document", "rater", "decided_by")
        .get(pk=proposal.pk)
    )
    if locked.status != LabelProposal.Status.PENDING:
        raise ReviewError(_decided(locked))
    rationale = _reason(rationale, "rationale", limit=MAX_NOTE)
    if accept:
        locked.adjudication = adjudication_create(
            query=locked.query,
            document=locked.document,
            reviewer=by,
            grade=locked.to_grade,
            rationale=(
                f"accepted {locked.rater.username}'s proposed change {locked.from_grade} → {locked.to_grade}"
                f" (proposal {locked.pk}): {rationale}"
            ),
        )
    locked.status = LabelProposal.Status.ACCEPTED if accept else LabelProposal.Status.REJECTED
    locked.decided_by, locked.decided_at, locked.rationale = by, timezone.now(), rationale
    locked.save(update_fields=["status", "decided_by", "decided_at", "rationale", "adjudication"])
    return locked


def _decided(proposal: LabelProposal) -> str:
    if proposal.status == LabelProposal.Status.WITHDRAWN:
        return f"proposal {proposal.pk} was withdrawn (the rater changed that grade): nothing changed"
    when = timezone.localtime(proposal.decided_at).strftime("%Y-%m-%d %H:%M") if proposal.decided_at else "?"
    by = proposal.decided_by.username if proposal.decided_by else "?"
    return f"proposal {proposal.pk} was already {proposal.status} by {by} at {when}: nothing changed"


@transaction.atomic
def proposals_decide_query(*, query: Query, by: User, accept: bool, rationale: str) -> int:
    """Accept or reject every pending proposal of one query with one rationale; how many."""
    pending = list(
        LabelProposal.objects.select_for_update()
        .filter(query=query, status=LabelProposal.Status.PENDING)
        .order_by("id")
    )
    if not pending:
        raise ReviewError(f"query {query.external_id} has no pending proposals: nothing changed")
    for proposal in pending:
        proposal_decide(proposal=proposal, by=by, accept=accept, rationale=rationale)
    return len(pending)


def thresholds_of(golden_set: GoldenSet) -> Thresholds:
    return Thresholds(
        hard_diff=golden_set.hard_diff,
        min_dual_docs=golden_set.min_dual_docs,
        min_exact=golden_set.min_exact,
        max_mad=golden_set.max_mad,
    )


def golden_set_thresholds_set(*, golden_set: GoldenSet, thresholds: Mapping[str, Any]) -> Thresholds:
    """Change the set's dispute thresholds and reading thresholds (`reliable_min`, `tentative_min`,
    `min_pairable_units`; absent keys keep their values). Dispute thresholds apply to later checks,
    decisions already taken stay as they were; the readings follow on every page at once."""
    reading_keys = {f.name for f in fields(ReadingThresholds)}
    readings = {name: value for name, value in thresholds.items() if name in reading_keys}
    disputes = {name: value for name, value in thresholds.items() if name not in reading_keys}
    stored = {name: getattr(golden_set, name) for name in reading_keys}
    problems = []
    try:
        new = Thresholds.from_mapping({**thresholds_of(golden_set).to_dict(), **disputes})
    except (TypeError, ValueError) as exc:
        problems.append(str(exc))
    try:
        reading = ReadingThresholds(**{**stored, **readings})
    except ValueError as exc:
        problems.append(str(exc))
    if problems:
        raise ReviewError("; ".join(problems))
    changed = {**new.to_dict(), **reading.to_dict()}
    for name, value in changed.items():
        setattr(golden_set, name, value)
    golden_set.save(update_fields=list(changed))
    return new


@transaction.atomic
def query_dispute_check(*, query_id: int) -> DisputeCheck | None:
    """Apply the dispute rules once the query's primary and second assignments are both done.

    On the two raters' grades (`assay.labels.disputes.query_dispute`, with the set's thresholds and, for
    "top results", candidates whose best rank is within the set's k or unknown): a disputed core query
    moves to shadow with the reasons; every document whose grades differ goes to a third rater who never
    held the query (`choose_third_rater`), or, when nobody is left, to the reviewers. Idempotent: the
    decision is stored with a fingerprint of what it was decided on, and the same input finds that row
    and does nothing. None when the query is not (or no longer) ready: retired, or a dual assignment
    still open.
    """
    # The query row lock serialises the two raters' completions: whichever commits second sees both done.
    query = Query.objects.select_for_update().select_related("golden_set__rubric").get(pk=query_id)
    if query.status != Query.Status.ACTIVE:
        return None
    live = list(Assignment.objects.filter(query=query).exclude(status=Assignment.Status.REASSIGNED))
    dual = [a for a in live if a.kind in DUAL_KINDS]
    if {a.kind for a in dual} != set(DUAL_KINDS) or any(a.status != Assignment.Status.DONE for a in dual):
        return None
    golden_set, rubric = query.golden_set, query.golden_set.rubric
    grades: dict[int, list[int]] = {}
    for document_id, grade in Judgment.objects.filter(assignment__in=dual).values_list(
        "document_id", "grade"
    ):
        grades.setdefault(document_id, []).append(grade)
    candidates = {
        document_id: (pk, doc_id, best_rank)
        for pk, document_id, doc_id, best_rank in Candidate.objects.filter(
            query=query, document_id__in=list(grades)
        ).values_list("pk", "document_id", "document__doc_id", "best_rank")
    }
    docs = sorted(
        (
            DocGrades(
                doc_id, tuple(sorted(grades[document_id])), best_rank is None or best_rank <= golden_set.k
            )
            for document_id, (_, doc_id, best_rank) in candidates.items()
        ),
        key=lambda d: d.doc_id,
    )
    thresholds = thresholds_of(golden_set)
    decision = query_dispute(
        docs,
        relevant_min_grade=golden_set.relevant_min_grade,
        thresholds=thresholds,
        scale=Scale(rubric.scale_min, rubric.scale_max),
        query_id=query.external_id,
    )
    fingerprint = hashlib.sha256(
        json.dumps(
            {
                "docs": [[d.doc_id, list(d.grades), d.in_top] for d in docs],
                "thresholds": thresholds.to_dict(),
                "relevant_min_grade": golden_set.relevant_min_grade,
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()
    existing = DisputeCheck.objects.filter(query=query, fingerprint=fingerprint).first()
    if existing is not None:
        return existing
    actions: list[str] = []
    if decision.disputed and query.tier == Query.Tier.CORE:
        query_move_tier(
            query=query, tier=Query.Tier.SHADOW, by=None, reason="disputed: " + "; ".join(decision.reasons)
        )
        actions.append("moved to shadow")
    if decision.disagreeing_docs:
        by_doc_id = {doc_id: pk for pk, doc_id, _ in candidates.values()}
        actions.append(
            _third_rater_assign(query=query, candidate_ids=[by_doc_id[d] for d in decision.disagreeing_docs])
        )
    return DisputeCheck.objects.create(
        query=query,
        fingerprint=fingerprint,
        disputed=decision.disputed,
        reasons=list(decision.reasons),
        disagreeing=list(decision.disagreeing_docs),
        agreement=decision.agreement.to_dict(),
        actions=actions,
    )


def _third_rater_assign(*, query: Query, candidate_ids: Sequence[int]) -> str:
    """Scope (or extend) the query's third assignment to these candidates; what was done, in words."""
    third = (
        Assignment.objects.select_for_update()
        .filter(query=query, kind=Assignment.Kind.THIRD)
        .exclude(status=Assignment.Status.REASSIGNED)
        .select_related("rater")
        .first()
    )
    if third is None:
        # Everyone who ever held the query is out (nobody grades a query twice, a database constraint),
        # except a rater who only checked its gold items: their `gold` assignment becomes the third one,
        # unless one of these documents is among their gold items (they would grade it twice). The first
        # two raters hold primary and second assignments, so they stay out.
        gold_checkers = {
            a.rater_id: a
            for a in Assignment.objects.select_for_update()
            .filter(query=query, kind=Assignment.Kind.GOLD)
            .exclude(status=Assignment.Status.REASSIGNED)
        }
        overlapping = set(
            Assignment.objects.filter(
                pk__in=[a.pk for a in gold_checkers.values()], scope__in=list(candidate_ids)
            ).values_list("rater_id", flat=True)
        )
        convertible = gold_checkers.keys() - overlapping
        held = (
            set(Assignment.objects.everyday().filter(query=query).values_list("rater_id", flat=True))
            - convertible
        )
        raters = {r.pk: r for r in raters_of(query.golden_set)}
        load = dict(
            Assignment.objects.filter(
                query__golden_set_id=query.golden_set_id,
                status=Assignment.Status.OPEN,
                rater_id__in=list(raters),
            )
            .order_by()
            .values("rater")
            .annotate(n=Count("id"))
            .values_list("rater", "n")
        )
        chosen = choose_third_rater(sorted(raters), held, load)
        if chosen is None:
            return (
                f"no third rater available (every rater of the set has held the query): "
                f"{counted(len(candidate_ids), 'document')} {in_number(len(candidate_ids), 'goes', 'go')}"
                " to the reviewers"
            )
        if chosen in convertible:
            # Their gold items stay in scope (an ungraded one is still to grade) and stay gold checks:
            # consolidation counts a third rater's grade only where the first two disagree.
            third = gold_checkers[chosen]
            third.kind = Assignment.Kind.THIRD
            third.save(update_fields=["kind"])
        else:
            third = Assignment.objects.create(query=query, rater=raters[chosen], kind=Assignment.Kind.THIRD)
    before = set(third.scope.values_list("pk", flat=True))
    added = [pk for pk in candidate_ids if pk not in before]
    third.scope.add(*added)
    _refresh_completion(third)
    return f"third rater {third.rater.username}: {counted(len(added), 'document')}"


def disputes_check_all(*, golden_set: GoldenSet) -> int:
    """Check every active query whose dual assignments are done (e.g. finished before this check
    existed, or after the thresholds changed); returns how many checks were new."""
    ready = (
        Assignment.objects.filter(
            query__golden_set=golden_set,
            query__status=Query.Status.ACTIVE,
            kind=Assignment.Kind.SECOND,
            status=Assignment.Status.DONE,
        )
        .values_list("query_id", flat=True)
        .order_by("query_id")
    )
    before = DisputeCheck.objects.filter(query__golden_set=golden_set).count()
    for query_id in ready:
        query_dispute_check(query_id=query_id)
    return DisputeCheck.objects.filter(query__golden_set=golden_set).count() - before


@transaction.atomic
def assignment_rejudge_create(*, query: Query, rater: User, documents: Sequence[Document]) -> Assignment:
    """A re-judgment of changed documents: scoped to their candidates; its grades replace the earlier
    ones in consolidation instead of reading as a disagreement. The documents must be in the pool."""
    candidates = list(Candidate.objects.filter(query=query, document__in=list(documents)))
    missing = sorted({d.doc_id for d in documents} - {c.document.doc_id for c in candidates})
    if missing:
        raise AssignmentError(f"not in the pool of query {query.external_id}: {', '.join(missing)}")
    if not candidates:
        raise AssignmentError("a re-judgment needs at least one document")
    if Assignment.objects.everyday().filter(query=query, rater=rater).exists():
        raise AssignmentError(
            f"{rater} has held query {query.external_id} before; nobody grades a query twice"
        )
    assignment = Assignment.objects.create(query=query, rater=rater, kind=Assignment.Kind.REJUDGE)
    assignment.scope.set(candidates)
    return assignment


@transaction.atomic
def gold_mark(*, query: Query, document: Document, grade: int, by: User) -> GoldItem:
    """Make (query, document) a gold item with the known answer `grade` (again: a new answer), and mix
    it into the queues of the set's raters who do not hold the query yet."""
    rubric = query.golden_set.rubric
    if type(grade) is not int or not rubric.scale_min <= grade <= rubric.scale_max:
        raise ReviewError(f"grade: {grade!r} is outside the scale {rubric.scale_min}..{rubric.scale_max}")
    if query.status != Query.Status.ACTIVE:
        raise ReviewError(f"query {query.external_id} is retired")
    if not Candidate.objects.filter(query=query, document=document).exists():
        raise ReviewError(f"document {document.doc_id} is not in the pool of query {query.external_id}")
    item, _ = GoldItem.objects.update_or_create(
        query=query, document=document, defaults={"grade": grade, "by": by}
    )
    gold_distribute(golden_set=query.golden_set, query_ids=[query.pk])
    return item


@transaction.atomic
def gold_unmark(*, query: Query, document: Document) -> bool:
    """No longer a gold item. Gold assignments not yet graded (or marked can't judge) on it lose it; an
    emptied one is removed, or closed (`reassigned`) when it has a history to keep; grades and marks
    already given stay. False when it was not a gold item."""
    deleted, _ = GoldItem.objects.filter(query=query, document=document).delete()
    if not deleted:
        return False
    candidate = Candidate.objects.get(query=query, document=document)
    # A gold checker who became the query's third rater holds the item in a `third` assignment; it
    # stays there only when it is a document the first two disagree on (what the third rater is for).
    kinds = [Assignment.Kind.GOLD]
    if len(set(_dual_grades(query=query, document=document))) < 2:
        kinds.append(Assignment.Kind.THIRD)
    holders = Assignment.objects.select_for_update().filter(query=query, kind__in=kinds, scope=candidate)
    for assignment in holders:
        if (
            Judgment.objects.filter(assignment=assignment, document=document).exists()
            or assignment.cant_judge_marks.filter(document=document).exists()
        ):
            continue
        assignment.scope.remove(candidate)
        if assignment.scope.exists() or assignment.judgments.exists() or assignment.cant_judge_marks.exists():
            _refresh_completion(assignment)
        elif assignment.events.exists():
            # A grade given and undone: nothing to grade any more, but its history stays.
            assignment.status = Assignment.Status.REASSIGNED
            assignment.save(update_fields=["status"])
        else:
            assignment.delete()
    return True


def _dual_grades(*, query: Query, document: Document) -> list[int]:
    """The live primary and second grades of one document."""
    return list(
        Judgment.objects.filter(assignment__query=query, assignment__kind__in=DUAL_KINDS, document=document)
        .exclude(assignment__status=Assignment.Status.REASSIGNED)
        .values_list("grade", flat=True)
    )
