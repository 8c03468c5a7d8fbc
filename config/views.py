from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import BadRequest, RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.db import connection
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

from assay.paths import BASE_DIR
from config.refusals import body_too_large_message, refusal


@login_not_required
@require_GET
def health(request: HttpRequest) -> JsonResponse:
    """Liveness and database reachability; the one page that needs no login."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means unhealthy
        return JsonResponse({"status": "error", "database": str(exc)}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """403 for a missing or bad CSRF token: JSON for the page scripts and API clients, HTML otherwise."""
    message = "CSRF check failed: reload the page and try again (your session or form is out of date)."
    if "application/json" in request.headers.get("Accept", "") or request.content_type == "application/json":
        return JsonResponse({"error": "csrf_failed", "detail": message, "reason": reason}, status=403)
    return render(request, "403_csrf.html", {"message": message, "reason": reason}, status=403)


def home(request: HttpRequest) -> HttpResponse:
    """The home page. Its side-by-side line and a reviewer's lists of what waits (docs/runs.md, "What
    waits for you") are read here, in config, which may import every app: labeling's tags (the rest of the
    page) may not read evaluation's studies, runs or experiments. A reviewer's view is a visit recorded."""
    from evaluation.home.selectors import home_waiting
    from evaluation.home.services import home_pending_settle, home_visit
    from evaluation.studies.services import rater_open_tasks
    from labeling.roles import is_reviewer

    open_sxs = rater_open_tasks(request.user).count()
    waiting = None
    if is_reviewer(request.user):
        since = home_visit(user=request.user)
        home_pending_settle(user=request.user)
        waiting = home_waiting(user=request.user, since=since)
    return render(request, "home.html", {"sxs_open": open_sxs, "waiting": waiting})


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: Django's refusals of a request it cannot read, in words (its own page says only "Bad
    Request"); a body over DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 as in config.middleware."""
    if isinstance(exception, RequestDataTooBig):
        # The middleware refused every declared body over its limit: what is left is an upload whose other
        # fields are over Django's (its file does not count there), or a body that declared no length.
        fields = request.content_type == "multipart/form-data"
        message = body_too_large_message(request, None, fields=fields)
        return refusal(request, 413, "Request body too large", message)
    if isinstance(exception, TooManyFieldsSent):
        message = (
            f"The form sent more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} fields, more than the "
            "server reads (DATA_UPLOAD_MAX_NUMBER_FIELDS). Nothing was saved."
        )
    elif isinstance(exception, TooManyFilesSent):
        message = (
            f"The form sent more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES:,} files, more than the "
            "server reads (DATA_UPLOAD_MAX_NUMBER_FILES). Nothing was saved."
        )
    elif type(exception) is BadRequest:
        # A view's own refusal of a parameter (raise BadRequest("after must be ...")), worded for people.
        message = _said(exception, UNREADABLE)
    else:
        message = UNREADABLE
    return refusal(request, 400, "Bad request", message)


UNREADABLE = "The request could not be read (a malformed address, header or body). Nothing was saved."
SERVER_ERROR = "Something went wrong on the server; it was logged for whoever runs Assay."


# --- The error pages (handler403, handler404, handler500 in config/urls.py), in the app's layout. Under
# DEBUG too: config.middleware.HideTechnicalPages sends everyone but a superuser here instead of Django's
# technical pages.


def _said(exception: Exception | None, otherwise: str) -> str:
    """The message a view raised Http404 or PermissionDenied with, as a sentence (ours are short and worded
    for people), else `otherwise`: never the URL resolver's dictionary of the patterns it tried."""
    said = exception.args[0] if exception is not None and exception.args else None
    if not isinstance(said, str) or not said.strip():
        return otherwise
    said = said.strip()
    return said[:1].upper() + said[1:] + ("" if said.endswith((".", "!", "?")) else ".")


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    message = _said(exception, f"There is no page at {request.path}.")
    hint = "Check the address, or start again from the home page."
    return refusal(request, 404, "Page not found", message, hint=hint)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    message = _said(exception, "Your account may not open this page.")
    hint = "Ask a reviewer of the golden set or an admin if you need it."
    return refusal(request, 403, "Not allowed", message, hint=hint)


def server_error(request: HttpRequest) -> HttpResponse:
    hint = "Nothing you did caused it. Go back and try again in a moment."
    return refusal(request, 500, "Server error", SERVER_ERROR, hint=hint, plain=True)


FAVICON = BASE_DIR / "static" / "favicon.ico"


@login_not_required
@require_GET
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> FileResponse:
    """/favicon.ico, for the pages that do not link the icon (the admin, Swagger UI, files opened in the
    browser): browsers ask for it at the root."""
    return FileResponse(FAVICON.open("rb"), content_type="image/vnd.microsoft.icon")
