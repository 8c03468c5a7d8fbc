"""Single sign-on against a real OpenID provider: npm's `oidc-provider`
(tests/node/oidc-provider/provider.mjs, installed by `make node-tools`) and an Assay web server whose
settings, read from the environment as a deployment's are, turn single sign-on on against it. A person is
a `Browser` (a requests session keeping both sites' cookies) that signs in through the provider's own
interaction pages.

The provider's accounts and the mapping give each a different place in Assay (docs/deployment.md, "Single
sign-on"): rhea rates the set help-center, reva reviews it, ada is an admin, nell is in no mapped group, and
the tamper-* accounts get an ID token that is wrong in one way (provider.mjs says how).
"""

from __future__ import annotations

import json
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin

import pytest
import requests
from django.conf import settings

from tests.support.processes import REPO, free_port, serving
from tests.support.workers import database_url

PROVIDER_DIR = REPO / "tests" / "node" / "oidc-provider"
CLIENT_ID = "assay"
PROVIDER_NAME = "Test ID"
SET = "help-center"
GROUP_MAP = {
    "assay-raters": ["raters:help-center"],
    "search-team": ["reviewers:help-center"],
    "assay-admins": ["admins"],
}
TAMPER_MODES = ("signature", "expired", "nonce", "audience", "issuer")


def account(login: str, *groups: str, **claims: Any) -> dict[str, Any]:
    """An account's claims at the provider (what provider.mjs's PUT /__test/accounts/<login> takes)."""
    return {"email": f"{login}@example.org", "given_name": login.title(), "groups": list(groups), **claims}


ACCOUNTS = {
    "rhea": account("rhea", "assay-raters", "everyone", family_name="Rater"),
    "reva": account("reva", "search-team", "everyone"),
    "ada": account("ada", "assay-admins"),
    "nell": account("nell", "marketing", "everyone"),
    **{f"tamper-{mode}": account(f"tamper-{mode}", "assay-raters", tamper=mode) for mode in TAMPER_MODES},
}
WAIT_S = 30.0


class _Forms(HTMLParser):
    """Every form of a page: its action, method and the fields it would send as they stand."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append({"action": found.get("action", ""), "id": found.get("id", ""), "fields": {}})
        elif tag == "input" and self.forms and found.get("name"):
            self.forms[-1]["fields"][found["name"]] = found.get("value", "")


def forms(html: str) -> list[dict[str, Any]]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


@dataclass
class Visit:
    """Where a walk through redirects ended, and every address it passed."""

    response: requests.Response
    urls: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.response.text


@dataclass
class Browser:
    """A person's browser: one cookie jar for Assay and the provider, redirects followed one by one."""

    assay: str
    issuer: str
    http: requests.Session = field(default_factory=requests.Session)

    def walk(self, url: str, data: dict[str, str] | None = None) -> Visit:
        """GET `url` (POST `data` to it when given) and follow every redirect, as a browser does."""
        urls = [url]
        response = self.http.request(
            "POST" if data is not None else "GET", url, data=data, allow_redirects=False
        )
        while response.is_redirect:
            url = urljoin(url, response.headers["Location"])
            urls.append(url)
            response = self.http.get(url, allow_redirects=False)
        return Visit(response, urls)

    def provider_form(self, visit: Visit, prompt: str) -> dict[str, Any] | None:
        if not visit.response.url.startswith(self.issuer):
            return None
        return next((f for f in forms(visit.text) if f["fields"].get("prompt") == prompt), None)

    def sign_in(self, login: str, *, next_page: str = "/") -> Visit:
        """Start at Assay's single sign-on, sign in at the provider as `login` (its login form, then its
        consent form, each only when the provider shows it) and follow the way back to Assay."""
        visit = self.walk(f"{self.assay}/oidc/authenticate/?next={next_page}")
        passed = list(visit.urls)
        for prompt, fields in (("login", {"login": login, "password": "any"}), ("consent", {})):
            form = self.provider_form(visit, prompt)
            if form is not None:
                visit = self.walk(urljoin(visit.response.url, form["action"]), {**form["fields"], **fields})
                passed += visit.urls
        return Visit(visit.response, passed)

    def assay_page(self, path: str) -> requests.Response:
        return self.http.get(f"{self.assay}{path}", allow_redirects=False)

    def log_out(self) -> requests.Response:
        """Press "Log out" (a POST with the page's CSRF token); the response is not followed."""
        token = self.http.cookies.get("csrftoken") or self._csrf_from_login_page()
        return self.http.post(
            f"{self.assay}/accounts/logout/",
            data={"csrfmiddlewaretoken": token},
            headers={"Referer": f"{self.assay}/"},
            allow_redirects=False,
        )

    def _csrf_from_login_page(self) -> str:
        self.http.get(f"{self.assay}/accounts/login/")
        return str(self.http.cookies.get("csrftoken"))


@dataclass
class SsoStack:
    """The provider and the Assay server that trusts it."""

    issuer: str
    assay: str

    def browser(self) -> Browser:
        return Browser(self.assay, self.issuer)

    def set_account(self, login: str, claims: dict[str, Any]) -> None:
        """Change an account's claims at the provider (as its administrator would, between two sign-ins)."""
        reply = requests.put(f"{self.issuer}/__test/accounts/{login}", json=claims, timeout=WAIT_S)
        assert reply.status_code == 204, reply.text


def provider_args(port: int, assay: str, client_secret: str) -> list[str]:
    client = {
        "client_id": CLIENT_ID,
        "client_secret": client_secret,
        "redirect_uris": [f"{assay}/oidc/callback/"],
        "post_logout_redirect_uris": [f"{assay}/accounts/login/"],
    }
    config = {"port": port, "client": client, "accounts": ACCOUNTS}
    return [str(PROVIDER_DIR / "provider.mjs"), json.dumps(config)]


def assay_env(issuer: str, client_secret: str) -> dict[str, str]:
    """The settings docs/deployment.md lists for single sign-on, pointed at the test provider."""
    return {
        "DATABASE_URL": database_url(),
        "DJANGO_DEBUG": "false",
        # The tests' own key: they read the server's sessions.
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "ASSAY_OIDC_ISSUER": issuer,
        "ASSAY_OIDC_CLIENT_ID": CLIENT_ID,
        "ASSAY_OIDC_CLIENT_SECRET": client_secret,
        "ASSAY_OIDC_SCOPES": "openid email profile groups",
        "ASSAY_OIDC_GROUPS_CLAIM": "groups",
        "ASSAY_OIDC_GROUP_MAP": json.dumps(GROUP_MAP),
        "ASSAY_OIDC_NAME": PROVIDER_NAME,
        "ASSAY_OIDC_SESSION_HOURS": "2",
    }


@pytest.fixture(scope="module")
def sso_stack(django_db_setup: Any) -> Iterator[SsoStack]:
    """The provider and an Assay server on the test database (tests use `transactional_db`, so each
    sees what the other committed), for a module's tests."""
    node = shutil.which("node")
    if node is None or not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        pytest.fail(
            f"node and {PROVIDER_DIR}/node_modules are needed: run `make node-tools` (make test does)"
        )
    client_secret = secrets.token_urlsafe(32)
    assay_port, provider_port = free_port(), free_port()
    assay = f"http://127.0.0.1:{assay_port}"
    with serving(provider_args(provider_port, assay, client_secret), program=node, timeout=WAIT_S) as issuer:
        env = assay_env(issuer, client_secret)
        with serving(["-m", "tests.support.web_server", str(assay_port)], env=env, timeout=WAIT_S) as url:
            assert url == assay
            yield SsoStack(issuer=issuer, assay=assay)
