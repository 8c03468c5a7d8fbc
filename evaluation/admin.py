"""Admin: targets, budgets and schedules are editable (with the services' validation); runs, their results,
baselines and baseline re-scores are records and are read-only here (runs are created, cancelled and
promoted through the services, which keep their invariants). API tokens are created on the Tokens page or with
`manage.py api_token_create` (the secret is shown once); here they can be listed and revoked."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from assay.display import counted
from assay.drift import BudgetsError, load_budgets
from assay.targets import spec_problems, target_spec
from evaluation.runs.models import (
    ApiToken,
    Baseline,
    BaselineRescore,
    BudgetSet,
    EvaluationRun,
    Notification,
    QueryRunResult,
    RunSchedule,
    SearchTarget,
)
from evaluation.runs.services import schedule_problems, target_name_problems, target_secret_problems
from labeling.admin_records import ReadOnlyAdmin
from labeling.forms import JSON_FIELD_OVERRIDES


class SearchTargetForm(forms.ModelForm):
    class Meta:
        model = SearchTarget
        fields = (
            "name",
            "description",
            "adapter",
            "url",
            "headers",
            "params",
            "stages",
            "cache_bypass_header",
            "timeout",
            "concurrency",
            "retries",
            "rate_limit",
            "generation_header",
            "generation_field",
            "model_id_header",
            "model_id_field",
            "es_template",
            "solr_method",
            "webhook_env",
            "owner",
            "golden_sets",
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        candidate = SearchTarget(**{k: v for k, v in data.items() if k not in ("golden_sets", "owner")})
        problems = spec_problems(target_spec(candidate))
        problems += target_secret_problems(
            headers=data.get("headers"),
            webhook_env=data.get("webhook_env") or "",
            golden_sets=data.get("golden_sets") or [],
            besides=problems,
        )
        problems += target_name_problems(
            name=data.get("name") or "", golden_sets=data.get("golden_sets") or [], exclude=self.instance.pk
        )
        if problems:
            raise forms.ValidationError(problems)
        return data


@admin.register(SearchTarget)
class SearchTargetAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FIELD_OVERRIDES
    form = SearchTargetForm
    list_display = ("name", "adapter", "url", "concurrency", "rate_limit", "owner", "updated")
    search_fields = ("name", "url")
    filter_horizontal = ("golden_sets",)


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = (
        "id",
        "golden_version",
        "target",
        "status",
        "done",
        "total",
        "errors",
        "verdict",
        "created",
    )
    list_filter = ("status", "verdict", "trigger", "target")
    search_fields = ("target__name", "golden_version__name")


@admin.register(QueryRunResult)
class QueryRunResultAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("run", "query_id", "error", "http_status", "latency_ms", "attempts")
    search_fields = ("query_id",)


@admin.register(Baseline)
class BaselineAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("golden_set", "target", "run", "approved_by", "approved_at", "git_branch")


@admin.register(BaselineRescore)
class BaselineRescoreAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("source_run", "golden_version", "created_by", "created")


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    # Audit only: deliveries are written by the notification task, once per run and channel.
    list_display = ("run", "channel", "recipients", "status", "attempts", "sent_at", "last_error")
    list_filter = ("channel", "status")


class BudgetSetForm(forms.ModelForm):
    class Meta:
        model = BudgetSet
        fields = ("golden_set", "data")

    def clean_data(self) -> Any:
        try:
            return load_budgets(self.cleaned_data["data"]).to_dict()
        except BudgetsError as exc:
            raise forms.ValidationError(exc.problems) from exc


@admin.register(BudgetSet)
class BudgetSetAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FIELD_OVERRIDES
    form = BudgetSetForm
    list_display = ("golden_set", "updated_by", "updated")


class RunScheduleForm(forms.ModelForm):
    class Meta:
        model = RunSchedule
        fields = ("golden_set", "target", "enabled", "hour", "minute", "params", "rescore_baseline")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if any(data.get(name) is None for name in ("golden_set", "target", "hour", "minute")):
            return data  # the field errors say what is missing or out of range
        problems = schedule_problems(
            golden_set=data["golden_set"],
            target=data["target"],
            hour=data["hour"],
            minute=data["minute"],
            params=data.get("params"),
        )
        if problems:
            raise forms.ValidationError(problems)
        return data


@admin.register(RunSchedule)
class RunScheduleAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FIELD_OVERRIDES
    form = RunScheduleForm
    list_display = ("golden_set", "target", "enabled", "hour", "minute", "last_run_on", "last_error_at")
    list_filter = ("enabled",)
    # Written by runs_nightly: the day claimed and why that day's run was refused (empty once one starts).
    readonly_fields = ("last_run_on", "last_error", "last_error_at")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "scopes", "created", "last_used", "revoked")
    list_filter = ("revoked",)
    search_fields = ("name", "user__username", "prefix")
    readonly_fields = ("user", "name", "prefix", "scopes", "created", "last_used", "revoked")
    exclude = ("hashed",)
    actions = ("revoke",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a token's secret exists only at creation: the Tokens page or api_token_create

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        from evaluation.runs.tokens import api_token_revoke

        revoked = sum(api_token_revoke(token=token) for token in queryset)
        self.message_user(request, f"{counted(revoked, 'token')} revoked.")
