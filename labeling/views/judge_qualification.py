"""A judge's qualification page, its actions, and several judges side by side, for the set's reviewers
only (a 404 to everyone else, `labeling.views.access`), docs/judge-qualification.md.

- The qualification page: the judge against the human consensus beside the humans against each other,
  overall, per stratum and per locale, with each scope's verdict; its qualifications and the drift
  watch's running agreement on each active one; the forms below.
- "Judge the qualification items": a job over exactly the items' pairs.
- Qualify for a scope (refused unless the figures on that scope say qualified); withdraw one.
- The compare page: the chosen judges' figures on the items every one of them graded.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from assay.labels.judge_verdicts import NOT_QUALIFIED, QUALIFIED
from labeling.forms import CompareForm, QualifyForm, WithdrawForm
from labeling.inline_forms import InlineForms, Refused
from labeling.models import GoldenSet, Judge, JudgeQualification, Query
from labeling.selectors.judge_items import judge_items_get, judges_compare_get
from labeling.services import judge_qualification as qualification_services
from labeling.views.access import back, get_judge_for_reviewer, get_set_for_reviewer


def _scope_choices(golden_set: GoldenSet, field: str) -> list[tuple[str, str]]:
    values = (
        Query.objects.filter(golden_set=golden_set, status=Query.Status.ACTIVE)
        .order_by(field)
        .values_list(field, flat=True)
        .distinct()
    )
    return [(value, value or f"(no {field})") for value in values]


def _qualify_form(golden_set: GoldenSet, data: Any = None, **kwargs: Any) -> QualifyForm:
    return QualifyForm(
        data,
        strata=_scope_choices(golden_set, "stratum"),
        locales=_scope_choices(golden_set, "locale"),
        **kwargs,
    )


def _page_url(judge: Judge) -> str:
    return reverse("labeling:judge_qualification", kwargs={"slug": judge.golden_set.slug, "pk": judge.pk})


def plain_answer(verdict: str) -> str:
    """Whether the judge agrees with the humans as well as they agree with each other, in words."""
    if verdict == QUALIFIED:
        return "Yes: the judge agrees with the human consensus as well as the humans agree with each other."
    if verdict == NOT_QUALIFIED:
        return (
            "No: the judge agrees with the human consensus less well than the humans agree with each other."
        )
    return "Not known yet: the figures cannot tell whether the judge agrees as well as the humans do."


@require_GET
def judge_qualification(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    return _qualification_page(request, get_judge_for_reviewer(request, slug, pk))


def _qualification_page(request: HttpRequest, judge: Judge, refused: Refused | None = None) -> HttpResponse:
    """The qualification page; with `refused`, the qualify or withdraw form sent back beside where it
    was (labeling/inline_forms.py)."""
    golden_set = judge.golden_set
    report = qualification_services.qualification_report(judge=judge)
    qualifications = list(JudgeQualification.objects.filter(judge=judge).select_related("by"))
    drift = [
        qualification_services.drift_reading(q)
        for q in qualifications
        if q.status == JudgeQualification.Status.ACTIVE
    ]
    forms = InlineForms(refused, qualify=partial(_qualify_form, golden_set, None), withdraw=WithdrawForm)
    return forms.render(
        request,
        "labeling/judge_qualification.html",
        {
            "golden_set": golden_set,
            "judge": judge,
            "report": report,
            "answer": plain_answer(report.verdicts.overall.verdict),
            "status": qualification_services.qualification_status(judge),
            "qualifications": qualifications,
            "drift": drift,
            "newer": Judge.objects.filter(golden_set=golden_set, previous=judge).order_by("-created"),
        },
    )


@require_POST
def judge_qualification_job(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    judge = get_judge_for_reviewer(request, slug, pk)
    items = judge_items_get(golden_set=judge.golden_set)
    job = qualification_services.qualification_job_create(
        judge=judge,
        pairs=items.pks.values(),
        by=request.user,  # type: ignore[arg-type]
    )
    if not job.total:
        messages.warning(request, "The job has no pairs: humans have labeled no item with a consensus yet.")
    kwargs = {"slug": judge.golden_set.slug, "pk": judge.pk, "job_pk": job.pk}
    return back(reverse("labeling:judge_job", kwargs=kwargs))


@require_POST
def judge_qualify(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    judge = get_judge_for_reviewer(request, slug, pk)
    form = _qualify_form(judge.golden_set, request.POST)
    if form.is_valid():
        try:
            made = qualification_services.judge_qualify(
                judge=judge,
                strata=form.cleaned_data["strata"],
                locales=form.cleaned_data["locales"],
                rationale=form.cleaned_data["rationale"],
                by=request.user,  # type: ignore[arg-type]
            )
        except qualification_services.QualificationRefused as exc:
            form.refuse([str(exc)], {"a rationale": "rationale"})
        else:
            scope = qualification_services.scope_text(made.strata, made.locales)
            messages.success(request, f"Qualified for {scope}: its labels count there from now on.")
            return back(_page_url(judge))
    return _qualification_page(request, judge, Refused(form, "Not qualified"))


@require_POST
def judge_qualification_withdraw(request: HttpRequest, slug: str, pk: int, q_pk: int) -> HttpResponse:
    judge = get_judge_for_reviewer(request, slug, pk)
    qualification = get_object_or_404(JudgeQualification, pk=q_pk, judge=judge)
    form = WithdrawForm(request.POST, key=qualification.pk)
    if not form.is_valid():
        return _qualification_page(request, judge, Refused(form, "Not withdrawn"))
    if qualification_services.judge_qualification_withdraw(
        qualification=qualification,
        by=request.user,  # type: ignore[arg-type]
        reason=form.cleaned_data["reason"],
    ):
        messages.success(request, "Withdrawn: its labels no longer count in that scope.")
    else:
        messages.info(request, "That qualification had already ended.")
    return back(_page_url(judge))


@require_GET
def judge_compare(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set_for_reviewer(request, slug)
    judges = list(Judge.objects.filter(golden_set=golden_set).select_related("golden_set"))
    form = CompareForm(
        request.GET or None, judges=[(str(j.pk), f"{j.name} #{j.pk} · {j.model}") for j in judges]
    )
    chosen = judges
    if form.is_bound and form.is_valid() and form.cleaned_data["judges"]:
        wanted = set(form.cleaned_data["judges"])
        chosen = [j for j in judges if str(j.pk) in wanted]
    comparison = None
    columns: list[dict[str, Any]] = []
    scope_rows: list[tuple[Any, list[Any]]] = []
    if chosen:
        items = judge_items_get(golden_set=golden_set)
        names = {f"{j.name} #{j.pk}": j for j in chosen}
        comparison = judges_compare_get(
            golden_set=golden_set,
            judges={
                name: qualification_services.judge_grades(judge=j, pairs=items.pks.values())
                for name, j in names.items()
            },
            items=items,
        )
        for compared in comparison.judges:
            judge = names[compared.name]
            verdicts = qualification_services.qualification_verdicts(compared.figures)
            columns.append(
                {
                    "judge": judge,
                    "compared": compared,
                    "overall": compared.figures.overall.judge,
                    "verdict": verdicts.overall,
                    "scopes": list(
                        zip(compared.figures.scopes[1:], (*verdicts.strata, *verdicts.locales), strict=True)
                    ),
                    "status": qualification_services.qualification_status(judge),
                }
            )
        if columns:
            # The common items are the same for every judge, so are the strata and locales: one row each.
            first = columns[0]["compared"].figures.scopes[1:]
            scope_rows = [
                (scope, [column["scopes"][i] for column in columns]) for i, scope in enumerate(first)
            ]
    return render(
        request,
        "labeling/judge_compare.html",
        {
            "golden_set": golden_set,
            "form": form,
            "comparison": comparison,
            "columns": columns,
            "scope_rows": scope_rows,
            "humans": comparison.judges[0].figures.overall.humans
            if comparison and comparison.judges
            else None,
        },
    )
