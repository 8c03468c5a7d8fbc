"""Golden sets and everything raters touch: rubric, queries, documents, pools, assignments, judgments.

Single-row behaviour only; writes that span rows live in `labeling.services`, reads in
`labeling.selectors` (docs/labeling.md). Other apps write some of these rows through their own services:
golden_io writes every `FrozenLabel` (the golden-file import and the golden-version freeze,
`golden_io.services`; labeling only reads them), and an evaluation run extends a pool through
`labeling.services.candidates_add` with its own provenance. The dispute check reads `Judgment` rows
grouped by (query, document) and creates `kind=third` assignments scoped to the disagreeing candidates
(docs/agreement.md).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

# The thresholds' type only (numpy, not the statistics' scikit-learn): models load in every process.
from assay.harness import MAX_CONCURRENCY
from assay.labels.agreement_types import ReadingThresholds, reading_thresholds_errors
from assay.secrets import secret_env_name_problem

CONTENT_FIELDS = ("title", "url", "snippet", "body", "fields")


def content_hash(values: dict[str, Any]) -> str:
    """sha256 over the content fields in a canonical JSON form: equal content, equal hash, across imports."""
    canonical = json.dumps(
        {name: values.get(name) or ("" if name != "fields" else {}) for name in CONTENT_FIELDS},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class Rubric(models.Model):
    """A versioned rubric; a change is a new row with the next version, never an edit in place."""

    name = models.SlugField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    scale_min = models.IntegerField(default=0)
    scale_max = models.IntegerField(default=3)
    # [{"grade", "label", "meaning", "positive_examples": [3], "negative_examples": [3]}], highest first.
    grades = models.JSONField(default=list)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="rubric_name_version_unique"),
            models.CheckConstraint(
                condition=Q(scale_min__lt=models.F("scale_max")), name="rubric_scale_order"
            ),
        ]
        ordering = ["name", "-version"]

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def scale(self) -> range:
        return range(self.scale_min, self.scale_max + 1)

    @property
    def grades_desc(self) -> list[dict[str, Any]]:
        return sorted(self.grades, key=lambda g: -int(g["grade"]))


class GoldenSet(models.Model):
    """A product surface and locale scope: judgments are only valid within it."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    surface = models.CharField(max_length=100, help_text="the product surface, e.g. help-center")
    locales = models.JSONField(default=list, blank=True, help_text="locale scope; empty means any locale")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="golden_sets")
    k = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)])
    relevant_min_grade = models.IntegerField(default=2)
    dual_rate = models.FloatField(
        default=0.2,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="share of queries that also go to a second rater",
    )
    # Dispute thresholds, read by the dispute check (docs/agreement.md, "Dispute rules", has the defaults).
    hard_diff = models.PositiveIntegerField(default=2)
    min_dual_docs = models.PositiveIntegerField(default=5)
    min_exact = models.FloatField(default=0.55)
    max_mad = models.FloatField(default=0.45)
    # Agreement readings (docs/agreement.md, "Readings"): "reliable" when the interval's lower bound
    # reaches reliable_min, "tentative" when it reaches tentative_min, "unreliable" when its upper bound is
    # below tentative_min, "not enough data" otherwise or with fewer than min_pairable_units queries to
    # resample (`reading_thresholds`).
    reliable_min = models.FloatField(default=0.8)
    tentative_min = models.FloatField(default=0.667)
    min_pairable_units = models.PositiveIntegerField(default=10)
    # The version name of the current frozen labels (FrozenLabel rows), "" before any import.
    frozen_version = models.CharField(max_length=100, blank=True)
    reviewers = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="reviewed_sets")
    raters = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="rated_sets")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(dual_rate__gte=0) & Q(dual_rate__lte=1), name="dual_rate_0_1"),
        ]
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name

    def in_scope(self, locale: str | None) -> bool:
        return not self.locales or locale in self.locales

    @property
    def reading_thresholds(self) -> ReadingThresholds:
        return ReadingThresholds(
            reliable_min=self.reliable_min,
            tentative_min=self.tentative_min,
            min_pairable_units=self.min_pairable_units,
        )

    def clean(self) -> None:
        # Forms that edit the row (the admin's) refuse thresholds the readings could not use.
        errors = reading_thresholds_errors(self.reliable_min, self.tentative_min, self.min_pairable_units)
        if errors:
            raise ValidationError(errors)


class SecretGrant(models.Model):
    """An administrator's permission for one golden set to use one secret variable (docs/deployment.md,
    "Secrets"). Settings name secrets by environment variable (`ASSAY_SECRET_...`, assay.secrets); the
    value is sent only for a set holding a grant for that name: a judge's key, a target's secret header
    and webhook, a git export's credentials (`labeling.selectors.secrets`, the one check). Withdrawing a
    grant is deleting its row; the next use is refused."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="secret_grants")
    variable = models.CharField(
        max_length=100, help_text="the environment variable's NAME, e.g. ASSAY_SECRET_OPENAI"
    )
    note = models.CharField(max_length=300, blank=True, help_text="what it is for, who asked")
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["golden_set", "variable"], name="secret_grant_set_variable_unique"
            ),
        ]
        ordering = ["golden_set", "variable"]

    def __str__(self) -> str:
        return f"{self.variable} for {self.golden_set_id}"

    def clean(self) -> None:
        if refused := secret_env_name_problem(self.variable or ""):
            raise ValidationError({"variable": refused})


class Document(models.Model):
    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="documents")
    doc_id = models.CharField(max_length=200, help_text="the id the search system returns")
    # NULL, not "", for "no key": the unique (golden_set, key) constraint must ignore documents without one.
    key = models.CharField(  # noqa: DJ001
        max_length=500, null=True, blank=True, help_text="durable key, e.g. canonical URL"
    )
    title = models.CharField(max_length=500, blank=True)
    url = models.CharField(max_length=1000, blank=True)
    snippet = models.TextField(blank=True)
    body = models.TextField(blank=True)
    fields = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64, editable=False)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["golden_set", "doc_id"], name="document_set_doc_id_unique"),
            models.UniqueConstraint(
                fields=["golden_set", "key"], condition=Q(key__isnull=False), name="document_set_key_unique"
            ),
        ]
        ordering = ["golden_set", "doc_id"]

    def __str__(self) -> str:
        return self.doc_id

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.content_hash = content_hash(
            {
                "title": self.title,
                "url": self.url,
                "snippet": self.snippet,
                "body": self.body,
                "fields": self.fields,
            }
        )
        super().save(*args, **kwargs)


class Query(models.Model):
    class Tier(models.TextChoices):
        CORE = "core"
        SHADOW = "shadow"
        CHALLENGE = "challenge"

    class Status(models.TextChoices):
        ACTIVE = "active"
        RETIRED = "retired"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="queries")
    external_id = models.CharField(max_length=200)
    text = models.CharField(max_length=1000)
    locale = models.CharField(max_length=35, blank=True)
    filters = models.JSONField(default=dict, blank=True)
    # The product vertical (billing, docs): the stratum of the report's slices and of per-stratum budgets.
    stratum = models.CharField(max_length=100, blank=True)
    # The traffic band (head, torso, tail) from a query log's frequencies, kept apart from the vertical.
    traffic_band = models.CharField(max_length=10, blank=True)
    # Why the query is in the set when it is a known failure (typo, synonym, zero-results history, ...).
    failure_mode = models.CharField(max_length=100, blank=True)
    weight = models.FloatField(default=1.0, help_text="traffic weight")
    tier = models.CharField(max_length=10, choices=Tier.choices, default=Tier.CORE)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    quarantine_reason = models.TextField(blank=True)
    expect_empty = models.BooleanField(default=False)
    critical = models.BooleanField(default=False)
    tags = models.JSONField(default=list, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["golden_set", "external_id"], name="query_set_external_id_unique"
            ),
        ]
        ordering = ["golden_set", "external_id"]
        verbose_name_plural = "queries"

    def __str__(self) -> str:
        return f"{self.external_id}: {self.text}"


class FrozenLabel(models.Model):
    """The set's current frozen grade for (query, document).

    Written only by golden_io (`golden_io.services`): a golden-file import replaces all of the set's rows,
    a golden-version freeze those of the version's queries. labeling reads them (the overturns a rater
    explains, the labels carried over in consolidation) and never writes them.
    """

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="frozen_labels")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="frozen_labels")
    grade = models.IntegerField()
    version = models.CharField(max_length=100)
    # Who decided it: humans, or a qualified judge filling a pair no human labeled (docs/judge.md). The
    # judge is named (`judge` is null when the row came from an imported file, or the judge was deleted).
    source = models.CharField(
        max_length=10, choices=[("human", "human"), ("judge", "judge")], default="human"
    )
    judge = models.ForeignKey("Judge", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    judge_name = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "document"], name="frozen_label_query_document_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id}={self.grade}@{self.version}"


class Candidate(models.Model):
    """One pool entry. Provenance says which systems returned it at which rank; raters never see it."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="candidates")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="candidates")
    # [{"system": "bm25", "rank": 3}, {"system": "judged", "rank": null}], one entry per system.
    provenance = models.JSONField(default=list)
    best_rank = models.PositiveIntegerField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "document"], name="candidate_query_document_unique"),
        ]
        ordering = ["query", "id"]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id}"


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
        indexes = [models.Index(fields=["rater", "at"], name="judgment_event_rater_at")]

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


class Judge(models.Model):
    """A judge's configuration. What decides its answers (model, instructions, temperature, text budget,
    structured output, the rubric) never changes in place: a change is a new row (`previous` names the
    one it replaces) with its own `config_hash`, which must qualify again. Where it is served (base URL,
    the key's variable name, concurrency) may be edited."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="judges")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="judges")
    name = models.CharField(max_length=200)
    base_url = models.CharField(
        max_length=1000, help_text="OpenAI-compatible, e.g. https://api.example.com/v1"
    )
    model = models.CharField(max_length=200)
    # The NAME of the environment variable holding the API key (ASSAY_SECRET_...), never the key; empty
    # for an endpoint without a key (a local server).
    api_key_env = models.CharField(max_length=100, blank=True)
    temperature = models.FloatField(default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)])
    # Requests in flight per chunk, capped as a search target's are (the harness's limit, which the demo's
    # servers size their listen backlog for: demo/serving.py).
    concurrency = models.PositiveIntegerField(
        default=4, validators=[MinValueValidator(1), MaxValueValidator(MAX_CONCURRENCY)]
    )
    text_budget = models.PositiveIntegerField(
        default=4000, validators=[MinValueValidator(200)], help_text="characters of document text in a prompt"
    )
    instructions = models.TextField()
    structured = models.BooleanField(default=True, help_text="send response_format json_schema")
    # The demo's deterministic stand-in (demo/judge_service.py), labeled so wherever the judge is shown.
    stand_in = models.BooleanField(default=False)
    config_hash = models.CharField(max_length=64, editable=False)
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["golden_set", "config_hash"], name="judge_set_config_unique"),
        ]
        ordering = ["golden_set", "-created", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"


class JudgeJob(models.Model):
    """One judging job: its pairs are `JudgeJobItem` rows, judged in chunks one after another."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        CANCELLED = "cancelled"
        FAILED = "failed"

    FINAL = frozenset({Status.SUCCEEDED, Status.CANCELLED, Status.FAILED})

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="jobs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    chunk_size = models.PositiveIntegerField(default=20)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    cached = models.PositiveIntegerField(default=0, help_text="pairs answered from the cache, not paid again")
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    elapsed_ms = models.PositiveBigIntegerField(default=0, help_text="summed over the job's chunks")
    message = models.TextField(blank=True)
    # The chunk at work holds the job (`holder`, a token per delivery) and renews `heartbeat_at` while it
    # works; a running job whose heartbeat stopped lost its worker, and the sweeper sends its chunks again.
    holder = models.CharField(max_length=32, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"job {self.pk} of {self.judge_id} ({self.status})"


class JudgeAnswer(models.Model):
    """The cache: a model's answer to one prompt for one content of a query and a document, paid once.
    Only answers are kept (a grade, or an answer that broke the contract); a call that got no answer
    (an HTTP error, a timeout) is not, so it is tried again by a later job."""

    model = models.CharField(max_length=200)
    prompt_hash = models.CharField(max_length=64)
    query_hash = models.CharField(max_length=64)
    document_hash = models.CharField(max_length=64)
    grade = models.IntegerField(null=True, blank=True)
    reason = models.TextField(blank=True)
    error = models.TextField(blank=True, help_text="why the answer is not a grade, with what was seen")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    job = models.ForeignKey(
        JudgeJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="answers"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["model", "prompt_hash", "query_hash", "document_hash"], name="judge_answer_key_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model}: {self.grade if self.grade is not None else 'error'}"


class JudgeJobItem(models.Model):
    """One pair of a job, in the job's order (`index`: chunks are index ranges). `done` once it has an
    answer (from the cache or paid) or a failure; a redelivered chunk skips done items."""

    job = models.ForeignKey(JudgeJob, on_delete=models.CASCADE, related_name="items")
    index = models.PositiveIntegerField()
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    done = models.BooleanField(default=False)
    answer = models.ForeignKey(
        JudgeAnswer, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    cached = models.BooleanField(default=False)
    failure = models.TextField(blank=True, help_text="no answer came: HTTP error, timeout after retries")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "index"], name="judge_job_item_index_unique"),
        ]
        ordering = ["job", "index"]

    def __str__(self) -> str:
        return f"job {self.job_id} #{self.index}: {self.query_id}/{self.document_id}"


class JudgeLabel(models.Model):
    """A judge's current grade for (query, document), with its reason and the document's content hash
    when graded. It counts only once the judge is qualified for the query, on the document it graded
    (`labeling.selectors.judge_scope`; docs/judge.md, "What a qualified judge does")."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="labels")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="judge_labels")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="judge_labels")
    grade = models.IntegerField()
    reason = models.TextField(blank=True)
    content_hash = models.CharField(max_length=64)
    job = models.ForeignKey(JudgeJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="labels")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "query", "document"], name="judge_label_judge_query_document_unique"
            ),
        ]
        ordering = ["judge", "query", "document"]

    def __str__(self) -> str:
        return f"{self.judge_id}: {self.query_id}/{self.document_id}={self.grade}"


class JudgeQualification(models.Model):
    """A reviewer's decision that a judge's grades may count within a scope of its set (strata and locales;
    empty lists mean every one), with the figures and the bar it was decided on (docs/judge-qualification.md).

    Only an `active` row lets labels count (`labeling.selectors.judge_scope`). The drift watch suspends it
    when the judge's running agreement with later human grades falls below `bar` in its scope; a reviewer
    may withdraw it. Rows are never deleted: they are the record of who let a machine's grades count, when
    and why."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        SUSPENDED = "suspended"
        WITHDRAWN = "withdrawn"

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="qualifications")
    strata = models.JSONField(default=list, blank=True, help_text="empty: every stratum")
    locales = models.JSONField(default=list, blank=True, help_text="empty: every locale")
    rationale = models.TextField()
    bar = models.FloatField(help_text="the quadratic kappa the judge had to reach, and must keep")
    figures = models.JSONField(default=dict, blank=True, help_text="the figures the decision was made on")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_reason = models.TextField(blank=True, help_text="why it was suspended or withdrawn")

    class Meta:
        ordering = ["judge", "-at", "-id"]
        indexes = [models.Index(fields=["judge", "status"], name="judge_qualification_status")]

    def __str__(self) -> str:
        return f"{self.judge_id}: {self.status} since {self.at:%Y-%m-%d}"

    def covers(self, stratum: str, locale: str) -> bool:
        """Whether a query of this stratum and locale is in the scope."""
        return (not self.strata or stratum in self.strata) and (not self.locales or locale in self.locales)
