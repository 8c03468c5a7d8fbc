"""The golden-file import's pages (docs/labeling.md, "Imports"): the upload of labeling's import page
(`/sets/<slug>/import/`) answered with a preview of every change; the confirmation that writes it; the
set's imports, each with who, when, file, format, mode and counts; and the undo of the latest, previewed
the same way. Reviewers of the set and admins only (`golden_io.views.get_set`: a 404 for anyone else).
Thin: check access, call one service, render.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.problems import ImportReport, problems_csv
from golden_io import foreign, services
from golden_io.models import GoldenImport
from golden_io.views import get_set
from labeling.forms import GoldenUploadForm
from labeling.models import GoldenSet
from labeling.views.imports import import_page_render, import_report_render

# How many changes of each kind a preview lists (its counts give them all).
SHOWN = 200
# The options a refused upload's page keeps for the next try (the file and topics file are chosen again).
_KEPT = ("mode", "format", "scale", "map")


@require_POST
def golden_import(request: HttpRequest, slug: str) -> HttpResponse:
    """A golden file (or judgments in another format) previewed against the set: every change it would
    make, counted and listed, and the refusals it would meet; nothing is written until confirmed."""
    golden_set = get_set(request, slug)
    form = GoldenUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return import_page_render(request, golden_set, bound={"golden": form}, status=400)
    upload = form.cleaned_data["file"]
    report, changes, record = services.golden_import_preview(
        golden_set=golden_set,
        data=upload.read(),
        source=upload.name,
        by=request.user,  # type: ignore[arg-type]
        web_limits=True,
        fmt=_judgments_format(form),
        mode=form.cleaned_data["mode"],
    )
    if not report.ok and changes is None:
        return _refused(request, golden_set, report, form)
    return _preview_render(
        request,
        golden_set,
        changes or services.ImportChanges(),
        report=report,
        heading=f"Preview: {upload.name} into {golden_set.name}",
        mode=form.cleaned_data["mode"],
        confirm=record,
    )


@require_POST
def golden_import_confirm(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Write a previewed import (only if the file still makes exactly the changes shown)."""
    golden_set = get_set(request, slug)
    record = get_object_or_404(GoldenImport, pk=pk, golden_set=golden_set)
    report, _ = services.golden_import_confirm(
        record=record,
        digest=str(request.POST.get("digest", "")),
        web_limits=True,
    )
    if report.ok:
        report.notes.append(
            "Recorded: the set's imports page lists it, and a reviewer can undo it while it is the latest."
        )
    return import_report_render(
        request, golden_set, report, links={"undo": _undo_url(golden_set, record)} if report.ok else None
    )


@require_POST
def golden_import_cancel(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    golden_set = get_set(request, slug)
    record = get_object_or_404(GoldenImport, pk=pk, golden_set=golden_set)
    services.golden_import_discard(record=record)
    messages.info(request, f"Import of {record.source} cancelled: nothing was written.")
    return redirect("labeling:import", slug=slug)


@require_GET
def import_list(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's imports, newest first; the latest applied one can be undone."""
    golden_set = get_set(request, slug)
    undoable = services.import_undoable(golden_set=golden_set)
    return render(
        request,
        "golden_io/import_list.html",
        {
            "golden_set": golden_set,
            "imports": services.import_history(golden_set=golden_set),
            "undoable": undoable,
        },
    )


@require_http_methods(["GET", "POST"])
def import_undo(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """GET: what undoing the import would change; POST: undo it."""
    golden_set = get_set(request, slug)
    record = get_object_or_404(
        GoldenImport, pk=pk, golden_set=golden_set, status__in=[GoldenImport.Status.APPLIED]
    )
    if request.method == "POST":
        report, _ = services.golden_import_undo(record=record, by=request.user)  # type: ignore[arg-type]
        return import_report_render(request, golden_set, report)
    plan = services.import_undo_plan(record=record)
    latest = services.import_undoable(golden_set=golden_set)
    report = ImportReport(kind="golden import undo", source=record.source)
    if latest is None or latest.pk != record.pk:
        report.add("", "only the set's latest import can be undone: undo the later ones first", "not_latest")
    report.notes += services.undo_notes(plan)
    return _preview_render(
        request,
        golden_set,
        plan.changes,
        report=report,
        heading=f"Undo the import of {record.source}",
        mode="undo",
        undo=record if report.ok else None,
    )


@require_POST
def golden_import_problems(request: HttpRequest, slug: str) -> HttpResponse:
    """Every problem of a golden file as CSV (`assay validate --problems-csv`'s columns), for the report
    page that lists the first MAX_SHOWN: the reviewer sends the same file again and nothing is imported.
    Nothing of an upload is kept between requests for this, so there is nothing stored to expire or to
    leak to another user; access is the import's (the set's reviewers and admins, a 404 for everyone
    else)."""
    golden_set = get_set(request, slug)
    form = GoldenUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return import_page_render(request, golden_set, bound={"golden": form}, status=400)
    upload = form.cleaned_data["file"]
    report = services.golden_import_check(
        golden_set=golden_set,
        data=upload.read(),
        source=upload.name,
        web_limits=True,
        fmt=_judgments_format(form),
    )
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", PurePath(upload.name).stem)[:100] or "golden"
    return HttpResponse(
        problems_csv(report.problems),
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{stem}-problems.csv"'},
    )


def _refused(
    request: HttpRequest, golden_set: GoldenSet, report: ImportReport, form: GoldenUploadForm
) -> HttpResponse:
    """The report of a file refused on its own; the page keeps the options chosen for the next try."""
    kept = {name: str(form.data.get(name, "")) for name in _KEPT}
    topics = form.cleaned_data.get("topics")
    return import_report_render(
        request,
        golden_set,
        report,
        resend={name: kept[name] for name in ("format", "scale", "map")},
        topics=topics.name if topics is not None else None,
        retry=GoldenUploadForm(initial=kept),
    )


def _preview_render(
    request: HttpRequest,
    golden_set: GoldenSet,
    changes: services.ImportChanges,
    *,
    report: ImportReport,
    heading: str,
    mode: str,
    confirm: GoldenImport | None = None,
    undo: GoldenImport | None = None,
) -> HttpResponse:
    context: dict[str, Any] = {
        "golden_set": golden_set,
        "changes": changes,
        "counts": changes.counts(),
        "report": report,
        "heading": heading,
        "mode": mode,
        "shown": SHOWN,
        "label_sections": [
            {"kind": kind, "total": len(rows), "rows": rows[:SHOWN]}
            for kind in ("added", "changed", "removed")
            for rows in [changes.labels_of(kind)]
        ],
        "removed_total": len(changes.labels_of("removed")),
        "confirm": confirm,
        "undo": undo,
        "digest": changes.digest(),
    }
    return render(request, "golden_io/import_preview.html", context, status=200 if report.ok else 400)


def _undo_url(golden_set: GoldenSet, record: GoldenImport) -> str:
    return reverse("golden_io:import_undo", args=[golden_set.slug, record.pk])


def _judgments_format(form: GoldenUploadForm) -> foreign.JudgmentsFormat:
    data = form.cleaned_data
    topics = data.get("topics")
    return foreign.JudgmentsFormat(
        name=data["format"],
        scale=data["scale"],
        mapping=data["map"],
        topics=(topics.name, topics.read()) if topics is not None else None,
    )
