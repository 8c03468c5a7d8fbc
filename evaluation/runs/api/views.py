"""API views: thin. Each looks its object up through `evaluation.runs.access` (404 for what the user may not
see), calls one service or selector, and serializes. Scopes per view in `required_scopes`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.db.models import QuerySet
from django.http import Http404, HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, mixins, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from assay.inputs import whole_number
from evaluation.runs import access, selectors
from evaluation.runs.api.pagination import OrderedLimitOffsetPagination
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

READ = "read"
GOLDEN_READ = "golden:read"
RUNS_WRITE = "runs:write"


def _choice(choices: Sequence[str]) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        return None if value in choices else f"expected one of {', '.join(choices)}"

    return check


def _whole(low: int, high: int) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        ok = whole_number(value, low=low, high=high) is not None
        return None if ok else f"expected a whole number from {low} to {high}"

    return check


PAGE_QUERY = {
    "limit": _whole(1, OrderedLimitOffsetPagination.max_limit),
    "offset": _whole(0, OrderedLimitOffsetPagination.max_offset),
}


class ApiView(generics.GenericAPIView[Any]):
    """Opts out of the login middleware (the API authenticates with DRF: token or session + CSRF).

    `query` names the query parameters a view reads, each with the check of its value (None: any
    value); a list view adds `limit` and `offset`. Any other parameter, or a value its check refuses, is
    a worded 400: a misspelt filter must not answer an unfiltered (or empty) page as if it had applied.
    """

    required_scopes: dict[str, str] = {}
    query: dict[str, Callable[[str], str | None] | None] = {}

    @classmethod
    def as_view(cls, **initkwargs: Any) -> Any:
        return login_not_required(super().as_view(**initkwargs))

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # authentication and scopes first: 401/403 before 400
        listing = request.method == "GET" and isinstance(self, mixins.ListModelMixin)
        known = {**self.query, **(PAGE_QUERY if listing else {})}
        problems = [
            f"{name}: a path part cannot hold a NUL character"
            for name, v in kwargs.items()
            if "\x00" in str(v)
        ]
        for name, values in request.query_params.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                # PostgreSQL text cannot hold one: refused here rather than failing the query.
                problems.append(f"{name!r}: a query parameter cannot hold a NUL character")
                continue
            if name not in known:
                listed = ", ".join(sorted(known)) or "none"
                problems.append(f"{name}: not a query parameter of this endpoint (it reads: {listed})")
                continue
            check = known[name]
            if len(values) > 1:
                problems.append(f"{name}: given {len(values)} times; give it once")
            elif check is not None and (refused := check(values[0])):
                problems.append(f"{name} {values[0]!r}: {refused}")
        if problems:
            raise ValidationError({"detail": "invalid query parameters", "problems": problems})


def _problems(detail: str, problems: list[str], code: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"detail": detail, "problems": problems}, status=code)


class NoEndpoint(ApiView):
    """A path under /api/v1/ that names no endpoint: a 404 in the error shape rather than the site's
    HTML page, after authentication like every endpoint (a stranger gets 401, as anywhere)."""

    schema = None  # not an operation
    required_scopes = dict.fromkeys(("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"), READ)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super(ApiView, self).initial(request, *args, **kwargs)  # no query parameters to check: a 404

    def _missing(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound(f"no API endpoint at {request.path}")

    get = head = post = put = patch = delete = _missing  # OPTIONS: DRF's own answer


# --- golden sets and versions --------------------------------------------------------------------


def _golden_set(request: Request, slug: str) -> GoldenSet:
    return access.get_golden_set(request.user, slug)


def _version(request: Request, slug: str, name: str) -> GoldenVersion:
    version = golden_selectors.version_get(golden_set=_golden_set(request, slug), name=name)
    if version is None:
        raise Http404("no such golden version")
    return version


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
        return _golden_set(self.request, self.kwargs["slug"])


class VersionList(ApiView, generics.ListAPIView[GoldenVersion]):
    """A golden set's frozen versions, newest first."""

    serializer_class = GoldenVersionSerializer
    required_scopes = {"GET": GOLDEN_READ}

    def get_queryset(self) -> QuerySet[GoldenVersion]:
        golden_set = _golden_set(self.request, self.kwargs["slug"])
        return golden_selectors.version_list(golden_set=golden_set)


class VersionDetail(ApiView, generics.RetrieveAPIView[GoldenVersion]):
    serializer_class = GoldenVersionSerializer
    required_scopes = {"GET": GOLDEN_READ}

    def get_object(self) -> GoldenVersion:
        return _version(self.request, self.kwargs["slug"], self.kwargs["name"])


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
        version = _version(request, slug, name)
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


def set_target_status(rows: QuerySet[Any], request: Request) -> QuerySet[Any]:
    """A list's rows (runs, experiments) filtered by its `golden_set`, `target` and `status` parameters."""
    query = request.query_params
    if query.get("golden_set"):
        rows = rows.filter(golden_version__golden_set__slug=query["golden_set"])
    if query.get("target"):
        rows = rows.filter(target__name=query["target"])
    if query.get("status"):
        rows = rows.filter(status=query["status"])
    return rows


class RunListCreate(ApiView, generics.ListCreateAPIView[EvaluationRun]):
    """Runs you can see, newest first (filters: golden_set, target, status); POST starts one."""

    serializer_class = RunSerializer
    required_scopes = {"GET": READ, "POST": RUNS_WRITE}
    query = {"golden_set": None, "target": None, "status": _choice(EvaluationRun.Status.values)}

    @extend_schema(
        parameters=[
            OpenApiParameter("golden_set", OpenApiTypes.STR, description="set slug"),
            OpenApiParameter("target", OpenApiTypes.STR, description="target name"),
            OpenApiParameter("status", OpenApiTypes.STR, enum=EvaluationRun.Status.values),
        ]
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[EvaluationRun]:
        rows = access.run_rows(set_target_status(access.runs_for(self.request.user), self.request))
        return rows.prefetch_related("adoptions")  # each row's `adopted_from`

    @extend_schema(
        request=RunCreateSerializer,
        responses={
            201: RunReceiptSerializer,
            400: ProblemsSerializer,
            404: OpenApiResponse(description="no golden set, version or target by that name you can see"),
        },
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = RunCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        golden_set = _golden_set(request, values["golden_set"])
        if not access.may_trigger(request.user, golden_set):
            return _problems("not allowed", [f"only reviewers of {golden_set.slug} start runs on it"], 403)
        # A name is unique among a set's targets (evaluation.runs.services.target_name_problems): the set's
        # own first; else one set up elsewhere, which run_create refuses as not set up for this set.
        named = access.targets_for(request.user).filter(name=values["target"])
        target = named.filter(golden_sets=golden_set).first() or named.first()
        if target is None:
            raise Http404(f"no target named {values['target']!r}")
        if values.get("version"):
            version = _version(request, golden_set.slug, values["version"])
        else:
            # Like the Start-a-run form: the baseline's version compares like with like.
            baseline = selectors.baseline_get(golden_set=golden_set, target=target)
            latest = golden_selectors.version_latest(golden_set=golden_set)
            if latest is None:
                return _problems(
                    "no golden version",
                    [f"golden set {golden_set.slug} has no version yet: freeze one first"],
                )
            version = baseline.run.golden_version if baseline is not None else latest
        refused = selectors.gate_plan(golden_version=version, target=target).problems(
            rescore=values["rescore_baseline"], rebaseline=values["rebaseline"], via=selectors.API_WORDS
        )
        if refused:
            return _problems("the run would be refused by its gate", refused)
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
            return _problems("the run cannot start", exc.problems)
        # What was started and where to follow it; what it does is `read`'s (the run link).
        body = RunReceiptSerializer(_run(request, run.pk), context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["links"]["run"]})


class RunDetail(ApiView, generics.RetrieveAPIView[EvaluationRun]):
    """A run's status and progress (what `assay remote run --wait` polls)."""

    serializer_class = RunSerializer
    required_scopes = {"GET": READ}

    def get_object(self) -> EvaluationRun:
        return _run(self.request, self.kwargs["pk"])


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
            return _problems(
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


class RunCancel(ApiView):
    required_scopes = {"POST": RUNS_WRITE}
    serializer_class = CancelSerializer

    @extend_schema(request=None, responses={200: CancelSerializer, 403: ProblemsSerializer})
    def post(self, request: Request, pk: int) -> Response:
        run = _run(request, pk)
        if not access.may_manage_run(request.user, run):
            return _problems(
                "not allowed",
                [f"only reviewers of {run.golden_version.golden_set.slug} cancel its runs"],
                403,
            )
        cancelled = run_cancel(run=run, by=request.user)
        run = _run(request, pk)
        receipt = RunReceiptSerializer(run, context=self.get_serializer_context()).data
        return Response({"cancelled": cancelled, "run": receipt})
