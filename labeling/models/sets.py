"""Golden sets and what they hold: rubrics, sets, secret grants, documents, queries, frozen labels,
candidate pools.

Part of `labeling.models` (which imports every model, as Django requires).
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
