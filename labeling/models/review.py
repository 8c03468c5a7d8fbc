"""Agreement and adjudication (docs/agreement.md): tier moves, adjudications, dispute checks, gold items,
label proposals, calibration rounds.

Part of `labeling.models` (which imports every model, as Django requires).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from labeling.models.grading import Judgment
from labeling.models.sets import Document, GoldenSet, Query

# --- agreement and adjudication (docs/agreement.md): each decision is a row of its own; judgments are never
# changed


class TierMove(models.Model):
    """A query's move between tiers, or out of the set (retired): who, when, from, to and why.

    `by` is None for moves the system made (a dispute check quarantining a query, a golden-file import).
    """

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="tier_moves")
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="tier_moves"
    )
    at = models.DateTimeField(auto_now_add=True)
    from_tier = models.CharField(max_length=10, choices=Query.Tier.choices)
    to_tier = models.CharField(max_length=10, choices=Query.Tier.choices)
    from_status = models.CharField(max_length=10, choices=Query.Status.choices, default=Query.Status.ACTIVE)
    to_status = models.CharField(max_length=10, choices=Query.Status.choices, default=Query.Status.ACTIVE)
    reason = models.TextField()

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.query_id}: {self.from_tier}/{self.from_status} → {self.to_tier}/{self.to_status}"


class Adjudication(models.Model):
    """A reviewer's final grade for one (query, document), with the rationale. The newest one counts;
    earlier ones stay as the record."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="adjudications")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="adjudications")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications"
    )
    grade = models.IntegerField()
    rationale = models.TextField()
    content_hash = models.CharField(
        max_length=64, blank=True, help_text="the document's content when decided"
    )
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["query", "document"], name="adjudication_query_document")]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id}={self.grade} by {self.reviewer_id}"


class DisputeCheck(models.Model):
    """The dispute rules applied to a query when its dual assignment completed, and what followed.

    One row per distinct input (`fingerprint`: the grades and thresholds it was decided on), so checking
    the same grades again finds the row instead of acting twice.
    """

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="dispute_checks")
    fingerprint = models.CharField(max_length=64)
    at = models.DateTimeField(auto_now_add=True)
    disputed = models.BooleanField()
    reasons = models.JSONField(default=list)  # sentences with the numbers (assay.labels.disputes)
    disagreeing = models.JSONField(default=list)  # doc ids whose two grades differ
    agreement = models.JSONField(default=dict)  # QueryAgreement.to_dict()
    actions = models.JSONField(default=list)  # what the check did: moved to shadow, third rater, ...

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "fingerprint"], name="dispute_check_query_fingerprint"),
        ]
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.query_id}: {'disputed' if self.disputed else 'clear'}"


class GoldItem(models.Model):
    """A known answer for (query, document), set by a reviewer. Raters meet it as an ordinary candidate;
    their grades on it measure them and make no label."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="gold_items")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="gold_items")
    grade = models.IntegerField()
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="gold_items")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "document"], name="gold_item_query_document_unique"),
        ]
        ordering = ["query", "document"]

    def __str__(self) -> str:
        return f"gold {self.query_id}/{self.document_id}={self.grade}"


class LabelProposal(models.Model):
    """A single rater's grade that would overturn a frozen label: it changes no label until a reviewer of
    the set accepts it (an accepted proposal becomes an `Adjudication` naming the rater and the reviewer).

    Made when the rater marks the query done (`services.assignment_done`); a pending one is withdrawn
    as soon as the judgment's grade is no longer the proposed one (the rater regraded after a reopen).
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        REJECTED = "rejected"
        WITHDRAWN = "withdrawn"

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="proposals")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="proposals")
    judgment = models.ForeignKey(Judgment, on_delete=models.CASCADE, related_name="proposals")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="proposals")
    from_grade = models.IntegerField(help_text="the frozen label when proposed")
    from_version = models.CharField(max_length=100, blank=True, help_text="the frozen labels' version")
    to_grade = models.IntegerField()
    note = models.TextField(blank=True, help_text="the rater's note on the grade")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="proposals_decided",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    adjudication = models.OneToOneField(
        Adjudication, null=True, blank=True, on_delete=models.PROTECT, related_name="proposal"
    )

    class Meta:
        constraints = [
            # One live proposal per judgment: marking the same query done twice proposes nothing new.
            models.UniqueConstraint(
                fields=["judgment"], condition=Q(status="pending"), name="proposal_one_pending_per_judgment"
            ),
        ]
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["query", "status"], name="proposal_query_status")]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id}: {self.from_grade} → {self.to_grade} ({self.status})"


class CalibrationRound(models.Model):
    """N raters grading the same queries blind, every candidate each, to measure the rubric before a
    labeling push. Its assignments are `kind=calibration`; it changes no label unless a reviewer promotes
    its results (`promoted_by`, `promoted_at`: each promoted grade is an `Adjudication` naming the round)."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="calibration_rounds")
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="calibration_rounds"
    )
    created = models.DateTimeField(auto_now_add=True)
    promoted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="calibration_rounds_promoted",
    )
    promoted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["golden_set", "name"], name="calibration_round_set_name_unique"),
        ]
        ordering = ["golden_set", "-created", "-id"]

    def __str__(self) -> str:
        return f"{self.golden_set_id}: {self.name}"


# Machine judges (docs/judge.md): an LLM grading the set's pairs through an OpenAI-compatible endpoint.
# Their grades are `JudgeLabel` rows, apart from the raters' `Judgment` rows, so nothing that reads human
# grades (agreement, disputes) counts them. A qualified judge's labels count only through
# `labeling.selectors.judge_scope` (consolidation's fill-ins, freeze, export, the report, pre-grading).
