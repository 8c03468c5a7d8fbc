"""Admin: golden versions and their exports are read-only here (versions are cut by the freeze only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from golden_io import models
from labeling.admin_records import ReadOnlyAdmin


@admin.register(models.GoldenVersion)
class GoldenVersionAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("__str__", "golden_set", "name", "parent", "sha256", "created_by", "created")
    list_filter = ("golden_set",)
    search_fields = ("name", "sha256")
    # The raw bytes are not shown (a BinaryField renders as a memoryview): the size and hash identify them.
    fields = (
        "golden_set",
        "name",
        "sha256",
        "content_size",
        "parent",
        "rubric_name",
        "rubric_version",
        "k",
        "relevant_min_grade",
        "scale_min",
        "scale_max",
        "counts",
        "notes",
        "created_by",
        "created",
    )
    readonly_fields = fields

    @admin.display(description="content size (bytes)")
    def content_size(self, obj: models.GoldenVersion) -> int:
        return len(obj.content_bytes)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        # The bulk "delete selected" action would reach QuerySet.delete(); do not even offer it.
        return {}


@admin.register(models.GitExport)
class GitExportAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("version", "status", "tag", "commit", "pushed", "by", "created")
    list_filter = ("status", "pushed")


@admin.register(models.GitExportConfig)
class GitExportConfigAdmin(admin.ModelAdmin):
    list_display = ("golden_set", "repository_path", "branch", "file_path", "remote_url")
