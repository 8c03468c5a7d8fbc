"""One error shape for every API answer that is not a success: `{"detail": str, "problems": [str]}`.

`detail` says what went wrong in a few words; `problems` lists each thing to fix, one sentence each
(a field's validation message as `field: message`), and is empty when there is nothing more to say. The
schema documents this shape for 400, 401, 403, 404, 409, 413 and 503 on every operation
(`evaluation.runs.api.schema`); `assay remote` prints both parts.
"""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler

# The status codes every operation may answer with this shape, and what each means.
ERROR_STATUSES = {
    400: "invalid request: unknown query parameter, bad filter value or bad body",
    401: "not authenticated: no, an invalid, a revoked or an expired token",
    403: "not allowed: the token lacks the scope, or the user the role",
    404: "not found, or not visible to the token's user",
    409: "the object is not in a state that has the answer (e.g. a run without a report yet)",
    413: "the request body is larger than the server reads (DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB by default)",
    503: "the service cannot answer now (the database or the task queue is unavailable); try again",
}


def problems_of(data: Any, where: str = "") -> list[str]:
    """DRF's nested validation errors as sentences: `params.boost: A valid number is required.`"""
    if isinstance(data, dict):
        return [p for key, value in data.items() for p in problems_of(value, _join(where, str(key)))]
    if isinstance(data, list):
        return [p for i, value in enumerate(data) for p in problems_of(value, _item(where, i, value))]
    return [f"{where}: {data}" if where and where != api_settings.NON_FIELD_ERRORS_KEY else str(data)]


def _join(where: str, key: str) -> str:
    if key == api_settings.NON_FIELD_ERRORS_KEY:
        return where
    return f"{where}.{key}" if where else key


def _item(where: str, index: int, value: Any) -> str:
    # A list of messages belongs to its field; a list of objects is indexed (`params[2].x`).
    return f"{where}[{index}]" if isinstance(value, dict | list) else where


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = exception_handler(exc, context)
    if response is None:
        return None  # not an API error: Django's 500 handling (logged), never a traceback to the client
    data = response.data
    if isinstance(data, dict) and "detail" in data:  # DRF's own errors, and ours raised with problems
        detail, problems = str(data["detail"]), [str(p) for p in data.get("problems", [])]
    else:  # a serializer's field errors
        detail, problems = "invalid request", problems_of(data)
    response.data = {"detail": detail, "problems": problems}
    return response
