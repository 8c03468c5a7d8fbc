"""Every outbound URL read one way (pure, no Django): `split_url`, the one parse, which never raises past
its refusal in words; the credentials a URL must not carry (`url_credential_problems`); and error texts with
no URL in them (`url_free`).

A URL someone typed (a search target's, a judge's base URL, a webhook's, a git remote) is parsed here
and nowhere else (`tests/assay/test_urls.py` holds the apps and the core to that): a malformed one (an
IPv6 literal without its `]`, a port past 65535) is a `UrlError` whose words never quote the URL, since a
URL may hold a secret and errors are shown on pages and stored with runs. What a client library makes of
the host is `assay.netpolicy`'s to judge.

Errors never quote a URL either: an exception's text from aiohttp, httpx, urllib3 or dulwich often does
(`InvalidUrlClientError: http://...`, `unexpected http resp 404 for http://...`, `Max retries exceeded
with url: /path?query`), so every such text is passed through `url_free` before it is shown or stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from assay.secrets import credential_name


class UrlError(ValueError):
    """A URL that cannot be read, in words that never quote it."""


@dataclass(frozen=True, slots=True)
class SplitUrl:
    """A URL's parts as `urllib.parse.urlsplit` reads them, the port read (and checked) at once."""

    scheme: str
    netloc: str
    host: str  # lower case, without IPv6 brackets; "" when the URL names none
    port: int | None
    username: str | None
    password: str | None
    path: str
    query: str
    fragment: str

    @property
    def query_names(self) -> list[str]:
        return [name for name, _ in parse_qsl(self.query, keep_blank_values=True)]

    def joined(self, **changes: str) -> str:
        """The URL again, with `changes` to its parts (scheme, netloc, path, query, fragment)."""
        parts = replace(self, **changes)  # type: ignore[arg-type]
        return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, parts.fragment))


# What urlsplit's ValueErrors mean, in words that quote nothing of the URL (its texts quote the host or
# the port).
_WHY = (
    ("Invalid IPv6 URL", "the IPv6 address in brackets is malformed (a '[' without its ']', or the reverse)"),
    ("does not appear to be an IPv4 or IPv6 address", "what is in brackets is not an IPv6 address"),
    ("Port", "the port must be a number from 1 to 65535"),
    ("NFKC", "the host has characters that Unicode normalisation turns into '/', '?', '#', '@' or ':'"),
)


def split_url(url: str) -> SplitUrl:
    """The URL's parts; `UrlError` in words for one that cannot be read (a malformed IPv6 literal, a
    port that is not a number from 1 to 65535)."""
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname or ""
    except ValueError as exc:
        text = str(exc)
        why = next((words for key, words in _WHY if key in text), "it cannot be read as a URL")
        raise UrlError(f"the URL cannot be read: {why}") from None
    if port == 0:
        raise UrlError(f"the URL cannot be read: {_WHY[2][1]}")
    return SplitUrl(
        scheme=parts.scheme,
        netloc=parts.netloc,
        host=host,
        port=port,
        username=parts.username,
        password=parts.password,
        path=parts.path,
        query=parts.query,
        fragment=parts.fragment,
    )


def url_credential_problems(parts: SplitUrl, use: str, *, user_allowed: bool = False) -> list[str]:
    """Why the URL would store a credential, one sentence each ending in `use` (where the secret goes
    instead): user info (`user:password@`; a user alone too unless `user_allowed`, as ssh's `git@` is,
    since a token is often given as the user), and each query parameter named like a credential
    (`assay.secrets.credential_name`: `api-key`, `key`, `token`, `access_token`, `sig`, ...)."""
    problems = []
    if parts.password is not None or (parts.username is not None and not user_allowed):
        problems.append(f"credentials in the URL (user:password@) would be stored; {use}")
    named = sorted({name for name in parts.query_names if credential_name(name)})
    if named:
        problems.append(f"query parameter {', '.join(named)} looks like a credential; {use}")
    return problems


# Anything written as scheme://...: a URL some library quoted, whichever one it is.
_ANY_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>)\]]*")
_SHOWN = "(the URL)"
_SHORTEST = 4  # shorter pieces ("/", "/v1") are everywhere in a message and secret nowhere


def _pieces(url: str) -> Iterable[str]:
    """The URL and the parts of it a library may quote alone (a path with its query, the query, the user
    info), as given, percent-decoded and percent-encoded."""
    try:
        parts = split_url(url)
    except UrlError:
        pieces = [url]
    else:
        userinfo = parts.netloc.rpartition("@")[0]
        pieces = [url, parts.path + ("?" + parts.query if parts.query else ""), parts.path, parts.query]
        pieces += [userinfo, *(value for _, value in parse_qsl(parts.query))]
    for piece in pieces:
        yield from (piece, unquote(piece), quote(piece, safe="/?=&:@"))


def url_free(text: str, urls: Iterable[str] = ()) -> str:
    """`text` (an exception's, a library's) with no URL in it: every `scheme://...` and each of `urls`'
    pieces (`_pieces`) replaced by "(the URL)"."""
    pieces = sorted({p for url in urls for p in _pieces(url) if len(p) >= _SHORTEST}, key=len, reverse=True)
    for piece in pieces:
        text = text.replace(piece, _SHOWN)
    return _ANY_URL.sub(_SHOWN, text)
