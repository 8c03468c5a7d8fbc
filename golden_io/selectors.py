"""Reads for golden versions: lists, the live durable keys, stale documents, export status."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from golden_io.models import GitExport, GoldenVersion
from labeling.models import Document, GoldenSet
from labeling.roles import is_admin


def live_keys(golden_set: GoldenSet) -> dict[str, str]:
    """Durable key -> current doc id for every keyed document of the set (what `resolve_keys` takes)."""
    rows = Document.objects.filter(golden_set=golden_set, key__isnull=False).values_list("key", "doc_id")
    return {key: doc_id for key, doc_id in rows if key}


def golden_set_list(*, user: Any) -> QuerySet[GoldenSet]:
    """The sets whose versions the user may see: the sets they review (admins: every set)."""
    sets = GoldenSet.objects.select_related("rubric")
    if is_admin(user):
        return sets.order_by("slug")
    return sets.filter(reviewers=user.pk).order_by("slug")


def version_list(*, golden_set: GoldenSet) -> QuerySet[GoldenVersion]:
    """The set's versions, newest first, without their content (the list page does not need the bytes)."""
    return (
        GoldenVersion.objects.filter(golden_set=golden_set)
        .select_related("golden_set", "parent", "created_by")
        .defer("content", "documents")
        .order_by("-created", "-id")
    )


def version_get(*, golden_set: GoldenSet, name: str) -> GoldenVersion | None:
    return (
        GoldenVersion.objects.filter(golden_set=golden_set, name=name)
        .select_related("golden_set__rubric", "parent", "created_by")
        .first()
    )


def version_latest(*, golden_set: GoldenSet) -> GoldenVersion | None:
    """The newest version of the set (the next freeze's parent), or None before the first freeze."""
    return GoldenVersion.objects.filter(golden_set=golden_set).order_by("-created", "-id").first()


def export_list(*, version: GoldenVersion) -> QuerySet[GitExport]:
    return GitExport.objects.filter(version=version).select_related("by").order_by("-created", "-id")
