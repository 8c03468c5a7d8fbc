"""Request checks that hold for every page, before any view runs."""

from __future__ import annotations

import logging
from collections.abc import Callable

from csp.constants import HEADER as CSP_HEADER
from csp.utils import build_policy
from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe
from django.views.debug import ExceptionReporter

from config import views
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


class HideTechnicalPages:
    """Under DEBUG (`make run`), Django answers a 404 and an uncaught exception with its technical pages:
    every URL pattern of the project, the view that raised, the settings, a traceback. Those are for whoever
    develops Assay, so only a superuser gets them; everyone else (a rater above all, who must not learn the
    reviewers' addresses) gets the app's own 404 and 500 pages (config/views.py), the same as with DEBUG
    off, and the exception still goes to the log with its traceback. A 403 needs nothing here: Django
    answers it with handler403 under DEBUG too.

    A middleware rather than DEBUG off under `make run` because DEBUG is what `make run` wants elsewhere
    (mail printed, not sent; runserver serving static files). Django gives no hook into its technical 404,
    so this middleware catches what it would answer: an Http404 a view raised (process_exception), and an
    address no URL pattern matches (a 404 whose request never resolved, seen on the way out). It sits
    outside CommonMiddleware, so an address that only lacks its slash is still redirected, and inside the
    CSP middleware, so its pages carry the policy."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 404 and request.resolver_match is None and _technical(request):
            response = _ours(views.page_not_found(request))
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, PermissionDenied) or not _technical(request):
            return None  # handler403 answers under DEBUG too
        if isinstance(exception, Http404):
            return _ours(views.page_not_found(request, exception))
        if isinstance(exception, SuspiciousOperation | BadRequest):
            # Logged as Django logs them (django.security.* for a suspicious one), answered as handler400.
            name = f"django.security.{type(exception).__name__}"
            bad = isinstance(exception, SuspiciousOperation)
            logging.getLogger(name if bad else "django.request").error(str(exception), exc_info=exception)
            response = views.bad_request(request, exception)
        else:
            logger.error("Internal Server Error: %s", request.path, exc_info=exception)
            response = views.server_error(request)
        return _ours(response, logged=True)


logger = logging.getLogger("django.request")


def _ours(response: HttpResponse, *, logged: bool = False) -> HttpResponse:
    """One of the app's error pages in place of a technical one. It carries the Content-Security-Policy
    itself: under DEBUG django-csp leaves every 404 and 500 without one (for Django's technical pages,
    which style inline). `logged`: the error is in the log already (a 500's traceback), Django must not log
    the page again; a 404 is logged once as Django logs any, from the response."""
    response[CSP_HEADER] = build_policy()
    if logged:
        response._has_been_logged = True  # type: ignore[attr-defined]  # Django's own flag
    return response


class HiddenExceptionReporter(ExceptionReporter):
    """DEFAULT_EXCEPTION_REPORTER: the backstop for an error no view raised (a middleware's, say a request
    with a Host header not in ALLOWED_HOSTS), which HideTechnicalPages never sees as an exception. Under
    DEBUG Django renders those with this reporter: everyone but a superuser gets the app's 400 or 500 page
    in its place. The error itself is logged by Django as ever, traceback and all."""

    def _page(self) -> tuple[str, int, str] | None:
        if self.request is None or not _technical(self.request):
            return None
        if self.exc_type is not None and issubclass(self.exc_type, SuspiciousOperation | BadRequest):
            return "Bad request", 400, views.UNREADABLE
        return "Server error", 500, views.SERVER_ERROR

    def get_traceback_html(self) -> SafeString:
        page = self._page()
        if page is None:
            return super().get_traceback_html()
        title, status, message = page
        context = {"title": title, "status": status, "message": message}
        return mark_safe(render_to_string("error.html", context))

    def get_traceback_text(self) -> SafeString:
        page = self._page()
        if page is None:
            return super().get_traceback_text()
        return SafeString(f"{page[0]} ({page[1]}): {page[2]}")


def _technical(request: HttpRequest) -> bool:
    """Whether Django would show this request its technical error pages, and must not: DEBUG is on and the
    user is not a superuser."""
    user = getattr(request, "user", None)
    return settings.DEBUG and not (user is not None and user.is_superuser)
