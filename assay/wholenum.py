"""Whole numbers from a URL, a form field or a JSON body, read one way (pure, no Django).

`str.isdigit()` is true for characters `int()` cannot read (`"²"`, `"①"`) and `int()` reads digits of
other scripts (`"٣"` is 3), so a check with one and a conversion with the other turns an odd character
into a 500. A number past the database's integer range is an OverflowError inside SQLite's driver. The
readers here accept ASCII digits only, within bounds, and answer None for anything else: the caller words
the refusal (a 400 naming the parameter, or "no such ..." as for any unknown id).
"""

from __future__ import annotations

from typing import Any

# The largest primary key the database holds (a BigAutoField: PostgreSQL bigint, SQLite INTEGER).
ID_MAX = 2**63 - 1


def whole_number(value: Any, *, low: int = 0, high: int = ID_MAX) -> int | None:
    """`value` as an int when it is an int (not a bool) or a string of ASCII digits (no sign, no space)
    within `low`..`high`; else None. Never raises, whatever `value` is."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        # The length check first: int() of a 5,000-digit string is slow, then refused by Python itself.
        if not (value.isascii() and value.isdigit()) or len(value.lstrip("0")) > len(str(high)):
            return None
        value = int(value)
    if not isinstance(value, int):
        return None
    return value if low <= value <= high else None


def id_number(value: Any) -> int | None:
    """A database id (1..ID_MAX) from a URL parameter or a form value, else None."""
    return whole_number(value, low=1)
