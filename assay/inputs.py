"""Small values typed by a person, read one way (pure, no Django): whole numbers from a query string or a
form field, and HTTP header names and values to be sent later.

`str.isdigit()` is no test for `int()`: it is true for `²` or `①` (which `int` refuses with a ValueError,
a 500 on a page) and for 5,000 digits (beyond Python's int-string conversion limit, another ValueError, or
beyond what a database integer holds). `whole_number` reads ASCII digits only, within bounds, and answers
None for anything else, so a caller words its own refusal.

A header value with a line break is refused by the HTTP client only when the request is made (a run that
fails at its first call); any other control character is garbage at best. `header_name_problem` and
`header_value_problem` refuse both when the header is saved or given on the command line.

`http_url` reads an address a setting names (a demo stand-in's, the identity provider's).
"""

from __future__ import annotations

import re
from typing import Any

from assay.urls import SplitUrl, UrlError, split_url

# What a signed 64-bit column (PostgreSQL bigint, SQLite's integer) holds: also the largest primary key.
MAX_DB_INT = 2**63 - 1

# RFC 9110's token: the characters a header name may have.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Every C0 control character but tab (which a header value may hold), and DEL.
_HEADER_VALUE_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def whole_number(value: Any, *, low: int = 0, high: int = MAX_DB_INT) -> int | None:
    """`value` as an int when it is an int (not a bool) or a string of ASCII digits (no sign, no spaces)
    within low..high; else None. Never raises, whatever `value` is (a URL parameter, a form field, a JSON
    body's value).

    Digits are counted before converting, so 5,000 of them cost nothing and raise nothing."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit()):
            return None
        significant = value.lstrip("0") or "0"
        if len(significant) > len(str(high)):
            return None
        value = int(significant)
    if not isinstance(value, int):
        return None
    return value if low <= value <= high else None


def id_number(value: Any) -> int | None:
    """A database id (1..MAX_DB_INT) from a URL parameter, a form value or a JSON body, else None."""
    return whole_number(value, low=1)


def header_name_problem(name: str) -> str | None:
    """Why `name` cannot be an HTTP header's name, or None (a token: letters, digits and !#$%&'*+-.^_`|~;
    no space, colon or line break)."""
    if not _HEADER_NAME.fullmatch(name):
        return f"{name!r} is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)"
    return None


def header_value_problem(value: str) -> str | None:
    """Why `value` cannot be sent as an HTTP header's value, or None: a line break (which would end the
    header and start another) or any other control character but tab."""
    found = _HEADER_VALUE_CONTROL.search(value)
    if found is None:
        return None
    if found.group() in "\r\n":
        return "a header value cannot contain a line break"
    return f"a header value cannot contain the control character \\u{ord(found.group()):04x}"


def http_url(url: str) -> SplitUrl | None:
    """`url`'s parts (`assay.urls.split_url`) when it is an http or https URL with a host and, when one
    is written, a port in 1..65535; else None (never raises)."""
    try:
        parts = split_url(url)
    except UrlError:
        return None
    if parts.scheme not in ("http", "https") or not parts.host:
        return None
    return parts
