"""Single sign-on's rules that need no Django (docs/deployment.md, "Single sign-on"): which Assay roles and
golden-set lists an identity provider's groups claim grants, and the username a first login gets.

The mapping (`ASSAY_OIDC_GROUP_MAP`) is a JSON object from a value of the groups claim to what it grants:
`"raters"`, `"reviewers"`, `"admins"` (the roles of labeling/roles.py), `"raters:<set slug>"` (the rater
role and that set's raters list) and `"reviewers:<set slug>"` (the reviewer role and that set's reviewers
list). A person's grants are the union over the values they hold; no value mapped, no grant, no login.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.inputs import http_url
from assay.jsonin import JsonInputError, json_loads
from assay.storable import text_problem
from assay.urls import split_url

# The role names, as labeling/roles.py spells them (the core imports no app: the two are held equal by
# tests/assay/test_sso.py).
ROLES = ("raters", "reviewers", "admins")
# The set lists a grant may name, and the role each implies (a list without its role opens nothing).
LISTS = ("raters", "reviewers")
SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")
# Django's username: at most 150 of letters, digits and @.+-_ (a suffix `-2`... may be added to it).
USERNAME_MAX = 150
_NOT_IN_USERNAME = re.compile(r"[^\w.@+-]")
# The ID token signatures Assay checks: the provider's keys (RSA, RSA-PSS, elliptic curves), or the client
# secret (HS256), as the client is registered at the provider.
SIGN_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "HS256")
_ENTRY_FORMS = ", ".join([*(f'"{r}"' for r in ROLES), *(f'"{name}:<set slug>"' for name in LISTS)])


class SsoRefused(Exception):
    """A sign-in Assay refuses, in words the person reads on the page (`status`: the page's HTTP status)."""

    def __init__(self, message: str, *, status: int = 403) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Grants:
    """What a person's claim values grant: role names, and the slugs of the sets whose raters and
    reviewers lists they are on."""

    roles: frozenset[str] = frozenset()
    rates: frozenset[str] = frozenset()
    reviews: frozenset[str] = frozenset()

    def __or__(self, other: Grants) -> Grants:
        return Grants(self.roles | other.roles, self.rates | other.rates, self.reviews | other.reviews)

    @property
    def empty(self) -> bool:
        return not self.roles


@dataclass(frozen=True)
class GroupMap:
    """The parsed `ASSAY_OIDC_GROUP_MAP`: per claim value its grants, and every set slug it names (the
    lists sign-in keeps in step; a set it names nowhere has its lists kept by hand)."""

    grants: Mapping[str, Grants] = field(default_factory=dict)

    @property
    def rated_slugs(self) -> frozenset[str]:
        return frozenset(slug for g in self.grants.values() for slug in g.rates)

    @property
    def reviewed_slugs(self) -> frozenset[str]:
        return frozenset(slug for g in self.grants.values() for slug in g.reviews)

    def grants_for(self, values: Iterable[str]) -> Grants:
        found = Grants()
        for value in values:
            found = found | self.grants.get(value, Grants())
        return found


@dataclass(frozen=True)
class SignIn:
    """What one sign-in read from the provider: its account (`issuer`, `subject`), its claims, the groups
    claim's values and what they grant under the mapping."""

    issuer: str
    subject: str
    claims: Mapping[str, Any]
    values: tuple[str, ...]
    grants: Grants

    @classmethod
    def read(cls, *, issuer: str, claims: Mapping[str, Any], claim: str, group_map: GroupMap) -> SignIn:
        values = claim_values(claims, claim)
        return cls(issuer, str(claims["sub"]), claims, tuple(values), group_map.grants_for(values))


def _entry(entry: object, where: str) -> Grants:
    if not isinstance(entry, str):
        raise ValueError(f"{where}: {entry!r} is not a string; each entry is one of {_ENTRY_FORMS}")
    if entry in ROLES:
        return Grants(roles=frozenset([entry]))
    name, _, slug = entry.partition(":")
    if name in LISTS and SLUG.match(slug):
        # A list implies its role (labeling/roles.py: the list alone opens nothing).
        if name == "raters":
            return Grants(roles=frozenset([name]), rates=frozenset([slug]))
        return Grants(roles=frozenset([name]), reviews=frozenset([slug]))
    raise ValueError(f"{where}: {entry!r} is not one of {_ENTRY_FORMS}")


def parse_group_map(text: str, *, name: str = "ASSAY_OIDC_GROUP_MAP") -> GroupMap:
    """Read the mapping; a ValueError names the place of each mistake (`name["team"][1]: ...`)."""
    try:
        data = json_loads(text)
    except JsonInputError as exc:
        raise ValueError(f"{name} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise ValueError(
            f"{name} must be a JSON object from a groups claim value to a list of grants, like "
            f'{{"assay-raters": ["raters"], "search-team": ["reviewers:help-center"]}}; got {text[:80]!r}'
        )
    grants: dict[str, Grants] = {}
    for value, entries in data.items():
        where = f"{name}[{value!r}]"
        if isinstance(entries, str):
            entries = [entries]
        if not isinstance(entries, list) or not entries:
            raise ValueError(f"{where}: a list of grants, each one of {_ENTRY_FORMS}")
        found = Grants()
        for i, entry in enumerate(entries):
            found = found | _entry(entry, f"{where}[{i}]")
        grants[value] = found
    return GroupMap(grants)


def claim_values(claims: Mapping[str, Any], claim: str) -> list[str]:
    """The values of the groups claim: the claim named `claim`, else the one at its dotted path
    (`realm_access.roles`); a string is one value, a list gives its strings; anything else, none."""
    value: Any = claims.get(claim)
    if value is None and "." in claim:
        value = claims
        for part in claim.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def username_base(claims: Mapping[str, Any]) -> str:
    """The username a first sign-in starts from: `preferred_username`, else the email's local part, else
    `sso-<subject>`, with what Django's usernames may not hold replaced by `-`. A name already taken gets
    a suffix (labeling.services.sso_user_sync): a provider's account never takes over a local one."""
    for candidate in (
        claims.get("preferred_username"),
        str(claims.get("email") or "").partition("@")[0],
        f"sso-{claims.get('sub', '')}",
    ):
        if isinstance(candidate, str) and candidate.strip() and text_problem(candidate) is None:
            cleaned = _NOT_IN_USERNAME.sub("-", candidate.strip())
            return cleaned[: USERNAME_MAX - 8]
    return "sso-user"


_LOOPBACK = ("localhost", "::1")


def issuer_problem(url: str) -> str | None:
    """Why `url` cannot be an issuer, or None. OpenID Connect requires https; plain http is taken on
    loopback only (a provider the tests start beside Assay)."""
    parts = http_url(url)
    if parts is None or not parts.host:
        return f"must be the provider's https URL, like https://id.example.org/realms/assay; got {url!r}"
    if parts.query or parts.fragment:
        return f"must have no query or fragment (OpenID Connect Discovery, section 2); got {url!r}"
    host = parts.host
    if parts.scheme == "http" and not (host in _LOOPBACK or host.startswith("127.")):
        return f"must use https (plain http is taken on loopback only); got {url!r}"
    return None


def discovery_url(issuer: str) -> str:
    """Where the provider's configuration is read: the issuer, without a trailing slash, then
    `/.well-known/openid-configuration` (OpenID Connect Discovery, section 4)."""
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def origin(url: str) -> str:
    """`scheme://host[:port]` of a URL (what a Content-Security-Policy source names)."""
    parts = split_url(url)
    return f"{parts.scheme}://{parts.netloc}"
