"""Every outbound URL is read one way (assay.urls): a malformed one is refused in words that never quote
it, credentials in it are named, and an error text leaves no URL behind."""

from __future__ import annotations

import ast
from pathlib import Path

import aiohttp
import pytest

from assay.secrets import credential_name
from assay.transport import describe_transport_error
from assay.urls import UrlError, split_url, url_credential_problems, url_free
from tests.support.processes import REPO

MARK = "s3cr3tMARK"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        (f"http://[::1/{MARK}", "the IPv6 address in brackets is malformed"),
        (f"http://[zz::1]/{MARK}", "what is in brackets is not an IPv6 address"),
        (f"http://{MARK}]/x", "the IPv6 address in brackets is malformed"),
        (f"http://{MARK}.example:65536/x", "the port must be a number from 1 to 65535"),
        (f"http://{MARK}.example:80:80/x", "the port must be a number from 1 to 65535"),
        (f"http://{MARK}.example:0/x", "the port must be a number from 1 to 65535"),
        (f"http://{MARK}.example:-1/x", "the port must be a number from 1 to 65535"),
        (f"http://{MARK}\uff03.example/x", "Unicode normalisation turns into '/', '?', '#', '@' or ':'"),
    ],
)
def test_a_malformed_url_is_refused_in_words_that_never_quote_it(url: str, why: str) -> None:
    with pytest.raises(UrlError) as refused:
        split_url(url)
    assert str(refused.value).startswith("the URL cannot be read: ") and why in str(refused.value)
    assert MARK not in str(refused.value) and refused.value.__cause__ is None


def test_a_url_is_split_with_its_port_read() -> None:
    parts = split_url("https://user:pw@[2001:DB8::1]:8443/v1/x?api-version=2&key=k#top")
    assert (parts.scheme, parts.host, parts.port, parts.path) == ("https", "2001:db8::1", 8443, "/v1/x")
    assert (parts.username, parts.password, parts.query_names) == ("user", "pw", ["api-version", "key"])
    assert parts.joined(query="", fragment="") == "https://user:pw@[2001:DB8::1]:8443/v1/x"


# The names refused as query keys of a stored URL (docs/deployment.md, "Secrets"), and names that are
# not credentials though they hold a credential's word in part.
CREDENTIALS = [
    "api-key",
    "api_key",
    "apikey",
    "apiKey",
    "key",
    "token",
    "access_token",
    "id_token",
    "password",
    "pwd",
    "pass",
    "secret",
    "client_secret",
    "sig",
    "signature",
    "X-Amz-Signature",
    "X-Amz-Credential",
    "X-Amz-Security-Token",
    "X-Goog-Signature",
    "subscription-key",
    "auth",
    "jwt",
]
NOT_CREDENTIALS = ["api-version", "max_tokens", "sort_key", "keyword", "tokenizer", "passage", "q", "keys"]


@pytest.mark.parametrize("name", CREDENTIALS)
def test_each_credential_name_is_refused_in_the_query(name: str) -> None:
    assert credential_name(name)
    problems = url_credential_problems(split_url(f"https://api.example/v1?{name}=abc&q=x"), "use a variable")
    assert problems == [f"query parameter {name} looks like a credential; use a variable"]


@pytest.mark.parametrize("name", NOT_CREDENTIALS)
def test_other_names_pass(name: str) -> None:
    assert not credential_name(name)
    assert url_credential_problems(split_url(f"https://api.example/v1?{name}=abc"), "-") == []


@pytest.mark.parametrize(
    ("url", "user_allowed", "refused"),
    [
        ("https://user:pw@api.example/v1", False, True),
        ("https://ghp_token@api.example/v1", False, True),  # a token given as the user
        ("https://:pw@api.example/v1", False, True),
        ("ssh://git@git.example/x.git", True, False),  # ssh's user is no secret
        ("ssh://git:pw@git.example/x.git", True, True),
    ],
)
def test_user_info_is_a_credential(url: str, user_allowed: bool, refused: bool) -> None:
    problems = url_credential_problems(split_url(url), "name a variable", user_allowed=user_allowed)
    assert problems == (
        ["credentials in the URL (user:password@) would be stored; name a variable"] if refused else []
    )


@pytest.mark.parametrize(
    "text",
    [
        # aiohttp's InvalidUrlClientError, dulwich's GitProtocolError, urllib3's MaxRetryError, httpx's
        f"InvalidUrlClientError: http://api.example:65536/v1?x={MARK}/chat/completions",
        f"unexpected http resp 404 for https://git.example/{MARK}/x.git/info/refs?service=git-receive-pack",
        f"HTTPSConnectionPool(host='git.example', port=443): Max retries exceeded with url: /{MARK}/x.git/"
        "info/refs?service=git-receive-pack (Caused by NewConnectionError('refused'))",
        f"Invalid port in 'https://git.example:99999/{MARK}'",
        f"cannot read /{MARK}%20x/x.git and {MARK} x/x.git",
    ],
)
def test_an_error_text_keeps_no_url(text: str) -> None:
    url = f"https://git.example/{MARK}/x.git?x={MARK}"
    assert MARK not in url_free(text, [url, f"https://git.example/{MARK} x/x.git"])
    assert "(the URL)" in url_free(text, [url, f"https://git.example/{MARK} x/x.git"])


@pytest.mark.parametrize(
    "exc",
    [
        aiohttp.InvalidUrlClientError(f"http://api.example:65536/v1?x={MARK}/chat/completions"),
        aiohttp.InvalidUrlRedirectClientError(f"http://api.example/{MARK}", "redirected to a bad URL"),
        UnicodeError(f"label empty or too long in api..{MARK}"),
        RuntimeError(f"something about http://api.example/{MARK}"),
    ],
)
def test_a_transport_failure_is_worded_without_the_exceptions_text(exc: BaseException) -> None:
    """aiohttp's InvalidUrlClientError is the URL itself (the judge's try showed it): the failure is
    said by its kind."""
    said = describe_transport_error(exc, timeout=5)
    assert MARK not in said and "://" not in said, said


def test_an_error_text_without_a_url_is_kept() -> None:
    text = "connect error: git.example:443: Connection refused"
    assert url_free(text, ["https://git.example/x.git"]) == text


# -------------------------------------------------------------------------------- the one place

PACKAGES = ("assay", "labeling", "golden_io", "evaluation")
PARSERS = {"urlsplit", "urlparse"}


def _parsers_used(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "urllib.parse":
            used |= {alias.name for alias in node.names if alias.name in PARSERS}
        elif isinstance(node, ast.Attribute) and node.attr in PARSERS:
            used.add(node.attr)
    return used


def test_every_outbound_url_is_parsed_in_one_place() -> None:
    """No module of the core or the apps splits a URL itself: they call `assay.urls.split_url`, which
    refuses a malformed one in words where `urlsplit` raises (a 500 on a form) or quotes it."""
    offenders = {
        str(path.relative_to(REPO)): sorted(used)
        for package in PACKAGES
        for path in sorted((REPO / package).rglob("*.py"))
        if path != REPO / "assay" / "urls.py" and (used := _parsers_used(path))
    }
    assert offenders == {}
