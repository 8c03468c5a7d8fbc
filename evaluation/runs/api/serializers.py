"""Input and output shapes of the API. Output serializers are read-only views of the rows; the one
input (triggering a run) is validated here for shape and by `evaluation.runs.services.run_create` for
meaning."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from assay.run_meta import redact_url
from assay.targets import SPEC_FIELDS
from evaluation.runs.models import BaselineRescore, EvaluationRun, SearchTarget
from golden_io import selectors as golden_selectors
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet

VERSION_FILES = tuple(golden_selectors.VERSION_FILES)  # the formats of a version's files


def _absolute(context: Mapping[str, Any], name: str, *args: Any) -> str:
    path = reverse(name, args=args)
    request = context.get("request")
    return request.build_absolute_uri(path) if request is not None else path


class GoldenSetSerializer(serializers.ModelSerializer[GoldenSet]):
    rubric = serializers.CharField(source="rubric.__str__", read_only=True)
    versions_url = serializers.SerializerMethodField()

    class Meta:
        model = GoldenSet
        fields = (
            "slug",
            "name",
            "surface",
            "locales",
            "rubric",
            "k",
            "relevant_min_grade",
            "frozen_version",
            "created",
            "versions_url",
        )

    @extend_schema_field(OpenApiTypes.URI)
    def get_versions_url(self, obj: GoldenSet) -> str:
        return _absolute(self.context, "api:version-list", obj.slug)


class ScaleSerializer(serializers.Serializer[Any]):
    min = serializers.IntegerField(source="scale_min")
    max = serializers.IntegerField(source="scale_max")


# One link per file of a version (golden_io.selectors.VERSION_FILES), named as the files' URLs name them.
VersionFilesSerializer = cast(
    "type[serializers.Serializer[Any]]",
    type(
        "VersionFilesSerializer",
        (serializers.Serializer,),
        {
            fmt: serializers.URLField(help_text=file.label)
            for fmt, file in golden_selectors.VERSION_FILES.items()
        },
    ),
)


class GoldenVersionSerializer(serializers.ModelSerializer[GoldenVersion]):
    golden_set: serializers.SlugRelatedField[GoldenSet] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    parent_version: serializers.SlugRelatedField[GoldenVersion] = serializers.SlugRelatedField(
        source="parent",
        slug_field="name",
        read_only=True,
        allow_null=True,
        help_text="the version it grew from",
    )
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    rubric = serializers.CharField(source="rubric_label", read_only=True)
    scale = ScaleSerializer(source="*", read_only=True)
    counts = serializers.JSONField(read_only=True)
    files = serializers.SerializerMethodField()

    class Meta:
        model = GoldenVersion
        fields = (
            "golden_set",
            "name",
            "sha256",
            "parent_version",
            "rubric",
            "k",
            "relevant_min_grade",
            "scale",
            "counts",
            "notes",
            "created_by",
            "created",
            "files",
        )

    @extend_schema_field(VersionFilesSerializer)
    def get_files(self, obj: GoldenVersion) -> dict[str, str]:
        return {
            fmt: _absolute(self.context, "api:version-file", obj.golden_set.slug, obj.name, fmt)
            for fmt in VERSION_FILES
        }


class TargetSerializer(serializers.ModelSerializer[SearchTarget]):
    url = serializers.SerializerMethodField(help_text="credentials and query-string values masked")
    headers = serializers.JSONField(
        read_only=True, help_text='literal values, or {"env": "VARIABLE"}: secrets are never stored or shown'
    )
    params = serializers.JSONField(read_only=True)
    stages = serializers.JSONField(read_only=True)
    es_template = serializers.JSONField(read_only=True, allow_null=True)
    golden_sets: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="slug", many=True, read_only=True
    )
    owner: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = SearchTarget
        fields = ("id", *SPEC_FIELDS, "description", "golden_sets", "owner", "created", "updated")

    def get_url(self, obj: SearchTarget) -> str:
        return redact_url(obj.url)


class ProgressSerializer(serializers.Serializer[Any]):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    errored = serializers.IntegerField(help_text="queries whose search failed (errors, not empties)")
    percent = serializers.FloatField()


class RunLinksSerializer(serializers.Serializer[Any]):
    run = serializers.URLField(help_text="this run's status (poll it)")
    report = serializers.URLField()
    verdict = serializers.URLField()
    cancel = serializers.URLField()
    page = serializers.URLField(help_text="the run's report page in the browser")


class BaselineRescoreSerializer(serializers.ModelSerializer[BaselineRescore]):
    """The baseline as the run was gated against it: its run's stored lists re-scored on another version."""

    source_run: serializers.PrimaryKeyRelatedField[EvaluationRun] = serializers.PrimaryKeyRelatedField(
        read_only=True, help_text="the baseline run whose stored result lists were re-scored"
    )
    from_version: serializers.SlugRelatedField[GoldenVersion] = serializers.SlugRelatedField(
        source="source_run.golden_version",
        slug_field="name",
        read_only=True,
        help_text="the golden version the baseline run was scored on",
    )
    golden_version: serializers.SlugRelatedField[GoldenVersion] = serializers.SlugRelatedField(
        slug_field="name", read_only=True, help_text="the version whose labels it was re-scored against"
    )
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True, help_text="null: a nightly schedule's"
    )

    class Meta:
        model = BaselineRescore
        fields = ("id", "source_run", "from_version", "golden_version", "created_by", "created")


class RunReceiptSerializer(serializers.ModelSerializer[EvaluationRun]):
    """What a `runs:write` reply (starting or cancelling a run) carries: which run of what, how it will be
    gated (`rebaseline`, `rescore_baseline`: what the caller asked), its status and where to follow it,
    nothing it found (progress, verdict, params, baseline, errors are `read`'s: `GET` the `run` link)."""

    golden_set: serializers.SlugRelatedField[GoldenSet] = serializers.SlugRelatedField(
        source="golden_version.golden_set", slug_field="slug", read_only=True
    )
    golden_version: serializers.SlugRelatedField[GoldenVersion] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    target: serializers.SlugRelatedField[SearchTarget] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    final = serializers.SerializerMethodField()
    links = serializers.SerializerMethodField()

    class Meta:
        model = EvaluationRun
        fields = (
            "id",
            "golden_set",
            "golden_version",
            "target",
            "rebaseline",
            "rescore_baseline",
            "status",
            "final",
            "created",
            "links",
        )

    def get_final(self, obj: EvaluationRun) -> bool:
        return obj.status in EvaluationRun.FINAL

    @extend_schema_field(RunLinksSerializer)
    def get_links(self, obj: EvaluationRun) -> dict[str, str]:
        return {
            "run": _absolute(self.context, "api:run-detail", obj.pk),
            "report": _absolute(self.context, "api:run-report", obj.pk),
            "verdict": _absolute(self.context, "api:run-verdict", obj.pk),
            "cancel": _absolute(self.context, "api:run-cancel", obj.pk),
            "page": _absolute(self.context, "evaluation:run_detail", obj.pk),
        }


class AdoptedFromSerializer(serializers.Serializer[Any]):
    """The experiment a run confirms, when an adoption started it (docs/experiments.md)."""

    experiment = serializers.IntegerField()
    adoption = serializers.IntegerField()
    rank = serializers.IntegerField(allow_null=True, help_text="the configuration's tuning rank")
    configuration = serializers.DictField(help_text="the configuration's own grid values")
    reverted = serializers.BooleanField(help_text="the target's params before were put back since")
    link = serializers.URLField(help_text="the experiment in the API (its `adoptions` hold the record)")


class RunSerializer(RunReceiptSerializer):
    """A run as `read` shows it: the receipt's fields and what the run did."""

    # A field named `label` shadows Field.label (a str) in the stubs only: DRF collects declared fields
    # off the class before any instance sets its own `label`.
    label = serializers.CharField(  # type: ignore[assignment]
        read_only=True,
        help_text="how the pages name it: `run 4 demo-search (min_should_match=1)`, what it sent beyond "
        'the defaults (docs/runs.md, "What a run\'s label shows")',
    )
    adopted_from = serializers.SerializerMethodField()

    triggered_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    progress = serializers.SerializerMethodField()
    params = serializers.JSONField(read_only=True)
    effective_params = serializers.JSONField(read_only=True)
    baseline_run = serializers.SerializerMethodField()
    baseline_rescore = BaselineRescoreSerializer(
        read_only=True, allow_null=True, help_text="null: gated against the baseline run's own report"
    )

    class Meta:
        model = EvaluationRun
        fields = (
            "id",
            "label",
            "golden_set",
            "golden_version",
            "target",
            "status",
            "final",
            "verdict",
            "progress",
            "trigger",
            "triggered_by",
            "params",
            "effective_params",
            "rebaseline",
            "rescore_baseline",
            "baseline_run",
            "baseline_rescore",
            "adopted_from",
            "error_message",
            "created",
            "started_at",
            "finished_at",
            "links",
        )

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, obj: EvaluationRun) -> dict[str, Any]:
        return {"done": obj.done, "total": obj.total, "errored": obj.errors, "percent": round(obj.percent, 2)}

    @extend_schema_field(AdoptedFromSerializer(allow_null=True))
    def get_adopted_from(self, obj: EvaluationRun) -> dict[str, Any] | None:
        adoption = next(iter(obj.adoptions.all()), None)  # prefetched by the list
        if adoption is None:
            return None
        return {
            "experiment": adoption.experiment_id,
            "adoption": adoption.pk,
            "rank": adoption.rank,
            "configuration": adoption.configuration,
            "reverted": not adoption.stands,
            "link": _absolute(self.context, "api:experiment-detail", adoption.experiment_id),
        }

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_baseline_run(self, obj: EvaluationRun) -> int | None:
        return obj.baseline.run_id if obj.baseline_id is not None and obj.baseline is not None else None


class RunCreateSerializer(serializers.Serializer[Any]):
    golden_set = serializers.SlugField(help_text="the golden set's slug")
    target = serializers.CharField(max_length=100, help_text="the search target's name")
    version = serializers.CharField(
        max_length=100,
        required=False,
        help_text="golden version name (default: the version of the target's baseline on this set, else "
        "the set's newest)",
    )
    params = serializers.DictField(
        child=serializers.JSONField(),
        required=False,
        default=dict,
        help_text='overrides of the target\'s params and stage toggles for this run, e.g. {"rewrite": true}',
    )
    rebaseline = serializers.BooleanField(
        required=False, default=False, help_text="gate as a rebaseline (identity differences are notes)"
    )
    rescore_baseline = serializers.BooleanField(
        required=False,
        default=False,
        help_text="when the baseline is on another golden version, gate against its stored lists "
        "re-scored on this run's version (without it, or rebaseline, such a run is refused: 400)",
    )
    trigger = serializers.ChoiceField(
        choices=[EvaluationRun.Trigger.API.value, EvaluationRun.Trigger.CI.value],
        required=False,
        default=EvaluationRun.Trigger.API.value,
        help_text="how the run was started: api, or ci for a pipeline",
    )


class FindingSerializer(serializers.Serializer[Any]):
    kind = serializers.CharField()
    scope = serializers.CharField(allow_null=True)
    metric = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class VerdictSerializer(serializers.Serializer[Any]):
    run_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=EvaluationRun.Status.choices)
    final = serializers.BooleanField()
    verdict = serializers.ChoiceField(choices=EvaluationRun.Verdict.choices)
    error_message = serializers.CharField(allow_blank=True)
    baseline_run = serializers.IntegerField(allow_null=True)
    failures = FindingSerializer(many=True)
    warnings = FindingSerializer(many=True)
    notes = serializers.ListField(child=serializers.CharField())
    top_losers = serializers.ListField(child=serializers.DictField(), help_text="as in the gate artifact")
    delta_interval = serializers.DictField(
        allow_null=True, help_text="the core nDCG change: mean, n, paired bootstrap interval, p_value"
    )
    comparison = serializers.DictField(
        allow_null=True,
        help_text="each change over the queries both runs counted (n, baseline, current, delta, interval, "
        "p_value, budget, status): core, core_weighted, shadow, strata, traffic_bands, failure_modes",
    )
    left_out = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        allow_null=True,
        help_text="core queries no change counts, by reason: errored_baseline, errored_current, "
        "errored_both, new, retired",
    )
    overlap = serializers.DictField(
        allow_null=True,
        help_text="how much this run's lists overlap the baseline's (docs/metrics.md, \"Overlap\"): k, p, "
        "n, identical, jaccard and rbo (each mean, low, high, level, resamples, seed, n); null without a "
        "baseline",
    )
    means = serializers.DictField(
        child=serializers.DictField(child=serializers.FloatField(allow_null=True)),
        help_text="this run's core means side by side: metric -> {mean, weighted} (weighted null where the "
        "metric has no traffic-weighted twin)",
    )
    summary_markdown = serializers.CharField(help_text="the gate as a pull-request comment")
    page = serializers.URLField()


class ProblemsSerializer(serializers.Serializer[Any]):
    """The one error shape of every operation (evaluation/runs/api/errors.py)."""

    detail = serializers.CharField(help_text="what went wrong, in a few words")
    problems = serializers.ListField(
        child=serializers.CharField(), help_text="each thing to fix, one sentence each; may be empty"
    )


class CancelSerializer(serializers.Serializer[Any]):
    cancelled = serializers.BooleanField(help_text="false when the run had already finished")
    run = RunReceiptSerializer()
