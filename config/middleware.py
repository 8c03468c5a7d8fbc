"""Request checks that hold for every page, before any view runs."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

# The API refuses these itself, in its own error shape (evaluation/api/views.py).
API_PREFIX = "/api/"


class RefuseNulBytes:
    """A NUL byte in the path or a query parameter is a worded 400: PostgreSQL cannot compare text with
    NUL in it, so a filter such as `/runs/?set=%00` would otherwise end in a 500."""

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
        return self.get_response(request)
