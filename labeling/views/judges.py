"""Machine judge pages, for the set's reviewers only (a 404 to everyone else, `labeling.views.access`):
the judges list, the form that creates a judge or its next version with the try button, a judge's page
with its jobs and labels, and a job's page with its progress (polled) and cancel (docs/judge.md)."""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.inputs import MAX_DB_INT, id_number
from assay.judge.prompt import DEFAULT_INSTRUCTIONS
from labeling.forms import JudgeForm, JudgeJobForm, problems_to_form
from labeling.inline_forms import InlineForms, Refused
from labeling.lists import ListSpec, Sort, contains, list_page, ordered
from labeling.models import FrozenLabel, GoldenSet, Judge, JudgeJob, Query
from labeling.selectors import judges as judge_selectors
from labeling.selectors.progress import poll_ms
from labeling.selectors.secrets import secret_grants
from labeling.services import judges as judge_services
from labeling.views.access import back, get_judge_for_reviewer, get_set_for_reviewer

LABELS_SPEC = ListSpec(
    noun="labels",
    sorts=[
        Sort("query", "query", ordered("query__external_id", "document__doc_id")),
        Sort("grade", "grade, highest first", ordered("-grade", "query__external_id")),
    ],
    search=contains("query__external_id", "query__text", "document__doc_id", "document__title"),
    search_hint="query or document",
    anchor="labels",
)


def _job(request: HttpRequest, slug: str, pk: int, job_pk: int) -> JudgeJob:
    judge = get_judge_for_reviewer(request, slug, pk)
    return get_object_or_404(JudgeJob.objects.select_related("judge__golden_set"), pk=job_pk, judge=judge)


def _judge_url(judge: Judge) -> str:
    return reverse("labeling:judge_detail", kwargs={"slug": judge.golden_set.slug, "pk": judge.pk})


def _job_url(job: JudgeJob) -> str:
    kwargs = {"slug": job.judge.golden_set.slug, "pk": job.judge_id, "job_pk": job.pk}
    return reverse("labeling:judge_job", kwargs=kwargs)


@require_GET
def judge_list(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set_for_reviewer(request, slug)
    return render(
        request,
        "labeling/judge_list.html",
        {"golden_set": golden_set, "judges": judge_selectors.judge_list(golden_set=golden_set)},
    )


def _settings(form: JudgeForm) -> judge_services.JudgeSettings:
    data = form.cleaned_data
    return judge_services.JudgeSettings(
        **{name: data[name] for name in judge_services.JudgeSettings.__dataclass_fields__}
    )


def _initial(previous: Judge | None) -> dict[str, object]:
    if previous is None:
        return {"instructions": DEFAULT_INSTRUCTIONS}
    return {name: getattr(previous, name) for name in judge_services.JudgeSettings.__dataclass_fields__}


def _with_labels(
    tried: list[judge_services.TriedPair],
) -> list[tuple[judge_services.TriedPair, FrozenLabel | None]]:
    """Each tried pair with the set's label of it (its frozen grade, with its source and version), or None
    when it has none yet: a reviewer reads the judge's grade beside the one it should agree with."""
    if not tried:
        return []
    labels = {
        (label.query_id, label.document_id): label
        for label in FrozenLabel.objects.filter(
            query__in={pair.query.pk for pair in tried}, document__in={pair.document.pk for pair in tried}
        )
    }
    return [(pair, labels.get((pair.query.pk, pair.document.pk))) for pair in tried]


def _try(golden_set: GoldenSet, form: JudgeForm) -> list[judge_services.TriedPair]:
    """The prompt tried on up to three pairs; what stops it goes on the form."""
    query = Query.objects.filter(golden_set=golden_set, pk=form.cleaned_data.get("try_query") or 0).first()
    if query is None:
        form.add_error("try_query", "choose a query of the set to try the prompt on")
        return []
    pairs = [(query, c.document) for c in query.candidates.select_related("document").order_by("id")[:3]]
    try:
        return judge_services.judge_try(golden_set=golden_set, settings=_settings(form), pairs=pairs)
    except judge_services.JudgeError as exc:
        problems_to_form(form, exc.problems, JudgeForm.PROBLEM_FIELDS)
        return []


@require_http_methods(["GET", "POST"])
def judge_new(request: HttpRequest, slug: str) -> HttpResponse:
    """A new judge, or (`?from=<id>`) the next version of one: a change to its model, instructions,
    temperature, text budget or structured output saves a new judge; a change to where it is served
    (base URL, key variable, concurrency) or its name edits it in place. `action=try` sends the prompt
    for up to three pairs and saves nothing."""
    golden_set = get_set_for_reviewer(request, slug)
    previous_text = request.GET.get("from") or request.POST.get("from") or ""
    previous_id = id_number(previous_text)
    if previous_text and previous_id is None:
        raise BadRequest(
            f"from must be a judge's id (a whole number from 1 to {MAX_DB_INT}), got {previous_text!r}"
        )
    previous = Judge.objects.filter(golden_set=golden_set, pk=previous_id).first() if previous_id else None
    queries = judge_selectors.judge_query_choices(golden_set=golden_set)
    bound = request.method == "POST"
    form = JudgeForm(
        request.POST if bound else None,
        initial=_initial(previous),
        queries=queries,
        secrets=secret_grants(golden_set=golden_set),
    )
    tried: list[judge_services.TriedPair] = []
    status = 200
    trying = request.POST.get("action") == "try"
    if bound:
        if not form.is_valid():
            status = 400
        elif trying:
            tried = _try(golden_set, form)
            status = 400 if form.errors else 200
        else:
            try:
                judge, created = judge_services.judge_save(
                    golden_set=golden_set,
                    settings=_settings(form),
                    by=request.user,  # type: ignore[arg-type]
                    previous=previous,
                )
            except judge_services.JudgeError as exc:
                problems_to_form(form, exc.problems, JudgeForm.PROBLEM_FIELDS)
                status = 400
            else:
                if created and previous is not None:
                    messages.success(request, f"Saved as a new judge: it must qualify again ({judge.name}).")
                else:
                    messages.success(request, f"Saved {judge.name}.")
                return back(_judge_url(judge))
    return render(
        request,
        "labeling/judge_form.html",
        {
            "golden_set": golden_set,
            "form": form,
            "previous": previous,
            "tried": _with_labels(tried),
            "refused": "Not tried" if trying else "Not saved",
        },
        status=status,
    )


@require_GET
def judge_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    return _judge_page(request, get_judge_for_reviewer(request, slug, pk))


def _judge_page(request: HttpRequest, judge: Judge, refused: Refused | None = None) -> HttpResponse:
    """A judge, its jobs and labels, and the form that starts a job; with `refused`, that form sent back
    (labeling/inline_forms.py)."""
    queries = judge_selectors.judge_query_choices(golden_set=judge.golden_set)
    forms = InlineForms(refused, job=partial(JudgeJobForm, queries=queries))
    return forms.render(
        request,
        "labeling/judge_detail.html",
        {
            "golden_set": judge.golden_set,
            "judge": judge,
            "jobs": judge_selectors.judge_jobs(judge=judge),
            "labels": list_page(request, judge_selectors.judge_labels(judge=judge), LABELS_SPEC),
        },
    )


@require_POST
def judge_job_start(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """A job over the chosen queries' candidates (`JudgeJobForm`: the offered ones chosen, or every one)."""
    judge = get_judge_for_reviewer(request, slug, pk)
    form = JudgeJobForm(
        request.POST, queries=judge_selectors.judge_query_choices(golden_set=judge.golden_set)
    )
    if not form.is_valid():
        return _judge_page(request, judge, Refused(form, "Not started"))
    queries = Query.objects.filter(pk__in=form.cleaned_data["query_ids"])
    job = judge_services.judge_job_create(judge=judge, queries=list(queries), by=request.user)  # type: ignore[arg-type]
    return back(_job_url(job))


def _job_context(job: JudgeJob) -> dict[str, object]:
    return {
        "golden_set": job.judge.golden_set,
        "judge": job.judge,
        "job": job,
        "poll_ms": poll_ms(job.created),
    }


@require_GET
def judge_job(request: HttpRequest, slug: str, pk: int, job_pk: int) -> HttpResponse:
    job = _job(request, slug, pk, job_pk)
    context = _job_context(job) | {"failures": judge_selectors.judge_job_failures(job=job)}
    return render(request, "labeling/judge_job.html", context)


@require_GET
def judge_job_progress(request: HttpRequest, slug: str, pk: int, job_pk: int) -> HttpResponse:
    """The progress block alone, for the job page's polling (htmx, while in flight: every
    `poll_ms`, often while the job is young)."""
    return render(request, "labeling/_judge_job_progress.html", _job_context(_job(request, slug, pk, job_pk)))


@require_POST
def judge_job_cancel(request: HttpRequest, slug: str, pk: int, job_pk: int) -> HttpResponse:
    job = _job(request, slug, pk, job_pk)
    if judge_services.judge_job_cancel(job=job):
        messages.success(request, "Cancelled: its chunks stop at their next check; answers so far are kept.")
    else:
        messages.info(request, "The job had already finished.")
    return back(_job_url(job))
