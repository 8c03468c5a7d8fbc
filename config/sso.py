"""Single sign-on with OpenID Connect (docs/deployment.md, "Single sign-on"), by mozilla-django-oidc.

The library does the protocol (the authorization code flow with state, nonce and PKCE; the code exchange;
the provider's keys); this module gives it what Assay adds:

- the provider's endpoints from its discovery document (`discovery`), read when a sign-in needs them and
  kept for an hour, never while a page or a local login is served;
- an ID token checked in full (`SsoBackend.verify_token`): signature, issuer, audience, expiry and nonce,
  each refusal in words;
- the user found by the provider's account (issuer and subject), made at the first sign-in that grants a
  role and brought in step with the groups claim at every one (`labeling.services.sso_user_sync`);
- every refusal a page that says what happened (`config.sso_views`), never a 500.

Off unless `ASSAY_OIDC_ISSUER` is set (config/settings.py adds the backend then); the views answer 404
while it is off.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from assay.sso import SignIn, SsoRefused, discovery_url
from labeling import services

logger = logging.getLogger(__name__)

# How long a discovery document is kept in each process: a provider moving its endpoints is rare, and
# reading it at every sign-in would double the calls a sign-in makes.
DISCOVERY_SECONDS = 3600
# The clock difference allowed between Assay and the provider when checking an ID token's times.
LEEWAY_SECONDS = 60
# The endpoints a sign-in cannot do without (the userinfo and end-session endpoints are optional).
REQUIRED_ENDPOINTS = ("authorization_endpoint", "token_endpoint", "jwks_uri")

_discovered: dict[str, tuple[float, dict[str, Any]]] = {}


def enabled() -> bool:
    return bool(settings.ASSAY_OIDC_ISSUER)


def provider_name() -> str:
    return str(settings.ASSAY_OIDC_NAME)


def unreachable(what: str, error: object) -> SsoRefused:
    """The refusal of a sign-in the provider did not answer as it should (a 502: not the person's fault)."""
    return SsoRefused(
        f"{provider_name()} did not answer as expected ({what}: {str(error)[:300]}). Try again in a few "
        "minutes; if it persists, tell whoever runs Assay (a local account still signs in).",
        status=502,
    )


def discovery() -> dict[str, Any]:
    """The provider's discovery document, fetched once an hour per process; SsoRefused (502) when it
    cannot be read or does not describe the configured issuer."""
    issuer = settings.ASSAY_OIDC_ISSUER
    kept = _discovered.get(issuer)
    if kept is not None and time.monotonic() - kept[0] < DISCOVERY_SECONDS:
        return kept[1]
    url = discovery_url(issuer)
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise unreachable(f"reading {url}", exc) from exc
    if not isinstance(document, dict) or document.get("issuer") != issuer:
        found = document.get("issuer") if isinstance(document, dict) else None
        raise unreachable(
            f"reading {url}", f"it names the issuer {found!r}, not ASSAY_OIDC_ISSUER {issuer!r}"
        )
    missing = [name for name in REQUIRED_ENDPOINTS if not isinstance(document.get(name), str)]
    if missing:
        raise unreachable(f"reading {url}", f"it gives no {', '.join(missing)}")
    _discovered[issuer] = (time.monotonic(), document)
    return document


class SsoBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend with the provider's endpoints from discovery, the ID token checked in
    full, and the user found by (issuer, subject) and kept in step with the groups claim.

    Django makes a backend for every `authenticate()` and for every request of a user it signed in, so
    `__init__` reads nothing from the network; `authenticate` acts only on the callback's call (the one
    passing a nonce), never on a password login."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.UserModel = get_user_model()

    def authenticate(self, request: Any, **kwargs: Any) -> Any:
        if request is None or not enabled() or "nonce" not in kwargs:
            return None
        endpoints = discovery()
        self.OIDC_OP_TOKEN_ENDPOINT = endpoints["token_endpoint"]
        self.OIDC_OP_USER_ENDPOINT = endpoints.get("userinfo_endpoint")
        self.OIDC_OP_JWKS_ENDPOINT = endpoints["jwks_uri"]
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        try:
            return super().authenticate(request, **kwargs)
        except requests.HTTPError as exc:
            raise unreachable("the code exchange", _reply_text(exc.response) or exc) from exc
        except (requests.RequestException, ValueError) as exc:
            raise unreachable("the code exchange", exc) from exc

    def get_user(self, user_id: Any) -> Any:
        # Django's rule for the user of each request (the library's own skips it): a user an admin
        # deactivated is signed out at their next request, as with a password login.
        return ModelBackend.get_user(self, user_id)

    def verify_token(self, token: Any, **kwargs: Any) -> dict[str, Any]:
        """The ID token's claims once its signature, issuer, audience, times and (for the callback's
        token) nonce hold; SsoRefused naming the first that does not."""
        algorithm = self.OIDC_RP_SIGN_ALGO
        if not isinstance(token, str) or not token:
            raise SsoRefused(
                f"{provider_name()} sent no ID token. Nothing was changed; sign in again.", status=400
            )
        try:
            key = (
                self.OIDC_RP_CLIENT_SECRET
                if algorithm.startswith("HS")
                else self.retrieve_matching_jwk(token)
            )
            claims = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.ASSAY_OIDC_ISSUER,
                leeway=LEEWAY_SECONDS,
                options={"require": ["iss", "sub", "aud", "exp", "iat"]},
            )
        except jwt.ExpiredSignatureError:
            raise _bad_token("it has expired") from None
        except jwt.InvalidAudienceError:
            raise _bad_token(f"it was issued to another client, not {self.OIDC_RP_CLIENT_ID!r}") from None
        except jwt.InvalidIssuerError:
            raise _bad_token(f"another issuer signed it, not {settings.ASSAY_OIDC_ISSUER!r}") from None
        except jwt.InvalidAlgorithmError:
            raise _bad_token(f"it is not signed with {algorithm} (ASSAY_OIDC_SIGN_ALGO)") from None
        except (jwt.InvalidTokenError, SuspiciousOperation):
            raise _bad_token("its signature does not match the provider's keys") from None
        except requests.RequestException as exc:
            raise unreachable("reading its keys", exc) from exc
        if "nonce" in kwargs and claims.get("nonce") != kwargs["nonce"]:
            raise _bad_token("its nonce is not the one this sign-in sent (a token of another sign-in)")
        return claims

    def get_userinfo(self, access_token: Any, id_token: Any, payload: dict[str, Any]) -> dict[str, Any]:
        """The userinfo endpoint's claims over the ID token's (a provider puts the groups claim in either);
        a userinfo answer about another subject is refused."""
        if not self.OIDC_OP_USER_ENDPOINT:
            return payload
        found = super().get_userinfo(access_token, id_token, payload)
        if not isinstance(found, dict) or found.get("sub") != payload["sub"]:
            raise _bad_token("the userinfo endpoint answered about another account")
        return {**payload, **found}

    def get_or_create_user(self, access_token: Any, id_token: Any, payload: dict[str, Any]) -> Any:
        group_map = settings.ASSAY_OIDC_GROUP_MAP
        sign_in = SignIn.read(
            issuer=settings.ASSAY_OIDC_ISSUER,
            claims=self.get_userinfo(access_token, id_token, payload),
            claim=settings.ASSAY_OIDC_GROUPS_CLAIM,
            group_map=group_map,
        )
        user = services.sso_user_sync(sign_in=sign_in, mapped=group_map)
        if user is None or sign_in.grants.empty:
            raise _no_role(sign_in)
        if not user.is_active:
            name = user.get_username()
            raise SsoRefused(
                f"Your Assay account {name} is deactivated: ask an Assay admin to reactivate it."
            )
        return user


def _reply_text(response: Any) -> str:
    """A provider's error reply in one line: its OAuth `error` and `error_description`, else its status."""
    if response is None:
        return ""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("error"):
        return f"HTTP {response.status_code}: {body['error']} {body.get('error_description', '')}".strip()
    return f"HTTP {response.status_code}"


def _bad_token(why: str) -> SsoRefused:
    return SsoRefused(
        f"The ID token {provider_name()} sent was refused: {why}. Nothing was changed and you are not "
        "signed in; sign in again from the login page.",
        status=400,
    )


def _no_role(sign_in: SignIn) -> SsoRefused:
    claims = sign_in.claims
    who = claims.get("preferred_username") or claims.get("email") or sign_in.subject
    held = ", ".join(sorted(sign_in.values)[:10]) if sign_in.values else "none"
    claim = settings.ASSAY_OIDC_GROUPS_CLAIM
    return SsoRefused(
        f"You signed in at {provider_name()} as {who}, but none of your groups there gives you a role in "
        f"Assay (your {claim} claim: {held}). Ask whoever runs Assay to add you to one of the groups it maps "
        "to raters, reviewers or admins; you are not signed in to Assay."
    )
