"""The three roles (Django groups created by migration 0002) and who may review which golden sets.

**The one rule for reviewing** (docs/labeling.md, "Roles"): a user reviews a golden set when they are an
admin, or when they hold the reviewer role (the `reviewers` group) *and* are on the set's reviewers list
(`GoldenSet.reviewers`). Both halves are read from the database at every request (the group names are
kept on the request's user object only, which Django and the API's token authentication load afresh for
each request), so a reviewer whose group is removed loses every set at once, on the pages and through
the tokens they made while they were one; a name left on a list without the role opens nothing. Every
reviewer page, API endpoint and service of labeling, golden_io and evaluation reads it through
`reviews` (one set), `reviewed_sets` (the sets) or `reviewed_filter` (rows that belong to a set).

**The one rule for rating**: a user rates a golden set when they hold the rater role (the `raters` group)
*and* are on the set's raters list (`GoldenSet.raters`), both read from the database at every request as
above. Admins are not exempt: rating is a person's own work on the sets they were put on. Every rater
page and endpoint (grading, calibration, side-by-side studies) and every service that saves a grade or an
answer reads it through `rates` (one set), `rated_sets` (the sets) or `rated_filter` (rows that belong to
a set), so a rater taken off the list or out of the group keeps nothing open; their saved work stays.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

if TYPE_CHECKING:
    from labeling.models import GoldenSet

RATERS = "raters"
REVIEWERS = "reviewers"
ADMINS = "admins"

AnyUser = AbstractBaseUser | AnonymousUser


def group_names(user: Any) -> frozenset[str]:
    """The user's group names, fetched once per user object: per request (views and the nav both ask),
    never across requests."""
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
    """The reviewer role (admins have it too). Which sets a reviewer reviews is `reviewed_sets`."""
    return is_admin(user) or REVIEWERS in group_names(user)


def is_rater(user: Any) -> bool:
    return RATERS in group_names(user)


def roles(user: Any) -> dict[str, bool]:
    return {"rater": is_rater(user), "reviewer": is_reviewer(user), "admin": is_admin(user)}


def reviewed_sets(user: Any) -> QuerySet[GoldenSet]:
    """The golden sets `user` reviews (the module's rule): every set for an admin; for anyone else the
    sets whose reviewers list holds them, if they hold the reviewer role; none otherwise."""
    from labeling.models import GoldenSet

    sets = GoldenSet.objects.all()
    if not getattr(user, "is_authenticated", False):
        return sets.none()
    if is_admin(user):
        return sets
    # One filter() call: both conditions hold for the same list entry (that user, in that group), so the
    # role and the membership are checked in the one query, whatever the user object has cached.
    return sets.filter(reviewers=user.pk, reviewers__groups__name=REVIEWERS)


def reviewed_filter(user: Any, path: str = "golden_set") -> Q:
    """The rows whose golden set (reached by `path`, e.g. `golden_version__golden_set`) `user` reviews."""
    if is_admin(user):
        return Q()
    return Q(**{f"{path}__in": reviewed_sets(user).values("pk")})


def reviews(user: Any, golden_set: GoldenSet) -> bool:
    """Does `user` review `golden_set` (the module's rule)? Asked of the database each time."""
    if is_admin(user):
        return True
    return reviewed_sets(user).filter(pk=golden_set.pk).exists()


def rated_sets(user: Any) -> QuerySet[GoldenSet]:
    """The golden sets `user` rates (the module's rule): those whose raters list holds them, if they hold
    the rater role; none otherwise."""
    from labeling.models import GoldenSet

    sets = GoldenSet.objects.all()
    if not getattr(user, "is_authenticated", False):
        return sets.none()
    # One filter() call, as in `reviewed_sets`: the list entry and the role are of the same user.
    return sets.filter(raters=user.pk, raters__groups__name=RATERS)


def rated_filter(user: Any, path: str = "golden_set") -> Q:
    """The rows whose golden set (reached by `path`, e.g. `query__golden_set`) `user` rates."""
    return Q(**{f"{path}__in": rated_sets(user).values("pk")})


def rates(user: Any, golden_set: GoldenSet | int) -> bool:
    """Does `user` rate `golden_set` (a set or its id; the module's rule)? Asked of the database each time."""
    return rated_sets(user).filter(pk=getattr(golden_set, "pk", golden_set)).exists()


def raters_of(golden_set: GoldenSet) -> QuerySet[Any]:
    """The users who rate `golden_set` now (the module's rule, from the set's side): on its raters list
    and in the raters group. Whose saved work came from someone no longer on the set is what is not here."""
    return golden_set.raters.filter(groups__name=RATERS)


def rater_names(golden_set: GoldenSet) -> frozenset[str]:
    """The usernames of those who rate `golden_set` now (`raters_of`), fetched once per set object (per
    request, as `group_names`): a reviewer's page marks every other name whose work it lists."""
    cached: frozenset[str] | None = getattr(golden_set, "_assay_rater_names", None)
    if cached is None:
        cached = frozenset(raters_of(golden_set).values_list("username", flat=True))
        golden_set._assay_rater_names = cached  # type: ignore[attr-defined]
    return cached


def reviewer_emails(golden_set: GoldenSet) -> list[str]:
    """The addresses of those on the set's reviewers list who review it (active, holding the reviewer
    role or admin) and have one, each once: whom a set's mail reaches. A name left on the list without
    the role is told nothing, as it is shown nothing."""
    holders = golden_set.reviewers.filter(Q(is_superuser=True) | Q(groups__name__in=[REVIEWERS, ADMINS]))
    rows = holders.filter(is_active=True).exclude(email="").values_list("email", flat=True)
    return sorted(set(rows))


def without_reviewer_role(users: Iterable[Any]) -> list[str]:
    """The usernames among `users` that may not be on a set's reviewers list: they hold neither the
    reviewer role nor admin. What the admin's set page and `create_golden_set --reviewers` refuse."""
    return sorted(u.get_username() for u in users if not is_reviewer(u))


def reviewer_list_problem(users: Iterable[Any]) -> str | None:
    """The worded refusal of a reviewers list holding users without the role, or None."""
    lacking = without_reviewer_role(users)
    if not lacking:
        return None
    who = f"{lacking[0]} is" if len(lacking) == 1 else f"{', '.join(lacking)} are"
    return (
        f"{who} not in the {REVIEWERS} group: a set's reviewers must hold the reviewer role "
        f"(add them to the {REVIEWERS} group first, or leave them off the list)"
    )
