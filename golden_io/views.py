"""Golden version pages: list, version page, downloads, diff, freeze, git export and its configuration.
The golden-file import's pages are `golden_io.import_views`.

Reviewers of the set and admins only (the one rule of `labeling.roles`: the reviewer role and the set's
list); anyone else (raters included) gets a 404, so the existence of a set or version is not confirmed.
Thin: check access, call one service or selector, render.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib import messages
from django.db.models import Exists, OuterRef, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.display import counted
from assay.golden.diff import diff
from assay.golden.keys import resolve_keys
from assay.secrets import ROOTS_VARIABLE, git_export_roots
from golden_io import selectors, services
from golden_io.models import GitExport, GitExportConfig, GoldenVersion
from labeling import selectors as labeling_selectors
from labeling.forms import problems_to_form, secret_choices
from labeling.lists import Filter, ListSpec, Sort, contains, list_page, ordered, where
from labeling.models import GoldenSet
from labeling.roles import is_reviewer, reviewed_sets
from labeling.views.sets import SETS_SPEC

# --- access helpers -----------------------------------------------------------------------------


def get_set(request: HttpRequest, slug: str) -> GoldenSet:
    """The set, if the user reviews it or is an admin (`labeling.roles.reviewed_sets`); a 404 for everyone
    else."""
    golden_set = reviewed_sets(request.user).select_related("rubric").filter(slug=slug).first()
    if golden_set is None:
        raise Http404("no such golden set")
    return golden_set


def _get_version(request: HttpRequest, slug: str, name: str) -> GoldenVersion:
    golden_set = get_set(request, slug)
    version = selectors.version_get(golden_set=golden_set, name=name)
    if version is None:
        raise Http404("no such version")
    return version


# --- forms --------------------------------------------------------------------------------------


class FreezeForm(forms.Form):
    name = forms.CharField(max_length=100, required=False)
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    quarantine_unresolved = forms.BooleanField(
        required=False,
        label="Move core queries with unresolved documents to shadow first",
    )

    def __init__(self, *args: Any, golden_set: GoldenSet, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The name an empty field gives today, from the same rule the freeze uses.
        upcoming = services.version_name_next(golden_set=golden_set, on=timezone.localdate())
        self.fields["name"].help_text = f"leave empty for {upcoming} (today's date, then .2, .3…)"

    PROBLEM_FIELDS = {"version name": "name", "golden set": "name"}  # "golden set X already has a version"


class ExportConfigForm(forms.ModelForm):
    # The formats by their names ("JSON", not the choices' generated "Json"), said as the export writes them.
    file_format = forms.ChoiceField(
        choices=[("json", "JSON (one file)"), ("jsonl", "JSONL (one query a line)")], initial="json"
    )

    class Meta:
        model = GitExportConfig
        fields = [
            "repository_path",
            "branch",
            "file_path",
            "file_format",
            "remote_url",
            "username_env",
            "password_env",
        ]
        # Choices of the variables granted to the set (`__init__`); the service words a refusal.
        widgets = {"username_env": forms.Select, "password_env": forms.Select}

    def __init__(self, *args: Any, secrets: Sequence[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, none in (("username_env", "none"), ("password_env", "none: no password or token")):
            widget = self.fields[name].widget
            assert isinstance(widget, forms.Select)
            widget.choices = secret_choices(secrets, self, name, none)


# --- pages --------------------------------------------------------------------------------------


@require_GET
def set_list(request: HttpRequest) -> HttpResponse:
    if not is_reviewer(request.user):
        raise Http404("no golden sets")
    sets = list_page(request, labeling_selectors.golden_set_list(user=request.user), SETS_SPEC)
    return render(request, "golden_io/set_list.html", {"sets": sets})


VERSION_PAGE = 50
# Committed and tagged in git at least once (exported, or unchanged because the tag held it already).
_EXPORTED = Q(
    Exists(
        GitExport.objects.filter(
            version_id=OuterRef("pk"), status__in=[GitExport.Status.EXPORTED, GitExport.Status.UNCHANGED]
        )
    )
)

VERSIONS_SPEC = ListSpec(
    noun="versions",
    search=contains("name", "notes", "sha256", "created_by__username"),
    search_hint="name, notes, sha256 or who",
    filters=[
        Filter(
            "exported",
            "Git export",
            [("yes", "exported"), ("no", "not exported")],
            where(lookup=lambda v: _EXPORTED if v == "yes" else ~_EXPORTED),
        )
    ],
    sorts=[
        Sort("new", "newest first", ordered("-created", "-pk")),
        Sort("old", "oldest first", ordered("created", "pk")),
        Sort("name", "name", ordered("name")),
    ],
    per_page=VERSION_PAGE,
    anchor="versions",
)


@require_GET
def version_list(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set(request, slug)
    versions = list_page(request, selectors.version_list(golden_set=golden_set), VERSIONS_SPEC)
    return render(
        request,
        "golden_io/version_list.html",
        {"golden_set": golden_set, "versions": versions, "config": _config(golden_set)},
    )


@require_GET
def version_detail(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    version = _get_version(request, slug, name)
    golden = version.golden()
    resolved = resolve_keys(golden, selectors.live_keys(version.golden_set))
    return render(
        request,
        "golden_io/version_detail.html",
        {
            "golden_set": version.golden_set,
            "version": version,
            "counts": version.counts,
            "resolved": resolved,
            "stale": selectors.stale_documents(version=version, golden=golden),
            "exports": list(selectors.export_list(version=version)),
            "config": _config(version.golden_set),
            "children": list(version.children.order_by("created", "id")),
            "downloads": selectors.VERSION_FILES,
        },
    )


@require_GET
def version_download(request: HttpRequest, slug: str, name: str, fmt: str) -> HttpResponse:
    version = _get_version(request, slug, name)
    if fmt not in selectors.VERSION_FILES:
        raise Http404("unknown format")
    body, content_type, filename, headers = selectors.version_file_get(version=version, fmt=fmt)
    disposition = {"Content-Disposition": f'attachment; filename="{filename}"'}
    return HttpResponse(body, content_type=content_type, headers={**disposition, **headers})


@require_GET
def version_diff(request: HttpRequest, slug: str) -> HttpResponse:
    """`?old=A&new=B` between two versions; `new=working` for what the next freeze would change."""
    golden_set = get_set(request, slug)
    versions = list(selectors.version_list(golden_set=golden_set))
    old_name = request.GET.get("old", "")
    new_name = request.GET.get("new", selectors.WORKING)
    context: dict[str, Any] = {
        "golden_set": golden_set,
        "versions": versions,
        "old_name": old_name,
        "new_name": new_name,
        "working": selectors.WORKING,
    }
    if new_name == selectors.WORKING:
        try:
            latest, working, change = selectors.working_diff(golden_set=golden_set)
        except selectors.WorkingGoldenInvalid as exc:
            context["problems"] = exc.problems
            return render(request, "golden_io/diff.html", context, status=422)
        context.update(change=change, working_golden=working, old_name=latest.name if latest else "")
        if old_name and old_name != context["old_name"]:
            old = _named(golden_set, old_name)
            context.update(change=diff(old.golden(), working.golden), old_name=old.name)
    else:
        if not old_name:
            new = _named(golden_set, new_name)
            old_name = new.parent.name if new.parent is not None else ""
            if not old_name:
                context["problems"] = [f"{new_name} is the first version: pick another version to compare"]
                return render(request, "golden_io/diff.html", context)
        old, new = _named(golden_set, old_name), _named(golden_set, new_name)
        context.update(change=selectors.version_diff(old=old, new=new), old_name=old.name)
    context["markdown"] = context["change"].to_markdown()
    return render(request, "golden_io/diff.html", context)


def _named(golden_set: GoldenSet, name: str) -> GoldenVersion:
    version = selectors.version_get(golden_set=golden_set, name=name)
    if version is None:
        raise Http404(f"no version {name}")
    return version


@require_http_methods(["GET", "POST"])
def freeze(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set(request, slug)
    form = FreezeForm(request.POST or None, golden_set=golden_set)
    context: dict[str, Any] = {"golden_set": golden_set, "form": form}
    if request.method == "POST" and form.is_valid():
        try:
            version = services.golden_version_freeze(
                golden_set=golden_set,
                by=request.user,  # type: ignore[arg-type]
                name=form.cleaned_data["name"].strip() or None,
                notes=form.cleaned_data["notes"],
                quarantine_unresolved=form.cleaned_data["quarantine_unresolved"],
            )
        except services.FreezeBlocked as exc:
            context.update(blocked=exc.unresolved, problems=exc.problems[:1])
        except services.FreezeError as exc:
            # A name refused goes beside the name; the rest above the form.
            problems_to_form(form, exc.problems, FreezeForm.PROBLEM_FIELDS)
        else:
            messages.success(request, f"Froze {version} ({version.counts.get('total_queries', 0)} queries).")
            if not_done := version.counts.get(selectors.NOT_DONE_COUNT):
                messages.warning(request, services.not_done_text(not_done) + " (the notes list them).")
            return redirect("golden_io:version_detail", slug=golden_set.slug, name=version.name)
    try:
        latest, working, change = selectors.working_diff(golden_set=golden_set)
        context.update(latest=latest, working=working, change=change)
    except selectors.WorkingGoldenInvalid as exc:
        context.setdefault("problems", exc.problems)
    context["pending_proposals"] = labeling_selectors.proposals_pending_count(golden_set=golden_set)
    status = 422 if request.method == "POST" else 200
    return render(request, "golden_io/freeze.html", context, status=status)


@require_POST
def export(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    version = _get_version(request, slug, name)
    row = services.golden_version_export(version=version, by=request.user)  # type: ignore[arg-type]
    level = messages.SUCCESS if row.status in ("exported", "unchanged") else messages.ERROR
    messages.add_message(request, level, f"Export {row.get_status_display()}: {row.message}")
    return redirect("golden_io:version_detail", slug=slug, name=name)


@require_POST
def requeue(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    version = _get_version(request, slug, name)
    doc_ids = request.POST.getlist("doc_id") or None
    try:
        report = services.stale_requeue(version=version, doc_ids=doc_ids)
    except services.FreezeError as exc:
        messages.error(request, str(exc))
    else:
        summary = f"Queued {counted(report.assignments, 'assignment')} for re-judging"
        messages.success(request, "; ".join([summary, *report.queued]))
        for note in report.notes:
            messages.warning(request, note)
    return redirect("golden_io:version_detail", slug=slug, name=name)


@require_http_methods(["GET", "POST"])
def export_config(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set(request, slug)
    instance = _config(golden_set)
    form = ExportConfigForm(
        request.POST or None,
        instance=instance,
        secrets=labeling_selectors.secret_grants(golden_set=golden_set),
    )
    if request.method == "POST" and form.is_valid():
        try:
            services.git_export_configure(golden_set=golden_set, **form.cleaned_data)
        except services.ExportConfigError as exc:
            for field_name, problem in exc.problems.items():
                form.add_error(field_name if field_name in form.fields else None, problem)
        else:
            messages.success(request, "Git export configuration saved.")
            return redirect("golden_io:version_list", slug=slug)
    status = 422 if request.method == "POST" else 200
    # Said before the first try, not only in a refusal: where the repository (and a local remote) may be.
    roots = [str(root) for root in git_export_roots()]
    return render(
        request,
        "golden_io/export_config.html",
        {"golden_set": golden_set, "form": form, "roots": roots, "roots_variable": ROOTS_VARIABLE},
        status=status,
    )


def _config(golden_set: GoldenSet) -> GitExportConfig | None:
    return GitExportConfig.objects.filter(golden_set=golden_set).first()
