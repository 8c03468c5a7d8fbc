"""The side-by-side studies' API (docs/api.md, "Side-by-side studies"): create a study (from two finished
runs, or on two targets searched now: a pending study until both runs finish), read its progress
and results (the analysis, `assay.sxs.SxsAnalysis.to_dict()`, with the verdict), download its answers
as CSV or JSONL with the sides undone and the study's seed, and close or reopen it (docs/sxs.md,
"Closing a study").

Who: reviewers of the study's set, as on the pages (`evaluation.studies.access`; anything else is 404).
Scopes: `read` to read, `studies:write` to create, close and reopen. Raters answer on their page only,
never here.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.http import Http404, HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from assay.sxs import SxsRule
from evaluation.runs import access
from evaluation.runs.api.base import READ, ApiView, ObjectAction, golden_set_of, problems, version_of
from evaluation.runs.api.serializers import ProblemsSerializer
from evaluation.runs.models import EvaluationRun
from evaluation.studies.access import get_pending, get_study, studies_for, study_progress
from evaluation.studies.models import SHOWN_DEFAULT, SHOWN_MAX, PendingStudy, StudyEvent, SxsStudy
from evaluation.studies.services import (
    DEFAULT_EXAMPLES,
    DEFAULT_INSTRUCTIONS,
    MAX_SEED,
    StudyError,
    StudySpec,
    study_analysis,
    study_create,
)
from evaluation.studies.services.close import WHY_MAX, StudyStateError, study_close, study_reopen
from evaluation.studies.services.export import study_export_csv, study_export_jsonl
from evaluation.studies.services.pending import pending_resolve, study_on_targets
from evaluation.studies.services.planning import study_created_expectation

STUDIES_WRITE = "studies:write"
ANSWER_FILES = {"csv": "text/csv", "jsonl": "application/x-ndjson"}


class RuleSerializer(serializers.Serializer[Any]):
    min_lower = serializers.FloatField(required=False, default=SxsRule().min_lower)
    critical_junk_fails = serializers.BooleanField(required=False, default=SxsRule().critical_junk_fails)
    min_queries = serializers.IntegerField(required=False, default=SxsRule().min_queries, min_value=1)


class StudyCreateSerializer(serializers.Serializer[Any]):
    run_a = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False, help_text="run A, the baseline (finished)"
    )
    run_b = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False, help_text="run B, the candidate (finished)"
    )
    target_a = serializers.CharField(
        max_length=200, required=False, help_text="instead of runs: the target searched now as run A"
    )
    target_b = serializers.CharField(max_length=200, required=False, help_text="... and as run B")
    golden_set = serializers.SlugField(
        max_length=100,
        required=False,
        help_text="with targets: the set (slug) whose golden version they search",
    )
    version = serializers.CharField(
        max_length=200,
        required=False,
        help_text="with targets: the golden version (default: the set's newest)",
    )
    raters = serializers.ListField(
        child=serializers.CharField(max_length=150), min_length=1, help_text="usernames of the set's raters"
    )
    name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    rater_name = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        allow_blank=True,
        help_text="the name raters see (docs/sxs.md); empty: the name when it names no target, parameter or "
        'run, else "Study of <date>"',
    )
    selection = serializers.ChoiceField(choices=SxsStudy.Selection.values, required=False, default="all")
    stratum = serializers.CharField(max_length=100, required=False, default="", allow_blank=True)
    size = serializers.IntegerField(min_value=1, max_value=1_000_000, required=False, allow_null=True)
    seed = serializers.IntegerField(
        min_value=0,
        max_value=MAX_SEED,
        required=False,
        allow_null=True,
        help_text="empty: drawn and recorded",
    )
    shown = serializers.IntegerField(min_value=1, max_value=SHOWN_MAX, required=False, default=SHOWN_DEFAULT)
    answers_per_query = serializers.IntegerField(min_value=1, max_value=100, required=False, default=2)
    instructions_name = serializers.SlugField(max_length=100, required=False, default="default")
    instructions = serializers.CharField(max_length=20000, required=False, default=DEFAULT_INSTRUCTIONS)
    examples = serializers.CharField(
        max_length=20000, required=False, default=DEFAULT_EXAMPLES, allow_blank=True
    )
    rule = RuleSerializer(required=False)


class StudyEventSerializer(serializers.ModelSerializer[Any]):
    kind = serializers.CharField(read_only=True, help_text="closed or reopened")
    by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, help_text="who closed or reopened it (who promoted the run)"
    )
    verdict = serializers.CharField(
        read_only=True, help_text="the verdict as it stood: at a close, the one frozen then"
    )
    baseline = serializers.PrimaryKeyRelatedField(  # type: ignore[var-annotated]
        read_only=True, help_text="the baseline whose promotion closed it (null: a reviewer's close)"
    )

    class Meta:
        model = StudyEvent
        fields = ["kind", "by", "at", "why", "verdict", "baseline"]


class WhySerializer(serializers.Serializer[Any]):
    why = serializers.CharField(
        max_length=WHY_MAX, required=False, default="", allow_blank=True, help_text="recorded with the act"
    )


class ReopenSerializer(serializers.Serializer[Any]):
    why = serializers.CharField(
        max_length=WHY_MAX, help_text="why the study opens again (required, recorded)"
    )


class OnVersion(serializers.ModelSerializer[Any]):
    """A study's (or pending study's) golden set by slug and golden version by name; FIELDS lead both."""

    FIELDS = ("id", "name", "golden_set", "golden_version", "run_a", "run_b")

    golden_set: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    golden_version: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )


class StudySerializer(OnVersion):
    instructions = serializers.CharField(source="instructions.__str__", read_only=True)
    # Plain text, not the model's choices: a second "verdict" enum would collide with the runs' in the schema.
    verdict = serializers.SerializerMethodField(
        help_text='pass, fail or inconclusive (docs/sxs.md, "Verdict"), made from the answers as they stand '
        "(a closed study's: frozen when it closed, closed_at)"
    )
    selection = serializers.CharField(read_only=True, help_text="all, stratum, movers or sample")
    raters = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    closed_at = serializers.DateTimeField(
        read_only=True,
        help_text="when the study closed, its verdict read then and frozen (no answer or undo after); "
        "null while open",
    )
    events = StudyEventSerializer(many=True, read_only=True, help_text="closes and reopenings, newest first")
    links = serializers.SerializerMethodField()

    class Meta:
        model = SxsStudy
        fields = [
            *OnVersion.FIELDS,
            "rater_name",
            "selection",
            "stratum",
            "size",
            "seed",
            "shown",
            "answers_per_query",
            "raters",
            "instructions",
            "rule",
            "left_out",
            "verdict",
            "closed_at",
            "events",
            "progress",
            "created",
            "links",
        ]

    @extend_schema_field(OpenApiTypes.STR)
    def get_verdict(self, study: SxsStudy) -> str:
        return str(study_analysis(study)["verdict"]["result"])

    def get_raters(self, study: SxsStudy) -> list[str]:
        return sorted(study.raters.values_list("username", flat=True))

    def get_progress(self, study: SxsStudy) -> dict[str, Any]:
        progress = study_progress(study)
        return {
            "answers": progress["done"],
            "expected": progress["total"],
            "raters": [
                {"rater": r["rater__username"], "answered": r["done"], "assigned": r["total"]}
                for r in progress["raters"]
            ],
        }

    def get_links(self, study: SxsStudy) -> dict[str, str]:
        request = self.context["request"]
        page = reverse("evaluation:study_detail", args=[study.pk])
        results = reverse("api:study-results", args=[study.pk])
        return {"page": request.build_absolute_uri(page), "results": request.build_absolute_uri(results)}


class ExpectedIntervalSerializer(serializers.Serializer[Any]):
    """`assay.sxs.Expectation.to_dict()`: how wide the study's interval will likely be at its size, and
    whether that can decide (docs/sxs.md, "How wide the interval will likely be")."""

    queries = serializers.IntegerField(help_text="the queries the study asks (identical lists are not asked)")
    spread = serializers.FloatField(help_text="the spread of the query means assumed, on -3..3")
    studies = serializers.IntegerField(
        help_text="earlier studies of the set the spread was pooled over; 0: the stated default"
    )
    half_width = serializers.FloatField(help_text="the 95% interval will likely be the mean +- this")
    needed = serializers.IntegerField(
        allow_null=True,
        help_text="queries at which a candidate as good as the baseline likely passes; null: none would",
    )
    warn = serializers.BooleanField(help_text="even a mean of 0 would likely leave the study inconclusive")
    text = serializers.CharField(help_text="the line the form and the creation say")
    warning = serializers.CharField(allow_blank=True, help_text='why the size cannot decide ("" unless warn)')


class StudyCreatedSerializer(StudySerializer):
    """The 201 of a created study: the study, and the interval its size will likely give."""

    expected_interval = serializers.SerializerMethodField()

    class Meta(StudySerializer.Meta):
        fields = [*StudySerializer.Meta.fields, "expected_interval"]

    @extend_schema_field(ExpectedIntervalSerializer)
    def get_expected_interval(self, study: SxsStudy) -> dict[str, Any]:
        # The page says the same when the study is made: docs/sxs.md, "How wide the interval will likely be".
        return study_created_expectation(study).to_dict()


class PendingStudySerializer(OnVersion):
    status = serializers.CharField(read_only=True, help_text="waiting (for runs), created or failed")
    links = serializers.SerializerMethodField()

    class Meta:
        model = PendingStudy
        fields = [
            *OnVersion.FIELDS,
            "status",
            "reason",
            "study",
            "created",
            "resolved",
            "links",
        ]

    def get_links(self, pending: PendingStudy) -> dict[str, str | None]:
        request = self.context["request"]
        here = request.build_absolute_uri(reverse("api:study-pending", args=[pending.pk]))
        page = request.build_absolute_uri(reverse("evaluation:study_pending", args=[pending.pk]))
        runs = [
            request.build_absolute_uri(reverse("api:run-detail", args=[r]))
            for r in (pending.run_a_id, pending.run_b_id)
        ]
        study = (
            request.build_absolute_uri(reverse("api:study-detail", args=[pending.study_id]))
            if pending.study_id is not None
            else None
        )
        return {"self": here, "page": page, "run_a": runs[0], "run_b": runs[1], "study": study}


class StudyListCreate(ApiView, generics.ListCreateAPIView[SxsStudy]):
    """Studies of the sets you review, newest first (`?golden_set=<slug>`); POST creates one."""

    serializer_class = StudySerializer
    required_scopes = {"GET": READ, "POST": STUDIES_WRITE}
    query = {"golden_set": None}

    @extend_schema(parameters=[OpenApiParameter("golden_set", OpenApiTypes.STR, description="set slug")])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> Any:
        studies = studies_for(self.request.user).prefetch_related("events__by").order_by("-created", "-id")
        slug = self.request.query_params.get("golden_set")
        return studies.filter(golden_set__slug=slug) if slug else studies

    @extend_schema(
        request=StudyCreateSerializer,
        responses={
            201: StudyCreatedSerializer,
            202: OpenApiResponse(PendingStudySerializer, description="on targets: the pending study"),
            400: ProblemsSerializer,
            404: OpenApiResponse(ProblemsSerializer, description="no run by that id you can see"),
        },
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = StudyCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        runs = [name for name in ("run_a", "run_b") if values.get(name) is not None]
        targets = [name for name in ("target_a", "target_b", "golden_set") if values.get(name)]
        if sorted(runs) != ["run_a", "run_b"] and sorted(targets) != ["golden_set", "target_a", "target_b"]:
            return problems(
                "the study cannot be created",
                [
                    "name either run_a and run_b (two finished runs), or target_a, target_b and golden_set "
                    "(two targets searched now)"
                ],
            )
        if runs and targets:
            return problems(
                "the study cannot be created",
                ["name either two runs or two targets (with golden_set), not both"],
            )
        users = {u.get_username(): u for u in get_user_model().objects.filter(username__in=values["raters"])}
        unknown = sorted(set(values["raters"]) - set(users))
        if unknown:
            return problems("the study cannot be created", [f"raters: no user named {', '.join(unknown)}"])
        raters = [users[name] for name in dict.fromkeys(values["raters"])]
        if targets:
            return self._on_targets(request, values, raters)
        run_a = access.get_run(request.user, values["run_a"])
        run_b = access.get_run(request.user, values["run_b"])
        spec = StudySpec.read(run_a, run_b, raters, values)
        try:
            study = study_create(spec=spec, by=request.user)
        except StudyError as exc:
            return problems("the study cannot be created", exc.problems)
        created = get_study(request.user, study.pk)
        body = StudyCreatedSerializer(created, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["links"]["page"]})

    def _on_targets(self, request: Request, values: dict[str, Any], raters: list[Any]) -> Response:
        """Start a run on each target and answer 202 with the pending study (it becomes a study when both
        runs have finished: `evaluation.studies.services.pending`)."""
        golden_set = golden_set_of(request, values["golden_set"])
        version = version_of(request, golden_set.slug, values["version"]) if values.get("version") else None
        visible = access.targets_for(request.user)
        chosen = []
        for name in ("target_a", "target_b"):
            # A name is unique among a set's targets: the set's own first, else one set up elsewhere
            # (which run_create refuses in words as not set up for this set), as starting a run does.
            named = visible.filter(name=values[name])
            target = named.filter(golden_sets=golden_set).first() or named.first()
            if target is None:
                raise Http404(f"no target named {values[name]!r}")
            chosen.append(target)
        try:
            pending = study_on_targets(
                golden_set=golden_set,
                target_a=chosen[0],
                target_b=chosen[1],
                golden_version=version,
                raters=raters,
                values=values,
                by=request.user,
                trigger=EvaluationRun.Trigger.API,
            )
        except StudyError as exc:
            return problems("the study cannot be created", exc.problems)
        body = PendingStudySerializer(pending, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["links"]["self"]})


class PendingStudyDetail(ApiView, generics.RetrieveAPIView[PendingStudy]):
    """A study asked for on two targets: waiting for its two runs, created (`study` names it) or failed
    (`reason` says why). Reading it resolves it when both runs have finished."""

    serializer_class = PendingStudySerializer
    required_scopes = {"GET": READ}

    def get_object(self) -> PendingStudy:
        return pending_resolve(get_pending(self.request.user, self.kwargs["pk"]))


class StudyDetail(ApiView, generics.RetrieveAPIView[SxsStudy]):
    """A study: its set-up and progress (answers so far, per rater) and its verdict as last made."""

    serializer_class = StudySerializer
    required_scopes = {"GET": READ}

    def get_object(self) -> SxsStudy:
        return get_study(self.request.user, self.kwargs["pk"])


class StudyResults(ApiView):
    """The study's analysis as the page shows it (docs/sxs.md, "Analysis" and "Verdict"), made from the
    answers as they stand."""

    required_scopes = {"GET": READ}

    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="SxsAnalysis.to_dict()")})
    def get(self, request: Request, pk: int) -> Response:
        study = get_study(request.user, pk)
        return Response({"study": study.pk, "seed": study.seed, **study_analysis(study)})


class StudyAnswers(ApiView):
    """Every answer, sides undone (preference in the candidate's favour, junk per run),
    with the study's seed."""

    required_scopes = {"GET": READ}

    @extend_schema(
        parameters=[
            OpenApiParameter("fmt", OpenApiTypes.STR, OpenApiParameter.PATH, enum=list(ANSWER_FILES))
        ],
        responses={
            (200, "text/csv"): OpenApiTypes.BINARY,
            (200, "application/x-ndjson"): OpenApiTypes.BINARY,
        },
    )
    def get(self, request: Request, pk: int, fmt: str) -> HttpResponse:
        study = get_study(request.user, pk)
        if fmt not in ANSWER_FILES:
            raise Http404(f"no answers format {fmt!r}: one of {', '.join(ANSWER_FILES)}")
        text = study_export_csv(study) if fmt == "csv" else study_export_jsonl(study)
        response = HttpResponse(text, content_type=f"{ANSWER_FILES[fmt]}; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-answers.{fmt}"'
        return response


class _StudyAct(ObjectAction):
    """A reviewer's act on a study (close, reopen; `ObjectAction`): the study as it is after, or the
    refusal in words (409 when it changes nothing: closed already, or open)."""

    required_scopes = {"POST": STUDIES_WRITE}
    serializer_class = StudySerializer
    refusals = (
        (StudyStateError, "nothing changed", status.HTTP_409_CONFLICT),
        (StudyError, "the study cannot be changed", status.HTTP_400_BAD_REQUEST),
    )

    def target(self, request: Request, pk: int) -> SxsStudy:
        return get_study(request.user, pk)

    def change(self, *, study: SxsStudy, by: Any, why: str) -> Any:
        raise NotImplementedError

    def act(self, request: Request, obj: SxsStudy, values: dict[str, Any]) -> Response:
        self.change(study=obj, by=request.user, why=values["why"])
        after = get_study(request.user, obj.pk)
        return Response(StudySerializer(after, context=self.get_serializer_context()).data)


ACT_RESPONSES = {
    200: StudySerializer,
    400: ProblemsSerializer,
    404: OpenApiResponse(ProblemsSerializer, description="no study by that id you review"),
    409: OpenApiResponse(ProblemsSerializer, description="closed already (close) or open (reopen)"),
}


class StudyClose(_StudyAct):
    """Close the study: its verdict read from the answers as they stand and frozen with the time
    (`closed_at`); no answer or undo is taken after, until a reviewer reopens it. Recorded in `events`."""

    body = WhySerializer

    def change(self, *, study: SxsStudy, by: Any, why: str) -> Any:
        return study_close(study=study, by=by, why=why)

    @extend_schema(request=WhySerializer, responses=ACT_RESPONSES)
    def post(self, request: Request, pk: int) -> Response:
        return self.perform(request, pk)


class StudyReopen(_StudyAct):
    """Reopen a closed study, saying why (recorded in `events`): answers and undos are taken again and
    its verdict follows them."""

    body = ReopenSerializer

    def change(self, *, study: SxsStudy, by: Any, why: str) -> Any:
        return study_reopen(study=study, by=by, why=why)

    @extend_schema(request=ReopenSerializer, responses=ACT_RESPONSES)
    def post(self, request: Request, pk: int) -> Response:
        return self.perform(request, pk)
