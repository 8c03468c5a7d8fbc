from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET


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
    return render(request, "home.html")
