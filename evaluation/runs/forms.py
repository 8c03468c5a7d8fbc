"""Evaluation's page forms: a run to start, a target's settings, a nightly schedule, an API token, and
the KEY=VALUE parameter lines they share. Forms check shape; the services check meaning, and their
problems go back to the field they name (`labeling.forms.problems_to_form`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.db.models import QuerySet

from assay.adapters import ADAPTER_CHOICES
from assay.jsonin import JsonInputError, json_loads, json_or_text
from evaluation.runs import access, selectors
from evaluation.runs.models import ApiToken, RunSchedule, SearchTarget
from evaluation.runs.services.targets import TARGET_FIELDS
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet


def parse_param_lines(text: str) -> tuple[dict[str, Any], list[str]]:
    """`KEY=VALUE` per line (values read as JSON when they are: `rewrite=true` is the boolean), or one
    JSON object. Returns (params, problems naming the line)."""
    text = text.strip()
    if not text:
        return {}, []
    if text.startswith("{"):
        try:
            data = json_loads(text)
        except JsonInputError as exc:
            return {}, [f"params: {exc}"]
        if not isinstance(data, dict):
            return {}, ["params: expected a JSON object"]
        return data, []
    params: dict[str, Any] = {}
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"params line {number}: expected KEY=VALUE, got {line.strip()!r}")
            continue
        if key in params:
            problems.append(f"params line {number}: {key} is given twice")
            continue
        try:
            params[key] = json_or_text(value.strip())
        except JsonInputError as exc:
            problems.append(f"params line {number}: {key}: {exc}")
    return params, problems


def _param_lines_field(applies_to: str) -> forms.CharField:
    return forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "rewrite=true"}),
        label="Parameter overrides",
        help_text='KEY=VALUE per line (JSON values: true, 3, "text"), on top of the target\'s params '
        f"and stage toggles, {applies_to}.",
    )


class ParamLinesForm(forms.Form):
    """A form with a `params` field of KEY=VALUE lines (`_param_lines_field`), cleaned to a dict."""

    def clean_params(self) -> dict[str, Any]:
        params, problems = parse_param_lines(self.cleaned_data.get("params") or "")
        if problems:
            raise forms.ValidationError(problems)
        return params


class VersionChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: GoldenVersion) -> str:
        return f"{obj.golden_set.slug}@{obj.name}"


def version_and_target_choices(
    form: forms.Form, user: Any
) -> tuple[QuerySet[GoldenVersion], QuerySet[SearchTarget]]:
    """The form's `golden_version` field offers the versions of the sets `user` starts runs (and
    experiments) on, by set, newest first, and its `target` field the targets they see."""
    sets = [s for s in access.golden_sets_for(user) if access.may_trigger(user, s)]
    versions = GoldenVersion.objects.filter(golden_set__in=sets).select_related("golden_set")
    versions = versions.defer("content", "documents").order_by("golden_set__slug", "-created")
    targets = access.targets_for(user)
    version_field, target_field = form.fields["golden_version"], form.fields["target"]
    assert isinstance(version_field, forms.ModelChoiceField)
    assert isinstance(target_field, forms.ModelChoiceField)
    version_field.queryset, target_field.queryset = versions, targets
    return versions, targets


class RunForm(ParamLinesForm):
    golden_version = VersionChoiceField(queryset=GoldenVersion.objects.none(), label="Golden version")
    target = forms.ModelChoiceField(queryset=SearchTarget.objects.none(), label="Search target")
    params = _param_lines_field("for this run only")
    rebaseline = forms.BooleanField(
        required=False,
        label="Gate as a rebaseline",
        help_text="accept a different golden version, k or scale than the baseline's (notes, not a refusal)",
    )
    rescore_baseline = forms.BooleanField(
        required=False,
        label="Re-score the baseline",
        help_text="when the baseline is on another golden version: gate against its stored result lists "
        "scored on this version's labels (docs/runs.md)",
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        versions, offered = version_and_target_choices(self, user)
        # A lone target is what a user picks nearly always; the version its baseline is on is the one a
        # run compares like with like (another is refused unless the baseline is re-scored: `clean`),
        # else the newest.
        targets = list(offered[:2])
        if len(targets) == 1:
            self.initial.setdefault("target", targets[0].pk)
        chosen = next((t for t in targets if str(t.pk) == str(self.initial.get("target"))), None)
        based = selectors.baseline_version_for(target=chosen) if chosen is not None else None
        if based is not None and versions.filter(pk=based.pk).exists():
            self.initial.setdefault("golden_version", based.pk)
        newest = versions.order_by("-created", "-id").first()
        if newest is not None:
            self.initial.setdefault("golden_version", newest.pk)

    def plan(self) -> selectors.GatePlan | None:
        """What the chosen version and target will be gated against (None until both are chosen): after
        validation from the cleaned data, before it from the submitted or initial choice alone (the page
        says it before Start)."""
        if hasattr(self, "cleaned_data"):
            version, target = self.cleaned_data.get("golden_version"), self.cleaned_data.get("target")
        else:
            version, target = self._chosen("golden_version"), self._chosen("target")
        if version is None or target is None:
            return None
        return selectors.gate_plan(golden_version=version, target=target)

    def _chosen(self, name: str) -> Any:
        field = self.fields[name]
        value = self.data.get(self.add_prefix(name)) if self.is_bound else self.initial.get(name)
        try:
            return field.clean(value) if value not in (None, "") else None
        except forms.ValidationError:
            return None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        plan = self.plan()
        if plan is not None:
            for problem in plan.problems(
                rescore=bool(cleaned.get("rescore_baseline")), rebaseline=bool(cleaned.get("rebaseline"))
            ):
                self.add_error(None, problem)
        return cleaned


def _json_field(label: str, help_text: str = "") -> forms.CharField:
    return forms.CharField(
        required=False,
        label=label,
        help_text=help_text,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "json"}),
    )


class TargetForm(forms.Form):
    """SearchTarget settings; JSON fields as text. The service validates meaning (TargetError)."""

    name = forms.CharField(max_length=100)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    adapter = forms.ChoiceField(choices=ADAPTER_CHOICES)
    url = forms.CharField(
        max_length=1000, label="URL", help_text="search endpoint, index URL or Solr core URL"
    )
    headers = _json_field(
        "Headers (JSON)",
        '{"X-Tenant": "acme", "Authorization": {"env": "ASSAY_SECRET_SEARCH_TOKEN"}}: a secret is given as '
        "the name of an environment variable of the workers (starting with ASSAY_SECRET_), never as a value.",
    )
    params = _json_field("Params (JSON)")
    stages = _json_field(
        "Stage toggles (JSON)",
        '{"rewrite": false, "rerank": true}: sent like params; a run may flip them (rewrite=true).',
    )
    cache_bypass_header = forms.CharField(required=False, max_length=300, label="Cache-bypass header")
    timeout = forms.FloatField(min_value=0.001, initial=10.0, help_text="seconds")
    concurrency = forms.IntegerField(min_value=1, initial=8, help_text="requests in flight per chunk task")
    retries = forms.IntegerField(min_value=0, initial=3)
    rate_limit = forms.FloatField(required=False, help_text="requests per second over the whole run")
    generation_header = forms.CharField(required=False, max_length=100)
    generation_field = forms.CharField(required=False, max_length=200)
    model_id_header = forms.CharField(required=False, max_length=100)
    model_id_field = forms.CharField(required=False, max_length=200)
    es_template = _json_field("Query template (elasticsearch/opensearch, JSON)")
    solr_method = forms.ChoiceField(choices=[("GET", "GET"), ("POST", "POST")], initial="GET")
    webhook_env = forms.CharField(
        required=False,
        max_length=100,
        label="Webhook variable",
        help_text="the NAME of an ASSAY_SECRET_... environment variable of the workers whose value is a "
        "Slack-compatible webhook URL, granted to the target's sets by an administrator: failing and "
        "warning runs are posted there (empty: email only)",
    )
    golden_sets = forms.ModelMultipleChoiceField(
        queryset=GoldenSet.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )

    JSON_FIELDS = ("headers", "params", "stages", "es_template")

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        sets_field = self.fields["golden_sets"]
        assert isinstance(sets_field, forms.ModelMultipleChoiceField)
        sets_field.queryset = access.golden_sets_for(user)

    def _json(self, name: str) -> Any:
        text = (self.cleaned_data.get(name) or "").strip()
        if not text:
            return None if name == "es_template" else {}
        try:
            return json_loads(text)
        except JsonInputError as exc:
            raise forms.ValidationError(f"{name}: {exc}") from None

    def clean_headers(self) -> Any:
        return self._json("headers")

    def clean_params(self) -> Any:
        return self._json("params")

    def clean_stages(self) -> Any:
        return self._json("stages")

    def clean_es_template(self) -> Any:
        return self._json("es_template")

    @classmethod
    def initial_for(cls, target: SearchTarget) -> dict[str, Any]:
        initial = {name: getattr(target, name) for name in TARGET_FIELDS}
        for name in cls.JSON_FIELDS:
            value = initial[name]
            initial[name] = "" if value in (None, {}) else json.dumps(value, indent=2, sort_keys=True)
        initial["golden_sets"] = list(target.golden_sets.all())
        return initial


TARGET_PROBLEM_FIELDS = {"search URL": "url", "concurrency": "concurrency"}


def param_lines(params: Mapping[str, Any]) -> str:
    """Params as the KEY=VALUE lines `parse_param_lines` reads back (a JSON object when a name would
    not survive as a line)."""
    if any("=" in key or "\n" in key or key != key.strip() or key.startswith("{") for key in params):
        return json.dumps(params, ensure_ascii=False)
    return "\n".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in params.items())


class ScheduleForm(ParamLinesForm):
    """A nightly run of (golden set, target). Ranges and params are checked by `schedule_problems` (the
    service), so the page says what the admin and the API say."""

    # Any text: the view looks the set up through access (404), and the service says when the target
    # does not list it.
    golden_set = forms.CharField(label="Golden set", widget=forms.Select)
    # Unticked on a new schedule, so the form never reads as a nightly run that is already on; an existing
    # schedule's form shows its own state (initial_for).
    enabled = forms.BooleanField(
        required=False,
        initial=False,
        help_text="tick to start a run every night once saved; unticked, the schedule is kept, starting none",
    )
    hour = forms.IntegerField(
        initial=2, label="Hour (UTC)", widget=forms.NumberInput(attrs={"min": 0, "max": 23})
    )
    minute = forms.IntegerField(initial=0, widget=forms.NumberInput(attrs={"min": 0, "max": 59}))
    params = _param_lines_field("for every nightly run")
    rescore_baseline = forms.BooleanField(
        required=False,
        label="Re-score the baseline on a new golden version",
        help_text="when the set's newest version differs from the baseline's, gate against the baseline's "
        "stored results scored on the new labels instead of refusing to compare (docs/runs.md)",
    )

    PROBLEM_FIELDS = {"target ": "golden_set"}

    def __init__(self, *args: Any, sets: Sequence[GoldenSet], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        widget = self.fields["golden_set"].widget
        assert isinstance(widget, forms.Select)
        widget.choices = [(s.slug, s.slug) for s in sets]

    @staticmethod
    def initial_for(schedule: RunSchedule) -> dict[str, Any]:
        return {
            "golden_set": schedule.golden_set.slug,
            "enabled": schedule.enabled,
            "hour": schedule.hour,
            "minute": schedule.minute,
            "params": param_lines(schedule.params or {}),
            "rescore_baseline": schedule.rescore_baseline,
        }


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="what it is for, e.g. CI of search-api")
    scopes = forms.MultipleChoiceField(
        choices=list(ApiToken.SCOPES.items()), widget=forms.CheckboxSelectMultiple, initial=["read"]
    )
