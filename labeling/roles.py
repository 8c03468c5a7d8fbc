"""The three roles (Django groups created by migration 0002) and who may see which golden sets."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

RATERS = "raters"
REVIEWERS = "reviewers"
ADMINS = "admins"

AnyUser = AbstractBaseUser | AnonymousUser


def group_names(user: Any) -> frozenset[str]:
    """The user's group names, fetched once per request object (views and the nav both ask)."""
    if not getattr(user, "is_authenticated", False):
        return frozenset()
    cached: frozenset[str] | None = getattr(user, "_assay_groups", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))
        user._assay_groups = cached
    return cached


def is_admin(user: Any) -> bool:
    return bool(getattr(user, "is_superuser", False)) or ADMINS in group_names(user)


def is_reviewer(user: Any) -> bool:
    """Reviewers, and admins who see every golden set."""
    return is_admin(user) or REVIEWERS in group_names(user)


def is_rater(user: Any) -> bool:
    return RATERS in group_names(user)


def roles(user: Any) -> dict[str, bool]:
    return {"rater": is_rater(user), "reviewer": is_reviewer(user), "admin": is_admin(user)}
