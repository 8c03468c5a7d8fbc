"""API views: thin. Each looks its object up through `evaluation.runs.access` (404 for what the user may not
see), calls one service or selector, and serializes. Scopes per view in `required_scopes`."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404, HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response

from evaluation.runs import access, selectors
from evaluation.runs.api.base import (
    GOLDEN_READ,
    READ,
    RUNS_WRITE,
    ApiView,
    ObjectAction,
    ObjectDetail,
    SetTargetStatusList,
    golden_set_of,
    listed_by_set_target_status,
    problems,
    set_target_status,
    start_on,
    start_responses,
    version_of,
)
from evaluation.runs.api.serializers import (
    VERSION_FILES,
    CancelSerializer,
    GoldenSetSerializer,
    GoldenVersionSerializer,
    ProblemsSerializer,
    RunCreateSerializer,
    RunReceiptSerializer,
    RunSerializer,
    TargetSerializer,
    VerdictSerializer,
)
from evaluation.runs.api.summary import core_means, gate_markdown
from evaluation.runs.models import EvaluationRun, SearchTarget
from evaluation.runs.services import RunError, run_cancel, run_create
from golden_io import selectors as golden_selectors
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet

# --- golden sets and versions --------------------------------------------------------------------


class GoldenSetList(ApiView, generics.ListAPIView[GoldenSet]):
    """The golden sets you review (admins: all)."""

    serializer_class = GoldenSetSerializer
    required_scopes = {"GET": GOLDEN_READ}

    def get_queryset(self) -> QuerySet[GoldenSet]:
        return access.golden_sets_for(self.request.user)


class GoldenSetDetail(ApiView, generics.RetrieveAPIView[GoldenSet]):
    serializer_class = GoldenSetSerializer
    required_scopes = {"GET": GOLDEN_READ}

    def get_object(self) -> GoldenSet:
        return golden_set_of(self.request, self.kwargs["slug"])


class VersionList(ApiView, generics.ListAPIView[GoldenVersion]):
    """A golden set's frozen versions, newest first."""

    serializer_class = GoldenVersionSerializer
    required_scopes = {"GET": GOLDEN_READ}

    def get_queryset(self) -> QuerySet[GoldenVersion]:
        golden_set = golden_set_of(self.request, self.kwargs["slug"])
        return golden_selectors.version_list(golden_set=golden_set)


class VersionDetail(ApiView, generics.RetrieveAPIView[GoldenVersion]):
    serializer_class = GoldenVersionSerializer
    required_scopes = {"GET": GOLDEN_READ}

    def get_object(self) -> GoldenVersion:
        return version_of(self.request, self.kwargs["slug"], self.kwargs["name"])


class VersionFile(ApiView):
    """A version's file (golden_io.selectors.VERSION_FILES): `json` (the frozen bytes, with
    X-Content-SHA256), or the version as `assay convert` writes a format (`jsonl`, `qrels`, `quepid-csv`,
    `srw-json`, `srw-csv`, `rre`, `ltr`; `trec-qrels` with its topics and `beir` with the set's documents
    as its corpus, each a zip)."""

    required_scopes = {"GET": GOLDEN_READ}

    @extend_schema(
        parameters=[
            OpenApiParameter("fmt", OpenApiTypes.STR, OpenApiParameter.PATH, enum=list(VERSION_FILES))
        ],
        responses={
            (200, content_type.split(";")[0]): OpenApiTypes.BINARY
            for content_type in sorted({f.content_type for f in golden_selectors.VERSION_FILES.values()})
        },
    )
    def get(self, request: Request, slug: str, name: str, fmt: str) -> HttpResponse:
        version = version_of(request, slug, name)
        if fmt not in VERSION_FILES:
            raise Http404(f"no file format {fmt!r}: one of {', '.join(VERSION_FILES)}")
        # The same bytes and headers as the version page's download (one selector); the access check
        # above is the API's.
        body, content_type, filename, headers = golden_selectors.version_file_get(version=version, fmt=fmt)
        disposition = {"Content-Disposition": f'attachment; filename="{filename}"'}
        return HttpResponse(body, content_type=content_type, headers={**disposition, **headers})


# --- targets -------------------------------------------------------------------------------------


class TargetList(ApiView, generics.ListAPIView[SearchTarget]):
    """Search targets you can see; `?golden_set=<slug>` keeps those evaluated on that set."""

    serializer_class = TargetSerializer
    required_scopes = {"GET": READ}
    query = {"golden_set": None}

    @extend_schema(parameters=[OpenApiParameter("golden_set", OpenApiTypes.STR, description="set slug")])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[SearchTarget]:
        targets = access.targets_for(self.request.user)
        slug = self.request.query_params.get("golden_set")
        if slug:
            targets = targets.filter(golden_sets__slug=slug)
        return targets


class TargetDetail(ApiView, generics.RetrieveAPIView[SearchTarget]):
    serializer_class = TargetSerializer
    required_scopes = {"GET": READ}

    def get_object(self) -> SearchTarget:
        return access.get_target(self.request.user, self.kwargs["pk"])


# --- runs ----------------------------------------------------------------------------------------


def _run(request: Request, pk: int) -> EvaluationRun:
    return access.get_run(request.user, pk)


def _page_url(request: Request, run: EvaluationRun) -> str:
    return request.build_absolute_uri(reverse("evaluation:run_detail", args=[run.pk]))


@listed_by_set_target_status(EvaluationRun.Status.values)
class RunListCreate(SetTargetStatusList):
    """Runs you can see, newest first (filters: golden_set, target, status); POST starts one."""

    serializer_class = RunSerializer

    def get_queryset(self) -> QuerySet[EvaluationRun]:
        rows = access.run_rows(set_target_status(access.runs_for(self.request.user), self.request))
        return rows.prefetch_related("adoptions")  # each row's `adopted_from`

    @extend_schema(request=RunCreateSerializer, responses=start_responses(RunReceiptSerializer))
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        start = start_on(
            request, RunCreateSerializer, refused=lambda slug: f"only reviewers of {slug} start runs on it"
        )
        if isinstance(start, Response):
            return start
        values, golden_set, target = start.values, start.golden_set, start.target
        if values.get("version"):
            version = version_of(request, golden_set.slug, values["version"])
        else:
            # Like the Start-a-run form: the baseline's version compares like with like.
            baseline = selectors.baseline_get(golden_set=golden_set, target=target)
            latest = golden_selectors.version_latest(golden_set=golden_set)
            if latest is None:
                return problems(
                    "no golden version",
                    [f"golden set {golden_set.slug} has no version yet: freeze one first"],
                )
            version = baseline.run.golden_version if baseline is not None else latest
        refused = selectors.gate_plan(golden_version=version, target=target).problems(
            rescore=values["rescore_baseline"], rebaseline=values["rebaseline"], via=selectors.API_WORDS
        )
        if refused:
            return problems("the run would be refused by its gate", refused)
        try:
            run = run_create(
                golden_version=version,
                target=target,
                triggered_by=request.user,
                trigger=values["trigger"],
                params=values["params"],
                rebaseline=values["rebaseline"],
                rescore_baseline=values["rescore_baseline"],
            )
        except RunError as exc:
            return problems("the run cannot start", exc.problems)
        # What was started and where to follow it; what it does is `read`'s (the run link).
        body = RunReceiptSerializer(_run(request, run.pk), context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["links"]["run"]})


class RunDetail(ObjectDetail):
    """A run's status and progress (what `assay remote run --wait` polls)."""

    serializer_class = RunSerializer

    def target(self, request: Request, pk: int) -> EvaluationRun:
        return _run(request, pk)


class RunReport(ApiView):
    """The run's report: the `assay run` artifact plus durable keys (docs/metrics.md)."""

    required_scopes = {"GET": READ}

    @extend_schema(
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="the report artifact"),
            409: OpenApiResponse(ProblemsSerializer, description="the run has no report (yet)"),
        }
    )
    def get(self, request: Request, pk: int) -> Response:
        run = _run(request, pk)
        if run.report is None:
            return problems(
                "no report",
                [f"run {run.pk} is {run.status}: a report is written when a run succeeds"],
                status.HTTP_409_CONFLICT,
            )
        return Response(run.report)


class RunVerdict(ApiView):
    """The verdict and what tripped it, top losers, and the gate as markdown; null tables until the run
    has finished."""

    required_scopes = {"GET": READ}
    serializer_class = VerdictSerializer

    def get(self, request: Request, pk: int) -> Response:
        run = _run(request, pk)
        gate: dict[str, Any] = run.gate or {}
        page = _page_url(request, run)
        body = {
            "run_id": run.pk,
            "status": run.status,
            "final": run.status in EvaluationRun.FINAL,
            "verdict": run.verdict,
            "error_message": run.error_message,
            "baseline_run": gate.get("baseline_run"),
            "failures": gate.get("failures", []),
            "warnings": gate.get("warnings", []),
            "notes": gate.get("notes", []),
            "top_losers": gate.get("top_losers", []),
            "delta_interval": gate.get("delta_interval"),
            "comparison": gate.get("comparison"),
            "left_out": gate.get("left_out"),
            "overlap": gate.get("overlap"),
            "means": core_means(run.report),
            "summary_markdown": gate_markdown(run, page_url=page),
            "page": page,
        }
        return Response(VerdictSerializer(body).data)


class RunCancel(ObjectAction):
    """Cancel a queued or running run (those who review its set): whether it was still active, and the
    run as it is after."""

    required_scopes = {"POST": RUNS_WRITE}
    serializer_class = CancelSerializer

    def target(self, request: Request, pk: int) -> EvaluationRun:
        return _run(request, pk)

    def forbidden(self, request: Request, obj: EvaluationRun) -> str | None:
        if access.may_manage_run(request.user, obj):
            return None
        return f"only reviewers of {obj.golden_version.golden_set.slug} cancel its runs"

    def act(self, request: Request, obj: EvaluationRun, values: dict[str, Any]) -> Response:
        cancelled = run_cancel(run=obj, by=request.user)
        receipt = RunReceiptSerializer(_run(request, obj.pk), context=self.get_serializer_context()).data
        return Response({"cancelled": cancelled, "run": receipt})

    @extend_schema(request=None, responses={200: CancelSerializer, 403: ProblemsSerializer})
    def post(self, request: Request, pk: int) -> Response:
        return self.perform(request, pk)
