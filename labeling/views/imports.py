"""The reviewers' import page (`/sets/<slug>/import/`) and its uploads (docs/labeling.md, "Imports")."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from assay.problems import ImportReport
from labeling import services
from labeling.forms import (
    DocumentsUploadForm,
    GoldenUploadForm,
    QueryLogUploadForm,
    RunUploadForm,
    UploadForm,
)
from labeling.models import GoldenSet
from labeling.views.access import get_set_for_reviewer

# The labeling imports, by the kind in their URL. The page shows a fourth form, the golden file's, which
# posts to golden_io (`golden_io:golden_import`): golden_io owns golden-file import and, with the freeze,
# every write of the frozen labels; it renders this page again through `import_page_render`.
IMPORT_FORMS: dict[str, type[UploadForm]] = {
    "documents": DocumentsUploadForm,
    "query-log": QueryLogUploadForm,
    "run": RunUploadForm,
}
PAGE_FORMS: dict[str, type[UploadForm]] = {"golden": GoldenUploadForm, **IMPORT_FORMS}


def import_page_render(
    request: HttpRequest,
    golden_set: GoldenSet,
    *,
    bound: dict[str, UploadForm] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The import page with its four upload forms; `bound` (by kind) shows a submitted one with its errors."""
    forms = {kind.replace("-", "_"): (bound or {}).get(kind) or form() for kind, form in PAGE_FORMS.items()}
    return render(request, "labeling/import.html", {"golden_set": golden_set, "forms": forms}, status=status)


def import_report_render(
    request: HttpRequest,
    golden_set: GoldenSet,
    report: ImportReport,
    *,
    resend: dict[str, str] | None = None,
    topics: str | None = None,
    retry: UploadForm | None = None,
    links: dict[str, str] | None = None,
) -> HttpResponse:
    """What an upload did: 200 when it imported, 400 (nothing changed) with every problem listed. For a
    golden file, `resend` are the form's fields the CSV of every problem sends again with the file (its
    format, scale and map, so the file is read as it was), and `topics` the name of its topics file, which
    the reviewer chooses again too. `retry`: the golden form with the options a refused file was sent
    with, to choose the file again; `links`: where to go next by name (a written import's "undo")."""
    context = {
        "golden_set": golden_set,
        "report": report,
        "resend": resend or {},
        "topics": topics,
        "retry": retry,
        "links": links or {},
    }
    return render(request, "labeling/import_report.html", context, status=200 if report.ok else 400)


@require_GET
def import_page(request: HttpRequest, slug: str) -> HttpResponse:
    return import_page_render(request, get_set_for_reviewer(request, slug))


@require_POST
def import_upload(request: HttpRequest, slug: str, kind: str) -> HttpResponse:
    golden_set = get_set_for_reviewer(request, slug)
    if kind not in IMPORT_FORMS:
        raise Http404("no such import")
    form = IMPORT_FORMS[kind](request.POST, request.FILES)
    if not form.is_valid():
        return import_page_render(request, golden_set, bound={kind: form}, status=400)
    upload = form.cleaned_data["file"]
    data, name = upload.read(), upload.name
    report: ImportReport
    if kind == "documents":
        report = services.documents_import(golden_set=golden_set, data=data, source=name)
    elif kind == "query-log":
        options = services.SamplingOptions(
            cap=form.cleaned_data["cap"],
            reserve_share=form.cleaned_data["reserve_share"],
            zero_hit_min_share=form.cleaned_data["zero_hit_min_share"],
            seed=form.cleaned_data["seed"],
        )
        report = services.query_log_import(golden_set=golden_set, data=data, source=name, options=options)
    else:
        report = services.pool_import_run(
            golden_set=golden_set,
            data=data,
            source=name,
            system=form.cleaned_data["system"],
            depth=form.cleaned_data["depth"],
        )
    return import_report_render(request, golden_set, report)
