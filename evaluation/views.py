"""Evaluation pages: runs (list with live progress, trigger form, report, side-by-side, cancel, baseline
promotion, rebaseline, queueing unjudged documents), targets (list, detail with its nightly schedules,
form, trend charts), budgets, baseline history and API tokens.

Who sees what is `evaluation.api.access` (the API's rules too): admins everything, reviewers their golden
sets, whoever triggered a run that run; raters and outsiders get 404 (grading is blind). Views are thin:
look the object up through access, call one service or selector, render. The report page's tables are
built here from the stored report and gate JSON (display only: 4 decimals, never NaN, "—" with why).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.drift import LABELS, PER_QUERY_FIELD, SHOWN_METRICS, BudgetsError, paired_intervals
from assay.harness import redact_url
from assay.targets import SPEC_FIELDS, TargetError, TargetSpec, shown_headers
from evaluation import selectors, services
from evaluation.api import access
from evaluation.api.tokens import TokenError, api_token_create, api_token_list, api_token_revoke
from evaluation.models import (
    ApiToken,
    EvaluationRun,
    QueryRunResult,
    RunSchedule,
    SearchTarget,
    params_text,
)
from golden_io.models import GitExportConfig, GoldenVersion
from labeling.models import GoldenSet
from labeling.roles import is_admin, is_reviewer

Status = EvaluationRun.Status

# ------------------------------------------------------------------------------------- display values

# Higher is better for these; for the rates (empty, <3, error) lower is better.
HIGHER_IS_BETTER = ("ndcg", "mrr", "precision_at_k", "judged_at_k")
UNDEFINED = "—"


@dataclass(frozen=True, slots=True)
class Num:
    """One number as shown: rounded to 4 decimals, or "—" with the reason it is undefined."""

    text: str
    why: str = ""
    css: str = ""

    @property
    def undefined(self) -> bool:
        return self.text == UNDEFINED

    def __html__(self) -> str:
        """`{{ n }}` in a template: the value, or a dash whose title says why (no include per cell:
        a 2,000-query report has thousands of cells)."""
        if self.undefined:
            return format_html('<span title="{}">—</span>', self.why)
        return format_html('<span class="{}">{}</span>', self.css, self.text) if self.css else self.text

    def __str__(self) -> str:
        return self.text


def num(value: object, *, signed: bool = False, why: str = "no value", css: str = "") -> Num:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return Num(UNDEFINED, why)
    text = f"{value:+.4f}" if signed else f"{value:.4f}"
    # Float noise such as -3e-17 is no change: never "-0.0000".
    return Num("+0.0000" if text == "-0.0000" else text, css=css)


def _delta_css(metric: str, delta: float | None) -> str:
    if delta is None or abs(delta) < 5e-5:
        return ""
    better = delta > 0 if metric in HIGHER_IS_BETTER else delta < 0
    return "better" if better else "worse"


def _aggregate_value(aggregate: Mapping[str, Any] | None, metric: str) -> tuple[float | None, str]:
    """(value, why it is undefined) of one metric of a report aggregate ({"value", "n"})."""
    entry = (aggregate or {}).get(metric) or {}
    value = entry.get("value")
    if value is None:
        return None, "no query counted here (every one errored, or was expected empty)"
    return float(value), ""


def _interval_text(interval: Mapping[str, Any] | None, why: str) -> Num:
    if not interval or interval.get("low") is None:
        return Num(UNDEFINED, why)
    return Num(
        f"[{interval['low']:+.4f}, {interval['high']:+.4f}]",
        why=f"{interval['level']:.0%} paired bootstrap over {interval['n']} core queries "
        f"({interval['resamples']} resamples)",
    )


@dataclass
class MetricRow:
    metric: str
    label: str
    current: Num
    baseline: Num
    delta: Num
    interval: Num
    budget: str
    status: str


def metric_rows(run: EvaluationRun, baseline_report: Mapping[str, Any] | None) -> list[MetricRow]:
    """The core tier against the baseline: value, baseline, change, its interval, budget and status."""
    report = run.report or {}
    gate = run.gate or {}
    core = (report.get("tiers") or {}).get("core")
    compared = (gate.get("comparison") or {}).get("core") or {}
    has_baseline = baseline_report is not None and gate.get("baseline_run") is not None
    intervals = (
        paired_intervals(report.get("per_query", []), baseline_report.get("per_query", []))
        if has_baseline and baseline_report is not None
        else {}
    )
    base_core = ((baseline_report or {}).get("tiers") or {}).get("core")
    rows = []
    for metric in SHOWN_METRICS:
        value, why = _aggregate_value(core, metric)
        row = compared.get(metric) or {}
        if has_baseline:
            base, base_why = _aggregate_value(base_core, metric)
            delta = value - base if value is not None and base is not None else None
            baseline_num = num(base, why=base_why)
            delta_num = num(delta, signed=True, why="undefined on one side", css=_delta_css(metric, delta))
            interval = _interval_text(
                intervals.get(metric),
                "not gated: no interval" if metric not in PER_QUERY_FIELD else "no common scored query",
            )
        else:
            no_base = "no baseline for this golden set and target"
            baseline_num = delta_num = interval = Num(UNDEFINED, no_base)
        warn, fail = row.get("warn"), row.get("fail")
        budget = "" if warn is None and fail is None else f"{_short(warn)} / {_short(fail)}"
        rows.append(
            MetricRow(
                metric=metric,
                label=LABELS[metric],
                current=num(value, why=why),
                baseline=baseline_num,
                delta=delta_num,
                interval=interval,
                budget=budget,
                status=row.get("status", "") if has_baseline else "",
            )
        )
    return rows


def _short(value: object) -> str:
    return "–" if value is None else f"{value:g}" if isinstance(value, int | float) else str(value)


SLICE_METRICS = ("ndcg", "mrr", "precision_at_k", "empty_rate", "lt3_rate", "error_rate")
SLICE_TITLES = {"stratum": "Stratum", "locale": "Locale", "filters": "Filter presence"}


@dataclass
class SliceCell:
    value: Num
    delta: Num
    status: str = ""  # the gate's status for a gated stratum metric: pass, warn, fail


@dataclass
class SliceRow:
    name: str
    n_queries: int
    cells: list[SliceCell]
    tripped: bool = False


@dataclass
class SliceTable:
    kind: str
    title: str
    rows: list[SliceRow]


def _slice_row(
    name: str,
    aggregate: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    gated: Mapping[str, Any],
) -> SliceRow:
    cells = []
    for metric in SLICE_METRICS:
        value, why = _aggregate_value(aggregate, metric)
        if baseline is None:
            delta = Num(UNDEFINED, "no baseline, or this slice was not in it")
        else:
            base, _ = _aggregate_value(baseline, metric)
            change = value - base if value is not None and base is not None else None
            delta = num(change, signed=True, why="undefined on one side", css=_delta_css(metric, change))
        cells.append(SliceCell(num(value, why=why), delta, (gated.get(metric) or {}).get("status", "")))
    return SliceRow(
        name=name,
        n_queries=int(aggregate.get("n_queries", 0)),
        cells=cells,
        tripped=any(c.status in ("fail", "warn") for c in cells),
    )


def slice_tables(run: EvaluationRun, baseline_report: Mapping[str, Any] | None) -> list[SliceTable]:
    """Core-tier slices by stratum, locale and filter presence, each against the baseline's same slice;
    the strata the budgets gate carry the gate's status per metric."""
    slices = (run.report or {}).get("slices") or {}
    base_slices = (baseline_report or {}).get("slices") or {}
    strata_gate = ((run.gate or {}).get("comparison") or {}).get("strata") or {}
    tables = []
    for kind in ("stratum", "locale", "filters"):
        groups = slices.get(kind) or {}
        base_groups = base_slices.get(kind) or {}
        rows = [
            _slice_row(
                name.replace("_", " "),
                aggregate,
                base_groups.get(name) if baseline_report is not None else None,
                strata_gate.get(name, {}) if kind == "stratum" else {},
            )
            for name, aggregate in groups.items()
        ]
        tables.append(SliceTable(kind, SLICE_TITLES[kind], rows))
    return tables


def tier_rows(run: EvaluationRun, baseline_report: Mapping[str, Any] | None) -> list[SliceRow]:
    """Every tier (core gates; shadow and challenge are measured), against the baseline's tiers."""
    tiers = (run.report or {}).get("tiers") or {}
    base_tiers = (baseline_report or {}).get("tiers") or {}
    shadow_gate = ((run.gate or {}).get("comparison") or {}).get("shadow") or {}
    return [
        _slice_row(
            tier,
            aggregate,
            base_tiers.get(tier) if baseline_report is not None else None,
            shadow_gate if tier == "shadow" else {},
        )
        for tier, aggregate in tiers.items()
    ]


@dataclass
class LoserDoc:
    doc_id: str
    grade: int | None
    before: str
    after: str
    moved: str  # "up 2", "down 7", "gone", "new", ""
    css: str


@dataclass
class Loser:
    id: str
    text: str
    stratum: str
    baseline_ndcg: Num
    current_ndcg: Num
    drop: Num
    documents: list[LoserDoc] = field(default_factory=list)
    absent: int = 0  # graded documents in neither top k


def _movement(before: int | None, after: int | None) -> tuple[str, str]:
    if before == after:
        return ("" if before is not None else "not in either top k"), ""
    if before is None:
        return "new in top k", "better"
    if after is None:
        return "out of top k", "worse"
    return (f"up {before - after}", "better") if after < before else (f"down {after - before}", "worse")


def top_losers(gate: Mapping[str, Any]) -> list[Loser]:
    losers = []
    for row in gate.get("top_losers") or []:
        docs = []
        absent = 0
        for d in row.get("documents", []):
            if d.get("baseline_rank") is None and d.get("current_rank") is None:
                absent += 1
                continue
            moved, css = _movement(d.get("baseline_rank"), d.get("current_rank"))
            docs.append(
                LoserDoc(
                    d["doc_id"],
                    d.get("grade"),
                    str(d["baseline_rank"]) if d.get("baseline_rank") is not None else UNDEFINED,
                    str(d["current_rank"]) if d.get("current_rank") is not None else UNDEFINED,
                    moved,
                    css,
                )
            )
        losers.append(
            Loser(
                id=row["id"],
                text=row.get("text") or "",
                stratum=row.get("stratum") or "",
                baseline_ndcg=num(row.get("baseline_ndcg")),
                current_ndcg=num(row.get("current_ndcg")),
                drop=num(row.get("drop")),
                documents=docs,
                absent=absent,
            )
        )
    return losers


LIST_LIMIT = 50


@dataclass
class Capped:
    """A long list shown in part: the first LIST_LIMIT rows unless the page asks for all (`?all=name`)."""

    name: str
    rows: list[Any]
    total: int

    @property
    def hidden(self) -> int:
        return self.total - len(self.rows)


def capped(name: str, rows: Sequence[Any], show_all: str) -> Capped:
    shown = list(rows) if show_all == name else list(rows[:LIST_LIMIT])
    return Capped(name, shown, len(rows))


def _baseline_report(run: EvaluationRun) -> tuple[EvaluationRun | None, dict[str, Any] | None]:
    """The run the gate compared with (None when it had no baseline)."""
    baseline_run_id = (run.gate or {}).get("baseline_run")
    if baseline_run_id is None:
        return None, None
    base = EvaluationRun.objects.filter(pk=baseline_run_id).only("id", "report", "target", "golden_version")
    found = base.first()
    return found, (found.report if found is not None else None)


# ------------------------------------------------------------------------------------- access helpers


def _get_run(request: HttpRequest, run_id: int) -> EvaluationRun:
    return access.get_run(request.user, run_id)


def _get_set(request: HttpRequest, slug: str) -> GoldenSet:
    return access.get_golden_set(request.user, slug)


def _get_target(request: HttpRequest, pk: int) -> SearchTarget:
    return access.get_target(request.user, pk)


def _require_evaluation_user(request: HttpRequest) -> None:
    """Pages that list things: raters and users without a reviewer role get a 404 like everywhere."""
    if access.blind(request.user) or not (
        is_reviewer(request.user) or access.runs_for(request.user).exists()
    ):
        raise Http404("nothing here")


def _problems_message(request: HttpRequest, what: str, problems: Iterable[str]) -> None:
    messages.error(request, f"{what}: " + "; ".join(problems))


# ------------------------------------------------------------------------------------- runs: list


RUN_LIST_PAGE = 50


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    _require_evaluation_user(request)
    runs = access.runs_for(request.user)
    sets = list(access.golden_sets_for(request.user))
    targets = list(access.targets_for(request.user))
    chosen = {
        "set": request.GET.get("set", ""),
        "target": request.GET.get("target", ""),
        "status": request.GET.get("status", ""),
    }
    if chosen["set"]:
        runs = runs.filter(golden_version__golden_set__slug=chosen["set"])
    if chosen["target"].isdigit():
        runs = runs.filter(target_id=int(chosen["target"]))
    if chosen["status"] in Status.values:
        runs = runs.filter(status=chosen["status"])
    page = Paginator(access.run_rows(runs), RUN_LIST_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "evaluation/run_list.html",
        {
            "page": page,
            "runs": page.object_list,
            "sets": sets,
            "targets": targets,
            "statuses": Status.values,
            "chosen": chosen,
            "may_trigger": any(access.may_trigger(request.user, s) for s in sets),
        },
    )


@require_GET
def run_row(request: HttpRequest, run_id: int) -> HttpResponse:
    """One row of the run list, polled while the run is active (htmx swaps the row)."""
    run = _get_run(request, run_id)
    return render(request, "evaluation/_run_row.html", {"run": run})


@require_GET
def run_progress(request: HttpRequest, run_id: int) -> HttpResponse:
    """The report page's progress bar. Once the run is final the page reloads itself to show the report
    (HX-Refresh), so the poll ends where the verdict appears."""
    run = _get_run(request, run_id)
    progress = selectors.run_progress(run=run)
    response = render(request, "evaluation/_progress.html", {"run": run, "progress": progress})
    if progress["final"] and request.headers.get("HX-Request"):
        response["HX-Refresh"] = "true"
    return response


# ------------------------------------------------------------------------------------- runs: trigger


def parse_param_lines(text: str) -> tuple[dict[str, Any], list[str]]:
    """`KEY=VALUE` per line (values read as JSON when they are: `rewrite=true` is the boolean), or one
    JSON object. Returns (params, problems naming the line)."""
    text = text.strip()
    if not text:
        return {}, []
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return {}, [f"params: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"]
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
            params[key] = json.loads(value.strip())
        except json.JSONDecodeError:
            params[key] = value.strip()
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


class RunForm(ParamLinesForm):
    golden_version = VersionChoiceField(queryset=GoldenVersion.objects.none(), label="Golden version")
    target = forms.ModelChoiceField(queryset=SearchTarget.objects.none(), label="Search target")
    params = _param_lines_field("for this run only")
    rebaseline = forms.BooleanField(
        required=False,
        label="Gate as a rebaseline",
        help_text="accept a different golden version, k or scale than the baseline's (notes, not a refusal)",
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        sets = [s for s in access.golden_sets_for(user) if access.may_trigger(user, s)]
        versions = GoldenVersion.objects.filter(golden_set__in=sets).select_related("golden_set")
        version_field = self.fields["golden_version"]
        assert isinstance(version_field, forms.ModelChoiceField)
        version_field.queryset = versions.defer("content", "documents").order_by(
            "golden_set__slug", "-created"
        )
        target_field = self.fields["target"]
        assert isinstance(target_field, forms.ModelChoiceField)
        target_field.queryset = access.targets_for(user)
        # The newest version and a lone target are what a user picks nearly always.
        newest = version_field.queryset.order_by("-created", "-id").first()
        if newest is not None:
            self.initial.setdefault("golden_version", newest.pk)
        targets = list(target_field.queryset[:2])
        if len(targets) == 1:
            self.initial.setdefault("target", targets[0].pk)


@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    _require_evaluation_user(request)
    initial = {k: request.GET[k] for k in ("golden_version", "target", "params") if k in request.GET}
    form = RunForm(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        version: GoldenVersion = form.cleaned_data["golden_version"]
        try:
            run = services.run_create(
                golden_version=version,
                target=form.cleaned_data["target"],
                triggered_by=request.user,
                trigger=EvaluationRun.Trigger.WEB,
                params=form.cleaned_data["params"],
                rebaseline=form.cleaned_data["rebaseline"],
            )
        except services.RunError as exc:
            for problem in exc.problems:
                form.add_error(None, problem)
        else:
            messages.success(request, f"Run {run.pk} queued.")
            return redirect("evaluation:run_detail", run_id=run.pk)
    status = 422 if request.method == "POST" else 200
    return render(request, "evaluation/run_new.html", {"form": form}, status=status)


# ------------------------------------------------------------------------------------- runs: report


@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    golden_set = run.golden_version.golden_set
    may_review = services.can_review(request.user, golden_set)
    in_force = selectors.baseline_get(golden_set=golden_set, target=run.target)
    context: dict[str, Any] = {
        "run": run,
        "golden_set": golden_set,
        "progress": selectors.run_progress(run=run),
        "may_review": may_review,
        "may_manage": access.may_manage_run(request.user, run),
        "baseline_in_force": in_force,
        "is_baseline": in_force is not None and in_force.run_id == run.pk,
        "git_export": GitExportConfig.objects.filter(golden_set=golden_set).first(),
        "snapshot": _snapshot(run),
        "params": params_text(run.effective_params),
        "overrides": params_text(run.params) if run.params else "",
    }
    if run.report is not None:
        context.update(_report_context(run, show_all=request.GET.get("all", "")))
    return render(request, "evaluation/run_detail.html", context)


def _snapshot(run: EvaluationRun) -> dict[str, Any]:
    """The target as called (the run's snapshot): URL without credentials, headers as names or $VAR."""
    data = dict(run.target_snapshot or {})
    if not data:
        return {}
    try:
        spec = TargetSpec.from_dict(data)
    except TargetError:
        return {"name": data.get("name", ""), "problem": "the snapshot is from an older format"}
    return {
        "name": spec.name,
        "adapter": spec.adapter,
        "url": redact_url(spec.url),
        "headers": shown_headers(spec),
        "timeout": spec.timeout,
        "concurrency": spec.concurrency,
        "retries": spec.retries,
        "rate_limit": spec.rate_limit,
    }


def _report_context(run: EvaluationRun, *, show_all: str = "") -> dict[str, Any]:
    report = run.report or {}
    gate = run.gate or {}
    baseline_run, baseline_report = _baseline_report(run)
    errors = list(
        QueryRunResult.objects.filter(run=run, error__isnull=False)
        .only("query_id", "error", "http_status", "attempts", "latency_ms")
        .order_by("id")
    )
    texts = {row["id"]: row.get("text", "") for row in report.get("per_query", [])}
    per_query = [
        {
            "id": row["id"],
            "text": row.get("text", ""),
            "stratum": row.get("stratum") or "",
            "tier": row.get("tier") or "",
            "ndcg": num(row.get("ndcg"), why="errored: no value"),
            "mrr": num(row.get("mrr"), why="errored: no value"),
            "n": row.get("n"),
            "error": row.get("error"),
        }
        for row in report.get("per_query", [])
    ]
    meta = report.get("run") or {}
    return {
        "report": report,
        "gate": gate,
        "baseline_run": baseline_run,
        "metrics": metric_rows(run, baseline_report),
        "ci": _interval_text((report.get("ci") or {}).get("ndcg"), "no core query scored"),
        "tiers": tier_rows(run, baseline_report),
        "slices": slice_tables(run, baseline_report),
        "slice_labels": [LABELS[m] for m in SLICE_METRICS],
        "losers": top_losers(gate),
        "duplicates": capped("duplicates", selectors.near_duplicate_titles(run=run), show_all),
        "errors": capped("errors", [(row, texts.get(row.query_id, "")) for row in errors], show_all),
        "unresolved": capped("unresolved", (report.get("keys") or {}).get("unresolved", []), show_all),
        "unjudged": capped("unjudged", selectors.unjudged_in_top_k(run=run), show_all),
        "critical": report.get("critical", []),
        "flags": report.get("flags", {}),
        "per_query": capped("per-query", per_query, show_all),
        "meta": meta,
    }


@require_GET
def run_report_download(request: HttpRequest, run_id: int) -> HttpResponse:
    """The report artifact as `assay run` writes it (feed it to `assay gate`)."""
    from assay.artifacts import dump_artifact

    run = _get_run(request, run_id)
    if run.report is None:
        raise Http404("this run has no report yet")
    response = HttpResponse(dump_artifact(run.report), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-relevance.json"'
    return response


@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    if not access.may_manage_run(request.user, run):
        return HttpResponseForbidden("only who started the run, its set's reviewers and admins cancel it")
    if services.run_cancel(run=run, by=request.user):
        messages.success(request, f"Run {run.pk} cancelled.")
    else:
        messages.warning(request, f"Run {run.pk} had already finished ({run.status}).")
    return redirect("evaluation:run_detail", run_id=run.pk)


@require_POST
def run_promote(request: HttpRequest, run_id: int) -> HttpResponse:
    """Promote to baseline (`promote`), or the rebaseline workflow through git (`rebaseline`)."""
    run = _get_run(request, run_id)
    rationale = request.POST.get("rationale", "")
    rebaseline = request.POST.get("action") == "rebaseline"
    try:
        if rebaseline:
            baseline = services.rebaseline_write(run=run, by=request.user, rationale=rationale)
        else:
            baseline = services.baseline_promote(run=run, by=request.user, rationale=rationale)
    except services.BaselineError as exc:
        _problems_message(request, "Not promoted", exc.problems)
    else:
        text = (
            f"Run {run.pk} is now the baseline of {run.golden_version.golden_set.slug} on {run.target.name}"
        )
        if baseline.git_commit:
            text += f"; branch {baseline.git_branch} at {baseline.git_commit[:10]}"
            if baseline.git_push_error:
                messages.warning(
                    request, f"The push failed (the local commit is kept): {baseline.git_push_error}"
                )
        messages.success(request, text + ".")
    return redirect("evaluation:run_detail", run_id=run.pk)


@require_POST
def run_unjudged_queue(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    if not services.can_review(request.user, run.golden_version.golden_set):
        return HttpResponseForbidden("only the set's reviewers queue documents for rating")
    outcome = services.unjudged_queue(run=run, by=request.user)
    n_docs = sum(len(docs) for docs in outcome.queued.values())
    messages.success(
        request,
        f"Queued {n_docs} unjudged document(s) of {len(outcome.queued)} quer(y/ies) for rating "
        f"({outcome.added} new pool candidate(s)).",
    )
    if outcome.unknown_documents:
        shown = ", ".join(f"{q}/{d}" for q, d in outcome.unknown_documents[:10])
        more = (
            f" and {len(outcome.unknown_documents) - 10} more" if len(outcome.unknown_documents) > 10 else ""
        )
        messages.warning(request, f"Not in the set's documents (import them first): {shown}{more}.")
    if outcome.unknown_queries:
        messages.warning(request, f"Not queries of the labeling set: {', '.join(outcome.unknown_queries)}.")
    return redirect("evaluation:run_detail", run_id=run.pk)


# ------------------------------------------------------------------------------------- side by side


@require_GET
def run_compare(request: HttpRequest) -> HttpResponse:
    """Two runs for one query: `?a=<run>&b=<run>&query=<id>`; without a query, the queries by change."""
    try:
        a_id, b_id = int(request.GET.get("a", "")), int(request.GET.get("b", ""))
    except ValueError:
        raise Http404("give two runs: ?a=<run id>&b=<run id>") from None
    run_a, run_b = _get_run(request, a_id), _get_run(request, b_id)
    query_id = request.GET.get("query", "")
    context: dict[str, Any] = {
        "a": run_a,
        "b": run_b,
        "query_id": query_id,
        "a_params": params_text(run_a.effective_params),
        "b_params": params_text(run_b.effective_params),
    }
    if query_id:
        try:
            context["data"] = selectors.run_compare_query(run_a=run_a, run_b=run_b, query_id=query_id)
        except KeyError:
            raise Http404(f"neither run has the query {query_id}") from None
        context["rows"] = _compare_rows(context["data"])
        context["changes"] = [
            {**d, "moved_text": moved, "css": css}
            for d in context["data"]["documents"]
            for moved, css in [_movement(d["rank_a"], d["rank_b"])]
        ]
    else:
        context["choices"] = _compare_choices(run_a, run_b)
    return render(request, "evaluation/compare.html", context)


def _compare_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rank by rank, each run's document with its title and grade."""
    a_hits, b_hits = data["a"]["hits"], data["b"]["hits"]
    moves = {d["doc_id"]: d for d in data["documents"]}
    rows = []
    for i in range(max(len(a_hits), len(b_hits))):
        row: dict[str, Any] = {"rank": i + 1}
        for side, hits in (("a", a_hits), ("b", b_hits)):
            hit = hits[i] if i < len(hits) else None
            if hit is not None:
                move = moves.get(hit["doc_id"], {})
                other = move.get("rank_b" if side == "a" else "rank_a")
                hit = {**hit, "other_rank": other}
            row[side] = hit
        rows.append(row)
    return rows


def _compare_choices(run_a: EvaluationRun, run_b: EvaluationRun) -> list[dict[str, Any]]:
    before = {row["id"]: row for row in (run_a.report or {}).get("per_query", [])}
    choices = []
    for row in (run_b.report or {}).get("per_query", []):
        then = before.get(row["id"], {})
        a, b = then.get("ndcg"), row.get("ndcg")
        change = b - a if a is not None and b is not None else None
        choices.append(
            {
                "id": row["id"],
                "text": row.get("text", ""),
                "stratum": row.get("stratum") or "",
                "a": num(a, why="errored or not in run A"),
                "b": num(b, why="errored"),
                "change": num(
                    change, signed=True, why="undefined on one side", css=_delta_css("ndcg", change)
                ),
                "sort": change if change is not None else 0.0,
            }
        )
    choices.sort(key=lambda c: (c["sort"], c["id"]))
    return choices


# ------------------------------------------------------------------------------------- targets


def _json_field(label: str) -> forms.CharField:
    return forms.CharField(
        required=False,
        label=label,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "json"}),
    )


class TargetForm(forms.Form):
    """SearchTarget settings; JSON fields as text. The service validates meaning (TargetError)."""

    name = forms.CharField(max_length=100)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    adapter = forms.ChoiceField(choices=SearchTarget.Adapter.choices)
    url = forms.CharField(
        max_length=1000, label="URL", help_text="search endpoint, index URL or Solr core URL"
    )
    headers = _json_field("Headers (JSON)")
    params = _json_field("Params (JSON)")
    stages = _json_field("Stage toggles (JSON)")
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
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"{name}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None

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
        initial = {name: getattr(target, name) for name in (*SPEC_FIELDS, "description")}
        for name in cls.JSON_FIELDS:
            value = initial[name]
            initial[name] = "" if value in (None, {}) else json.dumps(value, indent=2, sort_keys=True)
        initial["golden_sets"] = list(target.golden_sets.all())
        return initial


def _problems_to_form(form: forms.Form, problems: Sequence[str], aliases: Mapping[str, str]) -> None:
    """Service problems start with the field they are about (`headers.X: ...`, `hour: ...`); `aliases`
    maps other beginnings to a field (`search URL ...` -> url). The rest go above the form."""
    for problem in problems:
        head = problem.split(":", 1)[0].split(".", 1)[0].strip()
        head = next((name for start, name in aliases.items() if head.startswith(start)), head)
        form.add_error(head if head in form.fields else None, problem)


TARGET_PROBLEM_FIELDS = {"search URL": "url"}


@require_GET
def target_list(request: HttpRequest) -> HttpResponse:
    _require_evaluation_user(request)
    targets = list(access.targets_for(request.user))
    return render(
        request,
        "evaluation/target_list.html",
        {
            "targets": [(t, redact_url(t.url), access.may_edit_target(request.user, t)) for t in targets],
            "may_create": access.may_create_target(request.user),
        },
    )


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
    enabled = forms.BooleanField(required=False, initial=True, help_text="off: kept, but starts no run")
    hour = forms.IntegerField(
        initial=2, label="Hour (UTC)", widget=forms.NumberInput(attrs={"min": 0, "max": 23})
    )
    minute = forms.IntegerField(initial=0, widget=forms.NumberInput(attrs={"min": 0, "max": 59}))
    params = _param_lines_field("for every nightly run")

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
        }


def _schedulable_sets(request: HttpRequest, target: SearchTarget) -> list[GoldenSet]:
    """The target's sets this user reviews (admins: all): the ones they may schedule."""
    mine = access.golden_sets_for(request.user).values("pk")
    return list(target.golden_sets.filter(pk__in=mine).order_by("slug"))


def _target_page(
    request: HttpRequest, target: SearchTarget, schedule_form: ScheduleForm | None = None, status: int = 200
) -> HttpResponse:
    # The sets this user reviews (admins: all): theirs to see baselines of and to schedule.
    visible_sets = set(access.golden_sets_for(request.user).values_list("pk", flat=True))
    listed = list(target.golden_sets.order_by("slug"))
    sets = [
        {
            "set": s,
            "visible": s.pk in visible_sets,
            "baseline": selectors.baseline_get(golden_set=s, target=target) if s.pk in visible_sets else None,
        }
        for s in listed
    ]
    runs = access.run_rows(access.runs_for(request.user).filter(target=target))[:20]
    schedules = list(target.schedules.filter(golden_set_id__in=visible_sets).select_related("golden_set"))
    schedulable = [s for s in listed if s.pk in visible_sets]  # as _schedulable_sets, from this query
    if schedule_form is None and schedulable:
        # `?schedule=<set>` (the edit link) fills the form with that schedule; so does a lone set's.
        wanted = request.GET.get("schedule") or (schedulable[0].slug if len(schedulable) == 1 else "")
        current = next((s for s in schedules if s.golden_set.slug == wanted), None)
        initial = ScheduleForm.initial_for(current) if current is not None else {"golden_set": wanted}
        schedule_form = ScheduleForm(sets=schedulable, initial=initial)
    return render(
        request,
        "evaluation/target_detail.html",
        {
            "target": target,
            "url": redact_url(target.url),
            "headers": shown_headers(target.spec()),
            "params": params_text(target.params),
            "stages": params_text(target.stages),
            "sets": sets,
            "runs": list(runs),
            "may_edit": access.may_edit_target(request.user, target),
            "schedules": schedules,
            "schedule_form": schedule_form,
        },
        status=status,
    )


@require_GET
def target_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _target_page(request, _get_target(request, pk))


@require_POST
def target_schedule(request: HttpRequest, pk: int) -> HttpResponse:
    """Set (`save`) or delete (`delete`) the nightly run of (golden set, target). Only the set's reviewers
    and admins: a target or set this user may not see is a 404, as on the rest of the page."""
    target = _get_target(request, pk)
    golden_set = _get_set(request, request.POST.get("golden_set", ""))
    back = reverse("evaluation:target_detail", args=[target.pk]) + "#schedules"
    if request.POST.get("action") == "delete":
        if services.schedule_delete(golden_set=golden_set, target=target):
            messages.success(request, f"Nightly run of {golden_set.slug} on {target.name} deleted.")
        else:
            messages.warning(request, f"{golden_set.slug} had no nightly run on {target.name}.")
        return redirect(back)
    form = ScheduleForm(request.POST, sets=_schedulable_sets(request, target))
    if form.is_valid():
        try:
            schedule = services.schedule_set(
                golden_set=golden_set,
                target=target,
                hour=form.cleaned_data["hour"],
                minute=form.cleaned_data["minute"],
                enabled=form.cleaned_data["enabled"],
                params=form.cleaned_data["params"],
                by=request.user,
            )
        except services.RunError as exc:
            _problems_to_form(form, exc.problems, ScheduleForm.PROBLEM_FIELDS)
        else:
            state = "" if schedule.enabled else " (off)"
            messages.success(
                request,
                f"Nightly run of {golden_set.slug} on {target.name} at "
                f"{schedule.hour:02d}:{schedule.minute:02d} UTC saved{state}.",
            )
            return redirect(back)
    return _target_page(request, target, schedule_form=form, status=422)


@require_http_methods(["GET", "POST"])
def target_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    target = _get_target(request, pk) if pk is not None else None
    if target is None and not access.may_create_target(request.user):
        raise Http404("nothing here")
    if target is not None and not access.may_edit_target(request.user, target):
        return HttpResponseForbidden("only admins, its owner or the reviewers of every set it lists edit it")
    initial = TargetForm.initial_for(target) if target is not None else {}
    form = TargetForm(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        values = {name: form.cleaned_data[name] for name in (*SPEC_FIELDS, "description")}
        values["rate_limit"] = form.cleaned_data["rate_limit"]
        chosen = list(form.cleaned_data["golden_sets"])
        try:
            if target is None:
                saved = services.target_create(owner=request.user, golden_sets=chosen, **values)
            else:
                # Sets this user cannot see stay listed: only their reviewers or an admin take them off.
                visible = set(access.golden_sets_for(request.user).values_list("pk", flat=True))
                kept = [s for s in target.golden_sets.all() if s.pk not in visible]
                saved = services.target_update(target=target, golden_sets=[*chosen, *kept], **values)
        except TargetError as exc:
            _problems_to_form(form, exc.problems, TARGET_PROBLEM_FIELDS)
        else:
            messages.success(request, f"Target {saved.name} saved.")
            return redirect("evaluation:target_detail", pk=saved.pk)
    status = 422 if request.method == "POST" else 200
    return render(request, "evaluation/target_form.html", {"form": form, "target": target}, status=status)


# ------------------------------------------------------------------------------------- trend charts


TREND_CHART = {"width": 480, "height": 200, "left": 62, "right": 28, "top": 28, "bottom": 24}
VERDICT_COLOURS = {"pass": "#1a7f37", "warn": "#9a6700", "fail": "#cf222e", "none": "#5b6577"}
LABEL_ALL_POINTS_UP_TO = 12


@dataclass
class TrendPoint:
    run_id: int
    x: float
    y: float
    value: str
    label: bool
    colour: str
    title: str


@dataclass
class TrendChart:
    metric: str
    label: str
    lines: list[str]  # SVG polyline "x,y x,y" per golden version
    points: list[TrendPoint]
    y_ticks: list[tuple[float, str]]
    x_labels: list[tuple[float, str]]
    empty_why: str = ""


def trend_charts(points: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> list[TrendChart]:
    """One inline SVG chart per metric over a target's finished runs, oldest first. The line breaks where
    the golden version changes (values under two versions are not comparable) and at undefined values;
    each point is coloured by the run's verdict and labelled with its value (all of them up to
    LABEL_ALL_POINTS_UP_TO runs, else the last and the extremes)."""
    c = TREND_CHART
    pad = 24  # keeps the first and last value labels clear of the axis labels
    inner_w = c["width"] - c["left"] - c["right"] - 2 * pad
    inner_h = c["height"] - c["top"] - c["bottom"]
    n = len(points)
    xs = [c["left"] + pad + (inner_w * (i / (n - 1)) if n > 1 else inner_w / 2) for i in range(n)]
    charts = []
    for metric in metrics:
        values = [p.get(metric) for p in points]
        defined = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
        if not defined:
            charts.append(
                TrendChart(metric, LABELS.get(metric, metric), [], [], [], [], "no defined value yet")
            )
            continue
        low, high = min(defined), max(defined)
        margin = max((high - low) * 0.1, 0.005)
        low, high = max(0.0, low - margin), min(1.0, high + margin) if high <= 1.0 else high + margin

        def y_of(v: float, low: float = low, high: float = high) -> float:
            return c["top"] + inner_h * (1 - (v - low) / (high - low if high > low else 1.0))

        chart_points: list[TrendPoint] = []
        lines: list[str] = []
        segment: list[str] = []
        previous_version = None
        labelled = set()
        if n > LABEL_ALL_POINTS_UP_TO:
            indexed = [(float(v), i) for i, v in enumerate(values) if isinstance(v, int | float)]
            labelled = {min(indexed)[1], max(indexed)[1], indexed[-1][1]}
        for i, (point, value) in enumerate(zip(points, values, strict=True)):
            version = point["golden_version"]
            if (value is None or version != previous_version) and len(segment) > 1:
                lines.append(" ".join(segment))
            if value is None or version != previous_version:
                segment = []
            previous_version = version
            if not isinstance(value, int | float):
                continue
            x, y = xs[i], y_of(float(value))
            segment.append(f"{x:.1f},{y:.1f}")
            verdict = point.get("verdict") or "none"
            chart_points.append(
                TrendPoint(
                    run_id=point["run_id"],
                    x=round(x, 1),
                    y=round(y, 1),
                    value=f"{value:.4f}",
                    label=n <= LABEL_ALL_POINTS_UP_TO or i in labelled,
                    colour=VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["none"]),
                    title=f"run {point['run_id']} (golden {version}, verdict {verdict}): {value:.4f}",
                )
            )
        if len(segment) > 1:
            lines.append(" ".join(segment))
        ticks = [(round(y_of(v), 1), f"{v:.4f}") for v in (low, (low + high) / 2, high)]
        step = max(1, n // 8)
        x_labels = [(round(xs[i], 1), f"#{points[i]['run_id']}") for i in range(0, n, step)]
        charts.append(TrendChart(metric, LABELS.get(metric, metric), lines, chart_points, ticks, x_labels))
    return charts


@require_GET
def target_trend(request: HttpRequest, pk: int) -> HttpResponse:
    target = _get_target(request, pk)
    sets = [s for s in target.golden_sets.order_by("slug") if access.golden_set_for(request.user, s.slug)]
    slug = request.GET.get("set") or (sets[0].slug if sets else "")
    golden_set = _get_set(request, slug) if slug else None
    if golden_set is not None and golden_set not in sets:
        raise Http404("this target is not evaluated on that set")
    points = selectors.run_trend(target=target, golden_set=golden_set) if golden_set is not None else []
    metrics = selectors.TREND_METRICS
    return render(
        request,
        "evaluation/trend.html",
        {
            "target": target,
            "golden_set": golden_set,
            "sets": sets,
            "points": [
                {
                    **p,
                    "params_text": params_text(p["params"]),
                    "cells": [num(p.get(m), why="no query counted") for m in metrics],
                }
                for p in points
            ],
            "labels": [LABELS.get(m, m) for m in metrics],
            "charts": trend_charts(points, metrics),
            "chart": TREND_CHART,
        },
    )


# ------------------------------------------------------------------------------------- budgets, baselines


@require_http_methods(["GET", "POST"])
def budgets_edit(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set(request, slug)
    stored = hasattr(golden_set, "budgets")
    text = json.dumps(selectors.budgets_get(golden_set=golden_set).to_dict(), indent=2)
    problems: list[str] = []
    if request.method == "POST":
        text = request.POST.get("budgets", "")
        data: Any = None
        if request.POST.get("action") != "defaults":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                problems = [f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"]
        if not problems:
            try:
                services.budgets_set(golden_set=golden_set, data=data, by=request.user)
            except BudgetsError as exc:
                problems = exc.problems
            else:
                messages.success(
                    request, f"Budgets of {golden_set.slug} saved; runs finishing from now use them."
                )
                return redirect("evaluation:budgets", slug=golden_set.slug)
    return render(
        request,
        "evaluation/budgets.html",
        {"golden_set": golden_set, "text": text, "problems": problems, "stored": stored},
        status=422 if problems else 200,
    )


@require_GET
def baseline_list(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set(request, slug)
    return render(
        request,
        "evaluation/baselines.html",
        {"golden_set": golden_set, "baselines": list(selectors.baseline_list(golden_set=golden_set))},
    )


# ------------------------------------------------------------------------------------- API tokens


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="what it is for, e.g. CI of search-api")
    scopes = forms.MultipleChoiceField(
        choices=list(ApiToken.SCOPES.items()), widget=forms.CheckboxSelectMultiple, initial=["read"]
    )


def _tokens_page(request: HttpRequest, form: TokenForm, created: str = "", status: int = 200) -> HttpResponse:
    return render(
        request,
        "evaluation/tokens.html",
        {"form": form, "tokens": api_token_list(user=request.user), "created": created},
        status=status,
    )


@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    """Your API tokens; a new token is shown once, on the page that created it."""
    if access.blind(request.user) or not (is_reviewer(request.user) or is_admin(request.user)):
        raise Http404("nothing here")
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            _, raw = api_token_create(
                user=request.user, name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"]
            )
        except TokenError as exc:
            for problem in exc.problems:
                form.add_error(None, problem)
        else:
            return _tokens_page(request, TokenForm(), created=raw)
    return _tokens_page(request, form, status=422 if request.method == "POST" else 200)


@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    if access.blind(request.user):
        raise Http404("no such token")
    token = ApiToken.objects.filter(pk=pk, user_id=request.user.pk or 0).first()
    if token is None:
        raise Http404("no such token")
    if api_token_revoke(token=token):
        messages.success(request, f"Token {token.name} revoked.")
    return redirect("evaluation:tokens")
