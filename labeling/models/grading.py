"""A rater's work: assignments, judgments, can't-judge marks and the judgment events (each change of
a grade, docs/labeling.md).

Part of `labeling.models` (which imports every model, as Django requires).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from labeling.models.sets import Candidate, Document, Query


class AssignmentQuerySet(models.QuerySet["Assignment"]):
    def everyday(self) -> AssignmentQuerySet:
        """Without calibration rounds' assignments: the work that makes labels, disputes and the everyday
        agreement figures, and decides who has held a query."""
        return self.filter(calibration_round__isnull=True)


class Assignment(models.Model):
    class Kind(models.TextChoices):
        PRIMARY = "primary"
        SECOND = "second"
        THIRD = "third"
        # A changed document judged again: its grade replaces the earlier ones in consolidation.
        REJUDGE = "rejudge"
        # Known-answer items mixed into a rater's queue; they check the rater and make no label.
        GOLD = "gold"
        # A calibration round's: every candidate graded blind by each of the round's raters, to measure
        # the rubric; no label unless a reviewer promotes the round (`CalibrationRound`).
        CALIBRATION = "calibration"

    class Status(models.TextChoices):
        OPEN = "open"
        DONE = "done"
        REASSIGNED = "reassigned"

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments")
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.PRIMARY)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    # Empty: the whole pool. Otherwise only these candidates (a third rater on disagreeing documents).
    scope = models.ManyToManyField(Candidate, blank=True, related_name="scoped_assignments")
    # Set for kind=calibration only: the round it belongs to.
    calibration_round = models.ForeignKey(
        "CalibrationRound", null=True, blank=True, on_delete=models.CASCADE, related_name="assignments"
    )
    created = models.DateTimeField(auto_now_add=True)
    # When the rater marked the query done (status done): their grades are locked from then on.
    completed = models.DateTimeField(null=True, blank=True)
    # When a done query was last given back (a reviewer's reopen, or its pool grew); empty if never. The
    # rater's queue calls an open assignment with one "reopened".
    reopened = models.DateTimeField(null=True, blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        constraints = [
            # Nobody is assigned the same query twice, whatever happens to the first assignment. A
            # calibration round is apart: its raters grade the query once more, for the round only.
            models.UniqueConstraint(
                fields=["query", "rater"],
                condition=Q(calibration_round__isnull=True),
                name="assignment_query_rater_unique",
            ),
            models.UniqueConstraint(
                fields=["calibration_round", "query", "rater"],
                condition=Q(calibration_round__isnull=False),
                name="assignment_round_query_rater_unique",
            ),
            models.CheckConstraint(
                condition=Q(kind="calibration", calibration_round__isnull=False)
                | (~Q(kind="calibration") & Q(calibration_round__isnull=True)),
                name="assignment_calibration_has_round",
            ),
        ]
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["rater", "status"], name="assignment_rater_status")]

    def __str__(self) -> str:
        return f"{self.query_id} → {self.rater_id} ({self.kind}, {self.status})"


class Judgment(models.Model):
    """A rater's current grade for one document of an assignment; every change is a JudgmentEvent."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="judgments")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="judgments")
    grade = models.IntegerField()
    note = models.TextField(blank=True)
    time_spent_ms = models.PositiveIntegerField(default=0, help_text="total over every save of this item")
    # The document's content hash when this grade was saved ("" for grades saved before it was recorded).
    content_hash = models.CharField(max_length=64, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "document"], name="judgment_assignment_document_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.assignment_id}/{self.document_id}={self.grade}"


class CantJudgeMark(models.Model):
    """A rater's "can't judge" on one document of an assignment, with the reason: not a grade.

    Kept apart from `Judgment` so that nothing reading grades (progress, agreement, disputes,
    consolidation, freeze, export) can count it as one. A document of an assignment holds a judgment or a
    mark or neither, never both: `services.judgment_submit` replaces one with the other under the
    assignment's row lock, and `JudgmentEvent` records every change between them.
    """

    class Reason(models.TextChoices):
        BROKEN = "broken", "broken page"
        FOREIGN_LANGUAGE = "foreign-language", "foreign language"
        NEEDS_CONTEXT = "needs-context", "needs context"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="cant_judge_marks")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="cant_judge_marks")
    reason = models.CharField(max_length=20, choices=Reason.choices)
    note = models.TextField(blank=True)
    time_spent_ms = models.PositiveIntegerField(default=0, help_text="total over every save of this mark")
    content_hash = models.CharField(max_length=64, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "document"], name="cant_judge_assignment_document_unique"
            ),
        ]
        verbose_name = "can't-judge mark"

    def __str__(self) -> str:
        return f"{self.assignment_id}/{self.document_id}: can't judge ({self.reason})"


class JudgmentEvent(models.Model):
    """The audit trail of one document of an assignment: who changed it when, from what to what. A state
    is a grade, a can't-judge mark (its reason) or neither. Never updated or deleted by the app.

    `judgment` is the grade this event left (empty when the event left a mark or nothing: the judgment
    row is gone, its history stays here by assignment and document). `undo` marks a change the rater
    made with `u`, restoring the document's state before their last change."""

    judgment = models.ForeignKey(
        Judgment, null=True, blank=True, on_delete=models.SET_NULL, related_name="events"
    )
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="events")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="judgment_events")
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgment_events"
    )
    at = models.DateTimeField(auto_now_add=True)
    old_grade = models.IntegerField(null=True, blank=True)
    new_grade = models.IntegerField(null=True, blank=True)
    old_cant_judge = models.CharField(max_length=20, blank=True, choices=CantJudgeMark.Reason.choices)
    new_cant_judge = models.CharField(max_length=20, blank=True, choices=CantJudgeMark.Reason.choices)
    note = models.TextField(blank=True)
    time_spent_ms = models.PositiveIntegerField(default=0)
    content_hash = models.CharField(max_length=64, blank=True)
    undo = models.BooleanField(default=False)

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(new_grade__isnull=True) | Q(new_cant_judge=""),
                name="judgment_event_one_new_state",
            ),
        ]
        indexes = [
            models.Index(fields=["rater", "at"], name="judgment_event_rater_at"),
            # /metrics counts the last minute's saves at every scrape (config/metrics_collector.py).
            models.Index(fields=["at"], name="judgment_event_at"),
        ]

    def __str__(self) -> str:
        return f"{self.assignment_id}/{self.document_id}: {self.old_state} → {self.new_state}"

    @staticmethod
    def state_text(grade: int | None, cant_judge: str) -> str:
        if grade is not None:
            return str(grade)
        return f"can't judge ({CantJudgeMark.Reason(cant_judge).label})" if cant_judge else "no grade"

    @property
    def old_state(self) -> str:
        return self.state_text(self.old_grade, self.old_cant_judge)

    @property
    def new_state(self) -> str:
        return self.state_text(self.new_grade, self.new_cant_judge)
