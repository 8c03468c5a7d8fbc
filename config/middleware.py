"""Request checks that hold for every page, before any view runs."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from config.refusals import API_PREFIX, body_too_large_message, refusal

# What a multipart body may hold besides its file: the form's other fields (Django bounds them by
# DATA_UPLOAD_MAX_MEMORY_SIZE) and the parts' boundaries and headers.
MULTIPART_SLACK = 64 * 1024


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class RefuseNulBytes:
    """A NUL byte in the path, a query parameter or a posted form's field is a worded 400: PostgreSQL
    cannot compare or store text with NUL in it, so a filter such as `/runs/?set=%00`, or a field a view
    reads without a form (Django's forms refuse NUL themselves), would otherwise end in a 500. An uploaded
    file's content is the import's to check (it names the line)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX):
            if "\x00" in request.path:
                return HttpResponseBadRequest("The address contains a NUL byte (%00), which no page accepts.")
            for name, values in request.GET.lists():
                if "\x00" in name or any("\x00" in value for value in values):
                    return HttpResponseBadRequest(
                        f"The query parameter {name.replace(chr(0), '%00')!r} contains a NUL byte (%00), "
                        "which no page accepts."
                    )
            if request.method == "POST" and request.content_type in FORM_TYPES:
                for name, values in request.POST.lists():
                    if "\x00" in name or any("\x00" in value for value in values):
                        shown = name.replace(chr(0), "%00")
                        message = f"The form field {shown!r} contains a NUL byte, which no page accepts."
                        return refusal(request, 400, "Bad request", f"{message} Nothing was saved.")
        return self.get_response(request)


class RefuseOversizedBodies:
    """A request whose declared body is larger than the server would read is answered 413 with the limit
    in words, before anything reads it: an upload over ASSAY_MAX_UPLOAD_MB is not streamed to a
    temporary file first, and a form or JSON body over DATA_UPLOAD_MAX_MEMORY_SIZE is not Django's
    wordless 400. A body just over the upload limit, within the slack its form's other fields may take,
    reaches the form, which names the file's size (labeling.forms.UploadForm). Behind a proxy, its own
    body limit (e.g. nginx's client_max_body_size) should sit above these (docs/deployment.md)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = body_limit(request.content_type or "")
        if limit is not None and length > limit:
            return refusal(request, 413, "Request body too large", body_too_large_message(request, length))
        return self.get_response(request)


def body_limit(content_type: str) -> int | None:
    """The most bytes a body of this type may have: a file upload's limit plus its form's fields, or
    Django's limit on every other body (None: unlimited)."""
    fields = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if content_type == "multipart/form-data":
        return settings.ASSAY_MAX_UPLOAD_BYTES + (fields or 0) + MULTIPART_SLACK
    return fields
