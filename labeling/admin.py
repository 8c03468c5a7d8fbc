"""Django admin for every labeling model; provenance and history are visible here, never to raters.

The admin is audit-only for label data. Grades, their history, adjudications, proposals, frozen labels,
assignments and the other decision records are written by `labeling.services` (which write the event or
record each change needs) and by the imports; here they can be read, never added, changed or deleted,
by superusers neither. Golden sets, documents, queries and candidates stay editable, but deleting one
whose deletion would cascade into records is refused: Django's delete view and `delete_selected` action
refuse a deletion that reaches any model whose ModelAdmin denies delete
(`django.contrib.admin.utils.get_deleted_objects`, "perms_needed"), superusers included, so every
model holding label data must stay registered here with `_RecordAdmin`.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from labeling import models
from labeling.admin_records import ReadOnlyAdmin
from labeling.forms import JSON_FIELD_OVERRIDES
from labeling.roles import reviewer_list_problem


class _RecordAdmin(ReadOnlyAdmin):
    """`ReadOnlyAdmin` (labeling/admin_records.py) with every field shown, for model admins and inlines
    alike."""

    model: type[Model]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # Non-editable fields (timestamps, content hashes) are left out of a form unless named here, and
        # the record is what the page is for.
        opts = self.model._meta
        return [f.name for f in [*opts.fields, *opts.many_to_many] if not (f.primary_key and f.auto_created)]


@admin.register(models.Rubric)
class RubricAdmin(_RecordAdmin, admin.ModelAdmin):
    # A rubric change is a new version (`import_rubric`), never an edit: judgments were given on this one.
    list_display = ("name", "version", "scale_min", "scale_max", "created")
    search_fields = ("name",)


class GoldenSetForm(forms.ModelForm):
    def clean_reviewers(self) -> Any:
        """A set's reviewers hold the reviewer role (labeling.roles): a name without it would open
        nothing, and would look as if it did."""
        reviewers = self.cleaned_data["reviewers"]
        problem = reviewer_list_problem(reviewers)
        if problem:
            raise forms.ValidationError(problem)
        return reviewers


@admin.register(models.GoldenSet)
class GoldenSetAdmin(admin.ModelAdmin):
    form = GoldenSetForm
    formfield_overrides = JSON_FIELD_OVERRIDES
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


@admin.register(models.SecretGrant)
class SecretGrantAdmin(admin.ModelAdmin):
    """Which golden set may use which secret variable: a judge's key, a target's secret headers and
    webhook, a git export's credentials are sent only for a set holding the grant (the check:
    `labeling.selectors.secrets`). Delete a grant to withdraw it: the next use is refused."""

    list_display = ("variable", "golden_set", "note", "granted_by", "created")
    list_filter = ("golden_set",)
    search_fields = ("variable", "note")
    fields = ("golden_set", "variable", "note", "granted_by", "created")
    readonly_fields = ("granted_by", "created")

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if obj.granted_by_id is None:
            obj.granted_by_id = request.user.pk
        super().save_model(request, obj, form, change)


@admin.register(models.SsoIdentity)
class SsoIdentityAdmin(admin.ModelAdmin):
    """Which identity provider account signs in as which user (docs/deployment.md, "Single sign-on"): made
    at a first sign-in. Added by hand, it links an existing account to its provider account (the next
    sign-in uses that user and brings its roles in step); deleted, it cuts the link and the user stays."""

    list_display = ("user", "subject", "issuer", "groups", "created")
    search_fields = ("user__username", "subject")
    fields = ("user", "issuer", "subject", "groups", "created")
    readonly_fields = ("groups", "created")


@admin.register(models.Document)
class DocumentAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FIELD_OVERRIDES
    list_display = ("doc_id", "golden_set", "title", "key")
    list_filter = ("golden_set",)
    search_fields = ("doc_id", "key", "title")
    readonly_fields = ("content_hash", "updated")


@admin.register(models.Query)
class QueryAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FIELD_OVERRIDES
    list_display = (
        "external_id",
        "golden_set",
        "text",
        "locale",
        "stratum",
        "traffic_band",
        "tier",
        "status",
    )
    list_filter = ("golden_set", "tier", "status", "stratum", "traffic_band", "failure_mode", "locale")
    search_fields = ("external_id", "text")
    # A tier move or retirement is a TierMove written by services.query_move_tier / query_retire; an edit
    # here would move the query with no record of who, when or why.
    readonly_fields = ("tier", "status", "quarantine_reason", "created")


@admin.register(models.FrozenLabel)
class FrozenLabelAdmin(_RecordAdmin, admin.ModelAdmin):
    # Written only by the golden-file import and the golden-version freeze, which replace them as a whole.
    list_display = ("query", "document", "grade", "version")
    list_filter = ("version",)


@admin.register(models.Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = ("query", "document", "best_rank", "provenance")
    raw_id_fields = ("query", "document")
    search_fields = ("query__external_id", "document__doc_id")


class JudgmentInline(_RecordAdmin, admin.TabularInline):
    model = models.Judgment
    extra = 0
    fields = ("document", "grade", "note", "time_spent_ms", "content_hash", "created", "updated")
    show_change_link = True


@admin.register(models.Assignment)
class AssignmentAdmin(_RecordAdmin, admin.ModelAdmin):
    # Changing the rater, kind or status by hand would re-attribute or unlock grades; reassignment and
    # reopening happen on the set's pages (services.assignment_reassign, candidates_add).
    list_display = ("id", "query", "rater", "kind", "status", "created", "completed")
    list_filter = ("kind", "status", "query__golden_set")
    inlines = [JudgmentInline]


class JudgmentEventInline(_RecordAdmin, admin.TabularInline):
    model = models.JudgmentEvent
    extra = 0
    fields = (
        "rater",
        "at",
        "old_grade",
        "new_grade",
        "old_cant_judge",
        "new_cant_judge",
        "undo",
        "note",
        "time_spent_ms",
        "content_hash",
    )


@admin.register(models.Judgment)
class JudgmentAdmin(_RecordAdmin, admin.ModelAdmin):
    # Every grade change goes through services.judgment_submit, which writes its JudgmentEvent.
    list_display = ("id", "assignment", "document", "grade", "time_spent_ms", "updated")
    inlines = [JudgmentEventInline]


@admin.register(models.JudgmentEvent)
class JudgmentEventAdmin(_RecordAdmin, admin.ModelAdmin):
    list_display = ("assignment", "document", "rater", "at", "old_state", "new_state", "undo")
    list_select_related = ("assignment", "document", "rater")


@admin.register(models.CantJudgeMark)
class CantJudgeMarkAdmin(_RecordAdmin, admin.ModelAdmin):
    # Set and cleared by services.judgment_submit, which writes its JudgmentEvent; never a grade.
    list_display = ("assignment", "document", "reason", "note", "updated")
    list_filter = ("reason", "assignment__query__golden_set")


@admin.register(models.TierMove)
class TierMoveAdmin(_RecordAdmin, admin.ModelAdmin):
    list_display = ("query", "at", "by", "from_tier", "to_tier", "from_status", "to_status", "reason")
    list_filter = ("to_tier", "to_status", "query__golden_set")


@admin.register(models.Adjudication)
class AdjudicationAdmin(_RecordAdmin, admin.ModelAdmin):
    list_display = ("query", "document", "grade", "reviewer", "at")
    list_filter = ("query__golden_set",)


@admin.register(models.DisputeCheck)
class DisputeCheckAdmin(_RecordAdmin, admin.ModelAdmin):
    list_display = ("query", "at", "disputed", "reasons", "actions")
    list_filter = ("disputed", "query__golden_set")


@admin.register(models.GoldItem)
class GoldItemAdmin(_RecordAdmin, admin.ModelAdmin):
    # services.gold_mark / gold_unmark also mix the item into (or out of) raters' queues.
    list_display = ("query", "document", "grade", "by", "updated")
    list_filter = ("query__golden_set",)


@admin.register(models.LabelProposal)
class LabelProposalAdmin(_RecordAdmin, admin.ModelAdmin):
    list_display = ("query", "document", "from_grade", "to_grade", "status", "rater", "decided_by", "created")
    list_filter = ("status", "query__golden_set")
    # decided_by is nullable, so the changelist's default select_related() would not follow it.
    list_select_related = ("query", "document", "rater", "decided_by")


@admin.register(models.CalibrationRound)
class CalibrationRoundAdmin(_RecordAdmin, admin.ModelAdmin):
    # Rounds are started, and their results promoted, by a service.
    list_display = ("name", "golden_set", "created_by", "created", "promoted_by", "promoted_at")
    list_filter = ("golden_set",)


# Machine judges (docs/judge.md): a judge's deciding fields never change in place (a change is a new judge,
# through `labeling.services.judges`), and its jobs, answers and labels are records of what was asked and
# paid for, so all are read-only here.


@admin.register(models.Judge)
class JudgeAdmin(_RecordAdmin, admin.ModelAdmin):
    list_display = ("name", "golden_set", "model", "temperature", "stand_in", "created")
    list_filter = ("golden_set", "stand_in")


@admin.register(models.JudgeJob)
class JudgeJobAdmin(_RecordAdmin, admin.ModelAdmin):
    list_display = ("pk", "judge", "status", "done", "total", "errors", "created")
    list_filter = ("status",)


@admin.register(models.JudgeJobItem)
class JudgeJobItemAdmin(_RecordAdmin, admin.ModelAdmin):
    list_display = ("job", "index", "query", "document", "done", "cached")
    list_select_related = ("job", "query", "document")


@admin.register(models.JudgeAnswer)
class JudgeAnswerAdmin(_RecordAdmin, admin.ModelAdmin):
    list_display = ("model", "grade", "error", "prompt_tokens", "completion_tokens", "created")


@admin.register(models.JudgeLabel)
class JudgeLabelAdmin(_RecordAdmin, admin.ModelAdmin):
    list_display = ("judge", "query", "document", "grade", "updated")
    list_select_related = ("judge", "query", "document")


@admin.register(models.JudgeQualification)
class JudgeQualificationAdmin(_RecordAdmin, admin.ModelAdmin):
    # Decided, suspended and withdrawn through the services; never deleted (the record of who let a
    # machine's grades count).
    list_display = ("judge", "status", "bar", "by", "at")
    list_filter = ("status",)
