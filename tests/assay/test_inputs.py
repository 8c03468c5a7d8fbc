"""Typed whole numbers and header lines (assay.inputs): ASCII digits within bounds, never an exception;
header names and values that an HTTP client would refuse later are refused when given."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.inputs import MAX_DB_INT, header_name_problem, header_value_problem, whole_number


@pytest.mark.parametrize(
    ("text", "low", "high", "value"),
    [
        ("0", 0, 10, 0),
        ("007", 0, 10, 7),
        ("500", 1, 500, 500),
        ("501", 1, 500, None),
        ("0", 1, 500, None),
        ("²", 0, 10, None),  # str.isdigit() is true for these: int() refuses them
        ("①", 0, 10, None),
        ("٣", 0, 10, None),  # an Arabic-Indic 3: int() reads it, but it is not what a URL or form should hold
        ("-1", 0, 10, None),
        ("+1", 0, 10, None),
        (" 1", 0, 10, None),
        ("1.0", 0, 10, None),
        ("", 0, 10, None),
        ("9" * 5000, 0, MAX_DB_INT, None),  # past Python's int-string limit: counted, not converted
        ("0" * 5000 + "1", 0, 10, 1),
        (str(MAX_DB_INT), 0, MAX_DB_INT, MAX_DB_INT),
        (str(MAX_DB_INT + 1), 0, MAX_DB_INT, None),
    ],
)
def test_a_whole_number_is_ascii_digits_within_bounds(
    text: str, low: int, high: int, value: int | None
) -> None:
    assert whole_number(text, low=low, high=high) == value


@given(st.text(max_size=30) | st.integers(min_value=-(10**30), max_value=10**30).map(str))
def test_any_text_is_a_whole_number_in_range_or_none(text: str) -> None:
    value = whole_number(text, low=3, high=10**12)
    expected = int(text) if text.isascii() and text.isdigit() and 3 <= int(text) <= 10**12 else None
    assert value == expected


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("X-Tenant", True),
        ("Cache-Control", True),
        ("X-Tenant\n", False),  # `$` in a pattern matches before a final newline: a fullmatch does not
        ("X Tenant", False),
        ("X-Tenant:", False),
        ("", False),
        ("X-Ténant", False),
    ],
)
def test_a_header_name_is_a_token(name: str, ok: bool) -> None:
    assert (header_name_problem(name) is None) is ok


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("no-cache", None),
        ("a\tb", None),  # a tab is allowed in a value
        ("1\r\nX-Injected: evil", "a header value cannot contain a line break"),
        ("1\n", "a header value cannot contain a line break"),
        ("a\x00b", "a header value cannot contain the control character \\u0000"),
        ("a\x1bb", "a header value cannot contain the control character \\u001b"),
        ("a\x7fb", "a header value cannot contain the control character \\u007f"),
    ],
)
def test_a_header_value_holds_no_line_break_or_control_character(value: str, says: str | None) -> None:
    assert header_value_problem(value) == says
