"""A user's JSON, read one way: bounded in depth, every failure a worded `JsonInputError` (pure, no Django).

Wherever JSON from a person or a file arrives (an API body, a grade save, a budgets form, a CLI file), a
body nested thousands of levels deep must be a worded refusal, not a RecursionError that becomes a 500 or
a traceback. Nothing Assay reads legitimately nests deeper than a handful of levels (a budgets file: 4; a
target's query template: a few more), so `MAX_DEPTH` is generous and still far from Python's recursion
limit.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64


class JsonInputError(ValueError):
    """Why a text is not usable JSON, in words a user can act on."""


def json_depth_over(value: Any, limit: int) -> bool:
    """Whether `value` nests arrays and objects more than `limit` levels deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def json_loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Decode `text`; raise JsonInputError naming the place of a syntax error, an encoding that is not
    UTF-8, a number too long to read, or nesting deeper than `max_depth`."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except UnicodeDecodeError:
        raise JsonInputError("not UTF-8 text") from None
    except RecursionError:
        raise JsonInputError(f"nested deeper than {max_depth} levels of arrays or objects") from None
    except ValueError:  # the only other: an integer literal beyond Python's digit limit
        raise JsonInputError("a number is too long to read") from None
    if json_depth_over(value, max_depth):
        raise JsonInputError(f"nested deeper than {max_depth} levels of arrays or objects")
    return value
