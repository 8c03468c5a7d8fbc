"""API endpoints of experiments (docs/api.md, "Experiments"), like the runs': list and start
(`/experiments/`), status with the result and the adoptions (`/experiments/<id>/`), cancel, **Use this
configuration** (`/experiments/<id>/use/`) and its revert (`/experiments/<id>/adoptions/<id>/revert/`).
Objects are looked up through `evaluation.runs.access` (the runs' rule: those who review the golden set;
others get 404); reading needs the `read` scope, the rest `runs:write`."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from assay.experiment import (
    DEFAULT_ALPHA,
    DEFAULT_COVERAGE_MARGIN,
    DEFAULT_SEED,
    DEFAULT_SPLIT,
    DEFAULT_TOP,
    MAX_CONFIGS,
    RANKING_METRICS,
)
from evaluation.experiments.access import experiments_for, get_experiment
from evaluation.experiments.models import Experiment, ExperimentAdoption
from evaluation.experiments.services.adopt import adoption_revert, adoption_runs, experiment_adopt
from evaluation.experiments.services.coverage import experiment_gaps, experiment_rescore
from evaluation.experiments.services.experiments import (
    ExperimentError,
    experiment_cancel,
    experiment_create,
    experiment_echoes,
)
from evaluation.runs import access
from evaluation.runs.action_words import GAPS_ACTIONS
from evaluation.runs.api.base import (
    RUNS_WRITE,
    ObjectAction,
    ObjectDetail,
    SetTargetStatusList,
    listed_by_set_target_status,
    problems,
    set_target_status,
    start_on,
    start_responses,
    version_of,
)
from evaluation.runs.api.serializers import ProblemsSerializer
from evaluation.runs.models import EvaluationRun
from golden_io import selectors as golden_selectors


class AdoptSerializer(serializers.Serializer[Any]):
    rationale = serializers.CharField(max_length=5000, help_text="why this configuration (recorded)")
    rank = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_CONFIGS,
        help_text="the configuration's tuning rank (default: the winner); any confirmed configuration that "
        "beat the baseline",
    )


class RevertSerializer(serializers.Serializer[Any]):
    reason = serializers.CharField(max_length=5000, help_text="why it is reverted (recorded)")


class AdoptionSerializer(serializers.Serializer[Any]):
    """An adoption's record (docs/experiments.md, "Use this configuration" and "Revert")."""

    id = serializers.IntegerField()
    experiment = serializers.IntegerField()
    target = serializers.CharField()
    rank = serializers.IntegerField(allow_null=True, help_text="the configuration's tuning rank")
    configuration = serializers.DictField(help_text="the configuration's own grid values")
    params_before = serializers.DictField(help_text="what the target sent before: params and stage toggles")
    params_after = serializers.DictField(help_text="what it sent after")
    rationale = serializers.CharField()
    adopted_by = serializers.CharField()
    adopted_at = serializers.DateTimeField()
    run = serializers.IntegerField(allow_null=True, help_text="the confirming run it started")
    run_label = serializers.CharField(allow_null=True)
    run_link = serializers.CharField(allow_null=True)
    reverted_at = serializers.DateTimeField(allow_null=True)
    reverted_by = serializers.CharField(allow_null=True)
    revert_reason = serializers.CharField(allow_blank=True)
    runs_used = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="the runs (you can see) that sent the adopted params: so far, or until the revert",
    )


def adoption_body(request: Request, adoption: ExperimentAdoption) -> dict[str, Any]:
    run = adoption.run
    used = adoption_runs(adoption)
    visible = set(access.runs_for(request.user).filter(pk__in=used).values_list("pk", flat=True))
    return {
        "id": adoption.pk,
        "experiment": adoption.experiment_id,
        "target": adoption.target.name,
        "rank": adoption.rank,
        "configuration": adoption.configuration,
        "params_before": adoption.params_before,
        "params_after": adoption.params_after,
        "rationale": adoption.rationale,
        "adopted_by": adoption.adopted_by.get_username(),
        "adopted_at": adoption.adopted_at,
        "run": run.pk if run is not None else None,
        "run_label": run.label if run is not None else None,
        "run_link": request.build_absolute_uri(reverse("api:run-detail", args=[run.pk])) if run else None,
        "reverted_at": adoption.reverted_at,
        "reverted_by": adoption.reverted_by.get_username() if adoption.reverted_by else None,
        "revert_reason": adoption.revert_reason,
        "runs_used": [pk for pk in used if pk in visible],
    }


class ExperimentSerializer(serializers.ModelSerializer[Experiment]):
    """An experiment: what it sweeps, its status and progress, and once it succeeded its `result` (the
    content of `assay sweep`'s SWEEP.json, plus `best_strata`; docs/experiments.md)."""

    golden_set = serializers.SlugRelatedField(  # type: ignore[var-annotated]
        source="golden_version.golden_set", slug_field="slug", read_only=True
    )
    golden_version = serializers.SlugRelatedField(slug_field="name", read_only=True)  # type: ignore[var-annotated]
    target = serializers.SlugRelatedField(slug_field="name", read_only=True)  # type: ignore[var-annotated]
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)  # type: ignore[var-annotated]
    configurations = serializers.SerializerMethodField()
    echoes = serializers.SerializerMethodField()
    rescores = serializers.SerializerMethodField()
    adoptions = serializers.SerializerMethodField()
    final = serializers.SerializerMethodField()
    page = serializers.SerializerMethodField()

    class Meta:
        model = Experiment
        fields: tuple[str, ...] = (
            "id",
            "golden_set",
            "golden_version",
            "target",
            "grid",
            "configurations",
            "metric",
            "fraction",
            "seed",
            "top",
            "alpha",
            "coverage_margin",
            "status",
            "phase",
            "final",
            "total",
            "done",
            "errors",
            "error_message",
            "echoes",
            "created_by",
            "created",
            "started_at",
            "finished_at",
            "result",
            "rescores",
            "adoptions",
            "page",
        )
        read_only_fields: tuple[str, ...] = fields

    def get_configurations(self, obj: Experiment) -> int:
        return len(obj.configs)

    def get_echoes(self, obj: Experiment) -> list[dict[str, Any]]:
        """The configurations that returned the baseline's results on every query they searched, read
        from the answers so far while it runs (docs/experiments.md, "Parameters that change nothing")."""
        return experiment_echoes(experiment=obj)

    def get_rescores(self, obj: Experiment) -> list[dict[str, Any]]:
        """The experiment re-scored on newer versions, newest first: each `result` as `result` is, on
        that version's labels, from the same stored answers (docs/experiments.md, "Coverage")."""
        return [
            {
                "id": r.pk,
                "golden_version": r.golden_version.name,
                "created_by": r.created_by.get_username() if r.created_by else None,
                "created": r.created.isoformat(),
                "result": r.result,
            }
            for r in obj.rescores.select_related("golden_version", "created_by")
        ]

    @extend_schema_field(AdoptionSerializer(many=True))
    def get_adoptions(self, obj: Experiment) -> list[dict[str, Any]]:
        """Its configurations used on the target, newest first, each with its revert once reverted."""
        request = self.context["request"]
        rows = obj.adoptions.select_related("target", "adopted_by", "reverted_by", "run__target")
        return [adoption_body(request, a) for a in rows.defer("run__report", "run__gate", "run__key_map")]

    def get_final(self, obj: Experiment) -> bool:
        return obj.status in Experiment.FINAL

    def get_page(self, obj: Experiment) -> str:
        url = reverse("evaluation:experiment_detail", args=[obj.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request is not None else url


class ExperimentListSerializer(ExperimentSerializer):
    """A list's row: everything but the grid and the result (GET the experiment for those)."""

    class Meta(ExperimentSerializer.Meta):
        fields = tuple(
            f
            for f in ExperimentSerializer.Meta.fields
            if f not in ("grid", "result", "echoes", "rescores", "adoptions")
        )
        read_only_fields = fields


class ExperimentCreateSerializer(serializers.Serializer[Any]):
    golden_set = serializers.SlugField(help_text="the golden set's slug")
    target = serializers.CharField(max_length=100, help_text="the search target's name")
    version = serializers.CharField(max_length=100, required=False, help_text="default: the set's newest")
    grid = serializers.JSONField(
        help_text='{"params": {name: [values]}} or {"configs": [{name: value}, ...]}, at most 500 '
        "configurations (an object, or its JSON text)"
    )
    metric = serializers.ChoiceField(choices=list(RANKING_METRICS), required=False, default="ndcg")
    split = serializers.FloatField(required=False, default=DEFAULT_SPLIT, help_text="share that tunes")
    top = serializers.IntegerField(
        required=False, default=DEFAULT_TOP, max_value=MAX_CONFIGS, help_text="configurations confirmed"
    )
    seed = serializers.IntegerField(
        required=False, default=DEFAULT_SEED, min_value=-(2**31), max_value=2**31 - 1
    )
    alpha = serializers.FloatField(
        required=False,
        default=DEFAULT_ALPHA,
        help_text="a winner's held-out gain has a Holm-adjusted p-value below it",
    )
    coverage_margin = serializers.FloatField(
        required=False,
        default=DEFAULT_COVERAGE_MARGIN,
        help_text="warn when the best's judged@k is below the baseline's by more than this",
    )


class ExperimentCancelSerializer(serializers.Serializer[Any]):
    cancelled = serializers.BooleanField()
    experiment = ExperimentListSerializer()


def _refused(detail: str) -> tuple[tuple[type[Exception], str, int], ...]:
    """An experiment service's refusal, answered as a 400 with `detail`."""
    return ((ExperimentError, detail, status.HTTP_400_BAD_REQUEST),)


def _experiment(request: Request, pk: int) -> Experiment:
    return get_experiment(request.user, pk)


def _read_only(view: str) -> str:
    return f"only reviewers of the golden set {view}"


@listed_by_set_target_status(Experiment.Status.values)
class ExperimentListCreate(SetTargetStatusList):
    """Experiments you can see, newest first (filters: golden_set, target, status); POST starts one."""

    serializer_class = ExperimentListSerializer

    def get_queryset(self) -> QuerySet[Experiment]:
        rows = experiments_for(self.request.user).defer("result", "tuning", "split", "grid")
        rows = set_target_status(rows, self.request)
        return rows.order_by("-created", "-id")

    @extend_schema(request=ExperimentCreateSerializer, responses=start_responses(ExperimentSerializer))
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        start = start_on(
            request,
            ExperimentCreateSerializer,
            refused=lambda slug: _read_only(f"{slug} start experiments on it"),
        )
        if isinstance(start, Response):
            return start
        values, golden_set, target = start.values, start.golden_set, start.target
        version = (
            version_of(request, golden_set.slug, values["version"])
            if values.get("version")
            else golden_selectors.version_latest(golden_set=golden_set)
        )
        if version is None:
            return problems(
                "no golden version", [f"golden set {golden_set.slug} has no version yet: freeze one first"]
            )
        try:
            experiment = experiment_create(
                golden_version=version,
                target=target,
                grid=values["grid"],
                created_by=request.user,
                fraction=values["split"],
                seed=values["seed"],
                top=values["top"],
                metric=values["metric"],
                alpha=values["alpha"],
                coverage_margin=values["coverage_margin"],
            )
        except ExperimentError as exc:
            return problems("the experiment cannot start", exc.problems)
        body = ExperimentSerializer(
            _experiment(request, experiment.pk), context=self.get_serializer_context()
        ).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["page"]})


class ExperimentDetail(ObjectDetail):
    """An experiment's status and progress, and its result once it succeeded."""

    serializer_class = ExperimentSerializer

    def target(self, request: Request, pk: int) -> Experiment:
        return _experiment(request, pk)


class _ExperimentAction(ObjectAction):
    """An act on an experiment (`ObjectAction`): those who review its set may (`what` they do, in the
    refusal's words); with `finished`, only once it succeeded (else 409)."""

    required_scopes = {"POST": RUNS_WRITE}
    what = ""
    finished = False

    def target(self, request: Request, pk: int) -> Experiment:
        return _experiment(request, pk)

    def forbidden(self, request: Request, obj: Experiment) -> str | None:
        return (
            None if access.may_trigger(request.user, obj.golden_version.golden_set) else _read_only(self.what)
        )

    def conflict(self, obj: Experiment) -> tuple[str, str] | None:
        if self.finished and obj.status != Experiment.Status.SUCCEEDED:
            return "not finished", f"experiment {obj.pk} is {obj.status}: it has no answers yet"
        return None


class ExperimentCancel(_ExperimentAction):
    """Cancel a queued or running experiment (those who review its set): whether it was still active, and
    the experiment as it is after."""

    serializer_class = ExperimentCancelSerializer
    what = "cancel its experiments"

    def act(self, request: Request, obj: Experiment, values: dict[str, Any]) -> Response:
        cancelled = experiment_cancel(experiment=obj, by=request.user)
        row = ExperimentListSerializer(
            _experiment(request, obj.pk), context=self.get_serializer_context()
        ).data
        return Response({"cancelled": cancelled, "experiment": row})

    @extend_schema(request=None, responses={200: ExperimentCancelSerializer, 403: ProblemsSerializer})
    def post(self, request: Request, pk: int) -> Response:
        return self.perform(request, pk)


class ExperimentAdopt(_ExperimentAction):
    """**Use this configuration**: a configuration that beat the baseline (`rank`, the winner by default)
    saved on the target (recorded with the rationale) and a full run started with it; it becomes the
    baseline only through the usual review."""

    serializer_class = AdoptSerializer
    body = AdoptSerializer
    what = "use an experiment's configuration"
    refusals = _refused("the configuration was not used")

    def act(self, request: Request, obj: Experiment, values: dict[str, Any]) -> Response:
        adoption = experiment_adopt(
            experiment=obj,
            by=request.user,
            rationale=values["rationale"],
            rank=values.get("rank"),
            trigger=EvaluationRun.Trigger.API,
        )
        return Response(
            AdoptionSerializer(adoption_body(request, adoption)).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        request=AdoptSerializer,
        responses={201: AdoptionSerializer, 400: ProblemsSerializer, 403: ProblemsSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        return self.perform(request, pk)


class AdoptionRevert(_ExperimentAction):
    """**Revert**: the target's params and stage toggles before the adoption written back exactly,
    recorded with the reason; the reply names the runs that sent the adopted ones."""

    serializer_class = RevertSerializer
    body = RevertSerializer
    what = "revert an experiment's configuration"
    refusals = _refused("not reverted")

    def act(self, request: Request, obj: Experiment, values: dict[str, Any]) -> Response:
        adoption = ExperimentAdoption.objects.filter(experiment=obj, pk=self.kwargs["adoption_id"]).first()
        if adoption is None:
            raise Http404("no such adoption of this experiment")
        reverted = adoption_revert(adoption=adoption, by=request.user, reason=values["reason"])
        return Response(AdoptionSerializer(adoption_body(request, reverted)).data)

    @extend_schema(
        request=RevertSerializer,
        responses={200: AdoptionSerializer, 400: ProblemsSerializer, 403: ProblemsSerializer},
    )
    def post(self, request: Request, pk: int, adoption_id: int) -> Response:
        return self.perform(request, pk)


class GapsSerializer(serializers.Serializer[Any]):
    to = serializers.ChoiceField(
        choices=list(GAPS_ACTIONS), help_text="raters: into the pools; judge: the set's qualified judge"
    )


class GapsOutcomeSerializer(serializers.Serializer[Any]):
    queued = serializers.DictField(help_text="query id -> the documents queued or sent")
    added = serializers.IntegerField(help_text="documents new to their pools")
    sentences = serializers.ListField(child=serializers.CharField(), help_text="what it did, in words")


class RescoreSerializer(serializers.Serializer[Any]):
    version = serializers.CharField(max_length=100, required=False, help_text="default: the set's newest")


class ExperimentGaps(_ExperimentAction):
    """The unjudged top-k documents of the baseline and the confirmed configurations, queued for rating
    or sent to the set's qualified judge (docs/experiments.md, "Coverage")."""

    serializer_class = GapsSerializer
    body = GapsSerializer
    what = "queue an experiment's documents"
    finished = True

    def act(self, request: Request, obj: Experiment, values: dict[str, Any]) -> Response:
        send, words = GAPS_ACTIONS[values["to"]]
        outcome = send(gaps=experiment_gaps(experiment=obj), by=request.user)
        sentences = words(outcome, version=obj.golden_version.name)
        body = {
            "queued": outcome.queued,
            "added": outcome.added,
            "sentences": [text for _, text in sentences],
        }
        return Response(GapsOutcomeSerializer(body).data)

    @extend_schema(
        request=GapsSerializer,
        responses={200: GapsOutcomeSerializer, 403: ProblemsSerializer, 409: ProblemsSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        return self.perform(request, pk)


class ExperimentRescoreView(_ExperimentAction):
    """The stored answers scored on a newer version of the set, nothing searched; 201 with the experiment
    (its `rescores` first the new one)."""

    serializer_class = RescoreSerializer
    body = RescoreSerializer
    what = "re-score an experiment"
    finished = True
    refusals = _refused("not re-scored")

    def act(self, request: Request, obj: Experiment, values: dict[str, Any]) -> Response:
        name = values.get("version")
        version = version_of(request, obj.golden_version.golden_set.slug, name) if name else None
        experiment_rescore(experiment=obj, by=request.user, golden_version=version)
        body = ExperimentSerializer(_experiment(request, obj.pk), context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=RescoreSerializer,
        responses={201: ExperimentSerializer, 400: ProblemsSerializer, 403: ProblemsSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        return self.perform(request, pk)
