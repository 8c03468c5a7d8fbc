"""Accounts made and kept in step by single sign-on (docs/deployment.md, "Single sign-on").

Each sign-in hands `sso_user_sync` what the identity provider says now, and the user's roles and set
lists become what that grants: the one rule of labeling/roles.py keeps reading the groups and lists at
every request, so a person removed from a group at the provider loses what it gave at their next sign-in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import IntegrityError, transaction

from assay.sso import ROLES, GroupMap, SignIn, username_base
from assay.storable import json_problem, text_problem
from labeling.models import GoldenSet, SsoIdentity
from labeling.roles import ADMINS

# The profile fields a sign-in copies from the standard claims, with their column's length.
PROFILE_CLAIMS = (
    ("email", "email", 254),
    ("first_name", "given_name", 150),
    ("last_name", "family_name", 150),
)


def _profile(claims: Mapping[str, Any]) -> dict[str, str]:
    """The user's fields from the claims: a value that is not storable text is left empty, and an email
    the provider says it has not verified is not taken (mail to it would reach whoever typed it)."""
    found = {}
    for field, claim, length in PROFILE_CLAIMS:
        value = claims.get(claim)
        unverified = field == "email" and claims.get("email_verified") is False
        ok = isinstance(value, str) and text_problem(value, length) is None and not unverified
        found[field] = value if ok and isinstance(value, str) else ""
    return found


def _free_username(base: str) -> str:
    """`base`, or `base-2`, `base-3`... the first no user holds (local accounts included)."""
    name, n = base, 1
    while User.objects.filter(username=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


@transaction.atomic
def _sync(sign_in: SignIn, mapped: GroupMap) -> User | None:
    grants = sign_in.grants
    identity = SsoIdentity.objects.select_for_update().select_related("user")
    found = identity.filter(issuer=sign_in.issuer, subject=sign_in.subject).first()
    if found is None and grants.empty:
        return None  # no account is made for someone Assay refuses
    if found is None:
        user = User(username=_free_username(username_base(sign_in.claims)))
        user.set_unusable_password()  # signs in at the provider only
        user.save()
        found = SsoIdentity.objects.create(user=user, issuer=sign_in.issuer, subject=sign_in.subject)
    user = found.user
    for field, value in _profile(sign_in.claims).items():
        setattr(user, field, value)
    user.is_staff = ADMINS in grants.roles  # the Django admin is an admin's (docs/labeling.md, "Roles")
    user.save()
    user.groups.remove(*Group.objects.filter(name__in=ROLES).exclude(name__in=grants.roles))
    # Made when missing (migration 0002 makes them; an admin may have deleted one since).
    user.groups.add(*[Group.objects.get_or_create(name=name)[0] for name in sorted(grants.roles)])
    for golden_set in GoldenSet.objects.filter(slug__in=mapped.rated_slugs):
        (golden_set.raters.add if golden_set.slug in grants.rates else golden_set.raters.remove)(user)
    for golden_set in GoldenSet.objects.filter(slug__in=mapped.reviewed_slugs):
        (golden_set.reviewers.add if golden_set.slug in grants.reviews else golden_set.reviewers.remove)(user)
    values = list(sign_in.values)
    found.groups = [] if json_problem(values, "groups") else values
    found.save(update_fields=["groups"])
    return user


def sso_user_sync(*, sign_in: SignIn, mapped: GroupMap) -> User | None:
    """The user behind the provider's account (`sign_in.issuer`, `sign_in.subject`), made at its first
    sign-in, with its profile (email, names) from the claims and exactly the roles the sign-in grants; on
    every set `mapped` names it is on the raters and reviewers lists the grants name and off the others (a
    set the mapping never names keeps its lists as an admin left them). The groups claim's values are kept
    for the admin.

    None when the account has no user yet and the sign-in grants no role: no user is made for a person
    Assay refuses. An existing user is brought in step even then (every role and mapped list taken away),
    so the caller refuses the sign-in after the change is saved."""
    try:
        return _sync(sign_in, mapped)
    except IntegrityError:
        # Two first sign-ins of one account at once (two tabs): the other made the user; bring it in step.
        return _sync(sign_in, mapped)
