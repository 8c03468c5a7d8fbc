"""The one read-only admin for records, which every app's admin uses for the models only its services
write (labeling's label data, golden_io's versions and exports, evaluation's runs and baselines).

It stands here, in the lowest app, so golden_io and evaluation import it without importing labeling's
admin registrations.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


class ReadOnlyAdmin:
    """A mixin for model admins and inlines alike (put it before `admin.ModelAdmin` or
    `admin.TabularInline`): nothing added, changed or deleted by anyone; the add, change and delete URLs
    answer 403 (PermissionDenied).

    Superusers pass every `has_perm` check, so only these overrides stop them; viewing keeps Django's
    rule (view or change permission).
    """

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
