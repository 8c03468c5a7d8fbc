"""Lookups every evaluation page shares: a run, set or target through `evaluation.runs.access` (404 to whoever
may not see it), a refusal's problems as one message, and the last answer of a polled fragment.

Part of `evaluation.runs.views` (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse

from evaluation.runs import access
from evaluation.runs.models import EvaluationRun, SearchTarget
from labeling.models import GoldenSet
from labeling.roles import is_reviewer


def get_run(request: HttpRequest, run_id: int) -> EvaluationRun:
    return access.get_run(request.user, run_id)


def get_set(request: HttpRequest, slug: str) -> GoldenSet:
    return access.get_golden_set(request.user, slug)


def get_target(request: HttpRequest, pk: int) -> SearchTarget:
    return access.get_target(request.user, pk)


def require_evaluation_user(request: HttpRequest) -> None:
    """Pages that list things: users without the reviewer role (raters included) get a 404 like
    everywhere."""
    if not is_reviewer(request.user):
        raise Http404("nothing here")


def problems_message(request: HttpRequest, what: str, problems: Iterable[str]) -> None:
    messages.error(request, f"{what}: " + "; ".join(problems))


def settled(request: HttpRequest, response: HttpResponse, final: bool) -> HttpResponse:
    """A polled fragment's answer (htmx): once what it waits for is settled, the page reloads itself
    (HX-Refresh) to show the outcome, so the polling ends where the result appears."""
    if final and request.headers.get("HX-Request"):
        response["HX-Refresh"] = "true"
    return response
