"""The one pagination class (NetBox's rule): an unordered queryset is refused, because its pages could
overlap or skip rows from one request to the next."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.models import QuerySet
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request


class OrderedLimitOffsetPagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500
    # Far past any list the API serves, and far from what the database's OFFSET holds (a signed 64-bit
    # integer: beyond it PostgreSQL refuses the query, a 500).
    max_offset = 10**9

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any] | None:
        if isinstance(queryset, QuerySet) and not queryset.ordered:
            raise ImproperlyConfigured(
                f"{type(view).__name__}: paginating an unordered {queryset.model.__name__} queryset "
                "would give pages that overlap or skip rows; order it (order_by) first"
            )
        return super().paginate_queryset(queryset, request, view)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        # The ranges the API holds a request to (evaluation.runs.api.views.PAGE_QUERY): outside them, a 400.
        bounds = {
            self.limit_query_param: {"minimum": 1, "maximum": self.max_limit},
            self.offset_query_param: {"minimum": 0, "maximum": self.max_offset},
        }
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters
