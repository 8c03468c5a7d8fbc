"""What every endpoint of the API is built on (runs', studies' and experiments' alike): `ApiView` (the
query parameters each view reads, checked), the error shape of a refusal (`problems`), the token scopes the
views ask for, the golden set and version lookups (through `evaluation.runs.access`: 404 for what the
caller may not see), a list filtered by set, target and status, the start of work on a set and a target
(`start_on`: a run, an experiment), and `ObjectAction`, the one shape of a
POST that acts on one object (cancel a run or an experiment; use, revert, queue the gaps of or re-score an
experiment; close or reopen a study)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_not_required
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics, mixins, serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from assay.inputs import whole_number
from evaluation.runs import access
from evaluation.runs.api.pagination import OrderedLimitOffsetPagination
from evaluation.runs.api.serializers import ProblemsSerializer
from evaluation.runs.models import SearchTarget
from golden_io import selectors as golden_selectors
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet

ListT = TypeVar("ListT", bound="SetTargetStatusList")

READ = "read"
GOLDEN_READ = "golden:read"
RUNS_WRITE = "runs:write"


def choice(choices: Sequence[str]) -> Callable[[str], str | None]:
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


def problems(detail: str, problems: list[str], code: int = status.HTTP_400_BAD_REQUEST) -> Response:
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


# --- golden sets and versions


def golden_set_of(request: Request, slug: str) -> GoldenSet:
    return access.get_golden_set(request.user, slug)


def version_of(request: Request, slug: str, name: str) -> GoldenVersion:
    version = golden_selectors.version_get(golden_set=golden_set_of(request, slug), name=name)
    if version is None:
        raise Http404("no such golden version")
    return version


def set_target_status(rows: QuerySet[Any], request: Request) -> QuerySet[Any]:
    """A list's rows (runs, experiments) filtered by its `golden_set`, `target` and `status` parameters
    (`listed_by_set_target_status`)."""
    query = request.query_params
    if query.get("golden_set"):
        rows = rows.filter(golden_version__golden_set__slug=query["golden_set"])
    if query.get("target"):
        rows = rows.filter(target__name=query["target"])
    if query.get("status"):
        rows = rows.filter(status=query["status"])
    return rows


class SetTargetStatusList(ApiView, generics.ListCreateAPIView[Any]):
    """A list of what runs on a set and a target (runs, experiments), newest first, filtered by its
    `golden_set`, `target` and `status` parameters (`set_target_status`, the statuses its class names
    with `@listed_by_set_target_status`); a POST starts one (`start_on`)."""

    required_scopes = {"GET": READ, "POST": RUNS_WRITE}


def listed_by_set_target_status(statuses: Sequence[str]) -> Callable[[type[ListT]], type[ListT]]:
    """The class decorator of a `SetTargetStatusList`: the query parameters it reads (a status among
    `statuses`), and the same as the schema describes them."""

    def decorate(cls: type[ListT]) -> type[ListT]:
        cls.query = {"golden_set": None, "target": None, "status": choice(statuses)}
        parameters = [
            OpenApiParameter("golden_set", OpenApiTypes.STR, description="set slug"),
            OpenApiParameter("target", OpenApiTypes.STR, description="target name"),
            OpenApiParameter("status", OpenApiTypes.STR, enum=list(statuses)),
        ]
        described: type[ListT] = extend_schema_view(get=extend_schema(parameters=parameters))(cls)
        return described

    return decorate


# --- work started on a golden set and a target (a run, an experiment)

START_NOT_FOUND = OpenApiResponse(description="no golden set, version or target by that name you can see")


def start_responses(created: type[serializers.Serializer[Any]]) -> dict[int, Any]:
    """The schema's answers of a POST that starts work: `created` (201), a refusal (400), nothing by
    the names given that the caller sees (404)."""
    return {201: created, 400: ProblemsSerializer, 404: START_NOT_FOUND}


@dataclass(frozen=True, slots=True)
class StartOn:
    """A POST that starts work, read: its validated body, its golden set and its target."""

    values: dict[str, Any]
    golden_set: GoldenSet
    target: SearchTarget


def start_on(
    request: Request, body: type[serializers.Serializer[Any]], *, refused: Callable[[str], str]
) -> StartOn | Response:
    """The body of a POST that starts work on a golden set and a target, validated (400), its set looked
    up (404), the caller's right to start work on it (a 403 in `refused(slug)`'s words), and the target by
    name: the set's own first (a name is unique among a set's targets:
    `evaluation.runs.services.target_name_problems`), else one set up elsewhere, which the service refuses
    as not set up for this set (404 when the caller sees none)."""
    data = body(data=request.data)
    data.is_valid(raise_exception=True)
    values = dict(data.validated_data)
    golden_set = golden_set_of(request, values["golden_set"])
    if not access.may_trigger(request.user, golden_set):
        return problems("not allowed", [refused(golden_set.slug)], status.HTTP_403_FORBIDDEN)
    named = access.targets_for(request.user).filter(name=values["target"])
    target = named.filter(golden_sets=golden_set).first() or named.first()
    if target is None:
        raise Http404(f"no target named {values['target']!r}")
    return StartOn(values, golden_set, target)


# --- one object read or acted on


class ObjectDetail(ApiView, generics.RetrieveAPIView[Any]):
    """GET one object the caller may see (`target`: 404 for what they may not), serialized."""

    required_scopes = {"GET": READ}

    def target(self, request: Request, pk: int) -> Any:
        raise NotImplementedError

    def get_object(self) -> Any:
        return self.target(self.request, self.kwargs["pk"])


class ObjectAction(ApiView):
    """A POST that acts on one object, in the one order every such endpoint keeps: the object looked up
    (`target`: 404 for what the caller may not see), the caller's right (`forbidden`: a 403 with the
    reason), the object's state (`conflict`: a 409), the body (`body`, validated: a 400), then `act`,
    whose service may refuse (an exception of `refusals`, each with its `problems`: the detail and status
    it answers with). A subclass names its object, its rule and its act; its `post` (where the schema is
    described) returns `self.perform(request, pk)`."""

    body: type[serializers.Serializer[Any]] | None = None
    refusals: tuple[tuple[type[Exception], str, int], ...] = ()

    def target(self, request: Request, pk: int) -> Any:
        raise NotImplementedError

    def forbidden(self, request: Request, obj: Any) -> str | None:
        """Why the caller may not act on `obj` (a 403), or None; by default those who see it may."""
        return None

    def conflict(self, obj: Any) -> tuple[str, str] | None:
        """`obj`'s state refusing the act (a 409: its detail and the problem), or None."""
        return None

    def act(self, request: Request, obj: Any, values: dict[str, Any]) -> Response:
        raise NotImplementedError

    def perform(self, request: Request, pk: int) -> Response:
        obj = self.target(request, pk)
        reason = self.forbidden(request, obj)
        if reason is not None:
            return problems("not allowed", [reason], status.HTTP_403_FORBIDDEN)
        found = self.conflict(obj)
        if found is not None:
            return problems(found[0], [found[1]], status.HTTP_409_CONFLICT)
        values: dict[str, Any] = {}
        if self.body is not None:
            data = self.body(data=request.data)
            data.is_valid(raise_exception=True)
            values = dict(data.validated_data)
        try:
            return self.act(request, obj, values)
        except tuple(kind for kind, _, _ in self.refusals) as exc:
            detail, code = next((d, c) for kind, d, c in self.refusals if isinstance(exc, kind))
            return problems(detail, list(getattr(exc, "problems", [str(exc)])), code)
