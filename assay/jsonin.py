"""A user's JSON, read one way: bounded in depth, every failure a worded `JsonInputError` (pure, no Django).

Wherever JSON from a person or a file arrives (an API body, a grade save, a target's or a budgets form, a
run's `KEY=VALUE` params, an import's JSONL line, a golden file, a CLI file), a body nested thousands of
levels deep must be a worded refusal, not a RecursionError that becomes a 500 or a traceback; so must an
integer longer than Python reads (`int` refuses more than 4,300 digits with a ValueError). Nothing Assay
reads legitimately nests deeper than a handful of levels (a budgets file: 4; a target's query template: a
few more), so `MAX_DEPTH` is generous and still far from Python's recursion limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 64


class JsonInputError(ValueError):
    """Why a text is not usable JSON, in words a user can act on.

    A syntax error carries its place (`line`, `column`) and the parser's words (`detail`), so a caller
    that reads one line of a JSONL file can say "line 7: malformed JSON at column 3: ..."; a text too deep
    or with too long a number has `line` None (it is valid JSON, only beyond what is read)."""

    def __init__(
        self, message: str, *, line: int | None = None, column: int | None = None, detail: str = ""
    ) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.detail = detail or message

    @property
    def syntax(self) -> bool:
        """Whether the text is not JSON at all (rather than JSON beyond the bounds)."""
        return self.line is not None


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


def _too_deep(max_depth: int | None) -> str:
    if max_depth is None:
        return "nested too deeply to read"
    return f"nested deeper than {max_depth} levels of arrays or objects"


def json_loads(
    text: str | bytes,
    *,
    max_depth: int | None = MAX_DEPTH,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """Decode `text`; raise JsonInputError naming the place of a syntax error, an encoding that is not
    UTF-8, a number too long to read, or nesting deeper than `max_depth`.

    `max_depth=None` skips the depth walk (a golden file's checks refuse nested values themselves, and a
    walk over a million queries would cost seconds); nesting past Python's recursion limit is still a
    JsonInputError. The hooks are `json.loads`' own."""
    try:
        value = json.loads(text, object_pairs_hook=object_pairs_hook, parse_constant=parse_constant)
    except json.JSONDecodeError as exc:
        raise JsonInputError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            line=exc.lineno,
            column=exc.colno,
            detail=exc.msg,
        ) from None
    except UnicodeDecodeError:
        raise JsonInputError("not UTF-8 text") from None
    except RecursionError:
        raise JsonInputError(_too_deep(max_depth)) from None
    except ValueError:  # the only other: an integer literal beyond Python's digit limit
        raise JsonInputError("a number is too long to read") from None
    if max_depth is not None and json_depth_over(value, max_depth):
        raise JsonInputError(_too_deep(max_depth))
    return value


def json_or_text(text: str) -> Any:
    """A `KEY=VALUE` value as typed: JSON when it is JSON (`true`, `3`, `"text"`, `[1, 2]`), else the text
    itself (`mode=fast`). JSON beyond the bounds (too deep, a number too long) is not taken for text, which
    would send the engine something else than was typed: it raises JsonInputError."""
    try:
        return json_loads(text)
    except JsonInputError as exc:
        if exc.syntax:
            return text
        raise
