"""The schema class of the API (settings' DEFAULT_SCHEMA_CLASS): drf-spectacular's, with the one error
shape (`evaluation.runs.api.errors`) documented for every error status on every operation, so the schema
says what the API answers rather than only its successes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema

from evaluation.runs.api.errors import ERROR_STATUSES
from evaluation.runs.api.serializers import ProblemsSerializer


class ApiAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        for code, meaning in ERROR_STATUSES.items():
            described = responses.get(str(code), {}).get("description")
            response = self._get_response_for_code(ProblemsSerializer, str(code), direction=direction)
            response["description"] = described or meaning
            responses[str(code)] = response
        return responses
