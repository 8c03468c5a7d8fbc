"""Django admin for every labeling model; provenance and history are visible here, never to raters."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from labeling import models


@admin.register(models.Rubric)
class RubricAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "scale_min", "scale_max", "created")
    search_fields = ("name",)


@admin.register(models.GoldenSet)
class GoldenSetAdmin(admin.ModelAdmin):
    list_display = (
        "slug",
        "name",
        "surface",
        "rubric",
        "k",
        "relevant_min_grade",
        "dual_rate",
        "frozen_version",
    )
    search_fields = ("slug", "name", "surface")
    filter_horizontal = ("reviewers", "raters")


@admin.register(models.Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("doc_id", "golden_set", "title", "key")
    list_filter = ("golden_set",)
    search_fields = ("doc_id", "key", "title")
    readonly_fields = ("content_hash", "updated")


@admin.register(models.Query)
class QueryAdmin(admin.ModelAdmin):
    list_display = ("external_id", "golden_set", "text", "locale", "stratum", "tier", "status")
    list_filter = ("golden_set", "tier", "status", "stratum", "locale")
    search_fields = ("external_id", "text")


@admin.register(models.FrozenLabel)
class FrozenLabelAdmin(admin.ModelAdmin):
    list_display = ("query", "document", "grade", "version")
    list_filter = ("version",)
    raw_id_fields = ("query", "document")


@admin.register(models.Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = ("query", "document", "best_rank", "provenance")
    raw_id_fields = ("query", "document")
    search_fields = ("query__external_id", "document__doc_id")


class JudgmentInline(admin.TabularInline):
    model = models.Judgment
    extra = 0
    raw_id_fields = ("document",)
    readonly_fields = ("created", "updated")


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("id", "query", "rater", "kind", "status", "created", "completed")
    list_filter = ("kind", "status", "query__golden_set")
    raw_id_fields = ("query", "scope")
    inlines = [JudgmentInline]


class JudgmentEventInline(admin.TabularInline):
    model = models.JudgmentEvent
    extra = 0
    can_delete = False
    readonly_fields = ("rater", "at", "old_grade", "new_grade", "note", "time_spent_ms", "content_hash")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the history is written by the grading service only


@admin.register(models.Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("id", "assignment", "document", "grade", "time_spent_ms", "updated")
    raw_id_fields = ("assignment", "document")
    inlines = [JudgmentEventInline]


@admin.register(models.JudgmentEvent)
class JudgmentEventAdmin(admin.ModelAdmin):
    list_display = ("judgment", "rater", "at", "old_grade", "new_grade")
    raw_id_fields = ("judgment",)
    readonly_fields = (
        "judgment", "rater", "at", "old_grade", "new_grade", "note", "time_spent_ms", "content_hash",
    )  # fmt: skip


class _RecordAdmin(admin.ModelAdmin):
    """Decision records (issue 4) are written by the services only: the admin shows them, never edits."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.TierMove)
class TierMoveAdmin(_RecordAdmin):
    list_display = ("query", "at", "by", "from_tier", "to_tier", "from_status", "to_status", "reason")
    list_filter = ("to_tier", "to_status", "query__golden_set")
    raw_id_fields = ("query",)


@admin.register(models.Adjudication)
class AdjudicationAdmin(_RecordAdmin):
    list_display = ("query", "document", "grade", "reviewer", "at")
    list_filter = ("query__golden_set",)
    raw_id_fields = ("query", "document")


@admin.register(models.DisputeCheck)
class DisputeCheckAdmin(_RecordAdmin):
    list_display = ("query", "at", "disputed", "reasons", "actions")
    list_filter = ("disputed", "query__golden_set")
    raw_id_fields = ("query",)


@admin.register(models.GoldItem)
class GoldItemAdmin(admin.ModelAdmin):
    list_display = ("query", "document", "grade", "by", "updated")
    list_filter = ("query__golden_set",)
    raw_id_fields = ("query", "document")
