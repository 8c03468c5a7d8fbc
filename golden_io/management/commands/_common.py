"""Shared by the golden version commands: find versions and users by name, fail loudly."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import CommandError

from golden_io import selectors
from golden_io.models import GoldenVersion
from labeling.management.commands._common import golden_set_get
from labeling.models import GoldenSet


def version_get(ref: str, *, default_set: str | None = None) -> GoldenVersion:
    """`help-center@2026-08-01`, or a bare name with `--set` (or when only one golden set exists)."""
    slug, sep, name = ref.rpartition("@")
    golden_set = _set_for(slug if sep else default_set)
    version = selectors.version_get(golden_set=golden_set, name=name)
    if version is None:
        known = ", ".join(v.name for v in selectors.version_list(golden_set=golden_set)[:10]) or "none yet"
        raise CommandError(f"golden set {golden_set.slug} has no version {name!r} (latest: {known})")
    return version


def _set_for(slug: str | None) -> GoldenSet:
    if slug:
        return golden_set_get(slug)
    slugs = list(GoldenSet.objects.values_list("slug", flat=True)[:2])
    if len(slugs) != 1:
        raise CommandError("name the version as SET@VERSION (e.g. help-center@2026-08-01) or pass --set")
    return golden_set_get(slugs[0])


def user_get(username: str | None) -> User | None:
    if not username:
        return None
    user = User.objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"--by: no user {username!r}")
    return user
