"""assay.inputs: id_number and whole_number on any value, ASCII digits within bounds, None for everything
else, never an exception."""

from __future__ import annotations

from typing import Any

import pytest

from assay.inputs import MAX_DB_INT as ID_MAX
from assay.inputs import id_number, whole_number


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1", 1),
        ("0042", 42),
        (str(ID_MAX), ID_MAX),
        ("0" * 30 + "7", 7),  # leading zeros do not count toward the length
        (17, 17),
        (ID_MAX, ID_MAX),
    ],
)
def test_it_reads_ids(value: Any, expected: int) -> None:
    assert id_number(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "²",  # isdigit() says yes, int() raises
        "①",
        "٣",  # int() reads it as 3: not a digit a person typed in an id
        "１２",  # full-width
        str(ID_MAX + 1),
        "9" * 5000,  # int() itself refuses past 4,300 digits
        "",
        "0",
        "-1",
        "+1",
        " 1",
        "1 ",
        "1.0",
        "1e3",
        "0x10",
        "1_000",
        0,
        -5,
        ID_MAX + 1,
        10**100,
        True,
        1.0,
        None,
        [1],
        b"1",
    ],
)
def test_anything_else_is_none(value: Any) -> None:
    assert id_number(value) is None


def test_bounds_are_the_callers() -> None:
    assert whole_number("0") == 0
    assert whole_number("11", low=1, high=10) is None
    assert whole_number("10", low=1, high=10) == 10
    assert whole_number("5", low=6) is None
