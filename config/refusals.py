"""Worded refusals of a request that no view answers (a body too large, a form Django cannot read): the
API's error shape under /api/, the grading page's JSON for a script, a page for a person."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from assay.problems import size_text

# The API answers in its own error shape (evaluation/api/errors.py), also when no view ran.
API_PREFIX = "/api/"
NOTHING_IMPORTED = "Nothing was imported."


def refusal(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": title.lower(), "problems": [message]}, status=status)
    if "application/json" in request.headers.get("Accept", "") or request.content_type == "application/json":
        code = "too_large" if status == 413 else "bad_request"
        return JsonResponse({"error": code, "message": message}, status=status)
    context = {"title": title, "status": status, "message": message}
    return render(request, "refused.html", context, status=status)


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
