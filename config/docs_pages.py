"""The project's docs (`docs/*.md`) as pages of the app (`assay.docs` renders them), so that a page's
citation of a doc (`{% doc %}`, labeling/templatetags/docs.py) links to the section it means. Signed-in
users only, like every page but the health check."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from assay.docs import doc_names, doc_path, render_doc


@require_GET
def doc_page(request: HttpRequest, name: str) -> HttpResponse:
    path = doc_path(name)
    if path is None:
        raise Http404(f"No doc named {name!r}: the docs are the files of docs/.")
    title, html = render_doc(path, lambda other: reverse("doc_page", args=[other]))
    # Safe: markdown-it renders a doc's raw HTML as text (html=False).
    context = {"title": title, "html": mark_safe(html), "name": name, "docs": doc_names()}
    return render(request, "doc_page.html", context)
