"""Worded refusals of a request that no view answers (a body too large, a form Django cannot read, no such
page, a server error): the API's error shape under /api/, the grading page's JSON for a script, a page in
the app's layout for a person."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from assay.problems import size_text

# The API answers in its own error shape (evaluation/runs/api/errors.py), also when no view ran.
API_PREFIX = "/api/"
NOTHING_IMPORTED = "Nothing was imported."


# The `error` a script reads from a refusal's JSON, by status.
ERROR_CODES = {400: "bad_request", 403: "forbidden", 404: "not_found", 413: "too_large", 500: "server_error"}


def refusal(
    request: HttpRequest, status: int, title: str, message: str, *, hint: str = "", plain: bool = False
) -> HttpResponse:
    """`hint`: what the person can do (the page's default says go back and try again). `plain`: render the
    page without the request's context (no user, no session): a server error must not depend on what may
    have failed, as Django's own 500 handler does."""
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": title.lower(), "problems": [message]}, status=status)
    if "application/json" in request.headers.get("Accept", "") or request.content_type == "application/json":
        return JsonResponse({"error": ERROR_CODES.get(status, "error"), "message": message}, status=status)
    context = {"title": title, "status": status, "message": message, "hint": hint}
    if plain:
        return HttpResponse(render_to_string("error.html", context), status=status)
    return render(request, "error.html", context, status=status)


def body_too_large_message(request: HttpRequest, length: int | None, *, fields: bool = False) -> str:
    """What a body over the server's limit is told: its size when declared, the limit and its setting.
    `fields`: an upload's form fields (not its file, which has its own limit) were over Django's."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    reads = f"the server reads at most {size_text(limit)} (DATA_UPLOAD_MAX_MEMORY_SIZE). Nothing was saved."
    if fields:
        return f"The form's fields besides its file are too large: {reads}"
    sent = f" is {size_text(length)}" if length else " is too large"
    if request.content_type == "multipart/form-data":
        upload = size_text(settings.ASSAY_MAX_UPLOAD_BYTES)
        return f"The upload{sent}: a file may be at most {upload} (ASSAY_MAX_UPLOAD_MB). {NOTHING_IMPORTED}"
    return f"The request body{sent}: {reads}"
