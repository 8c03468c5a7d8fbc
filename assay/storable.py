"""What a database column can hold, checked before anything is written (pure, no Django).

PostgreSQL refuses a NUL character in text and JSON, and a value longer than its `varchar` column, with an
error that reaches the page as a 500; SQLite stores both. Every write of a person's text (an import's rows,
a grade's note, a run's params, a target's settings) asks these first and refuses with the field named, so
that what is accepted, and the words of a refusal, are the same on both. The golden file's validator
applies the same rules in its own words (assay/golden/checks.py; `assay validate`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# The character rules, one place for every check of a person's text (the golden file's validator and the
# query-log import read them from here).
SURROGATE = re.compile("[\ud800-\udfff]")
# Control characters other than tab, line feed and carriage return: a name, an id, a title or a URL holds
# none (a NUL cannot be stored at all; the others are garbage that no page shows).
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NUL = re.compile("\x00")


def text_problem(value: str, max_length: int | None = None, *, free_text: bool = False) -> str | None:
    """Why `value` cannot be stored, or None: a lone surrogate (not Unicode), a NUL, and for anything but
    `free_text` (a document's body, a note) any other control character but tab, LF and CR; then more
    characters than `max_length`. The words follow "<field> ..." (`title: is 501 characters long; ...`)."""
    found = SURROGATE.search(value)
    if found:
        return f"contains a lone surrogate \\u{ord(found.group()):04x} (not valid Unicode)"
    found = (_NUL if free_text else CONTROL).search(value)
    if found:
        return f"contains the control character \\u{ord(found.group()):04x}, which cannot be stored"
    if max_length is not None and len(value) > max_length:
        return f"is {len(value):,} characters long; at most {max_length:,} can be stored"
    return None


def json_problem(value: object, where: str) -> str | None:
    """The first name or string in JSON data (a JSON column's value) that cannot be stored, as
    "<where>.<path>: why" (`params.boost[0]: contains the control character \\u0000, ...`), or None."""
    if isinstance(value, str):
        problem = text_problem(value, free_text=True)
        return f"{where}: {problem}" if problem else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            name = str(key)
            problem = text_problem(name, free_text=True)
            if problem:
                return f"{where}: the name {name!r} {problem}"
            found = json_problem(item, f"{where}.{name}")
            if found:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = json_problem(item, f"{where}[{i}]")
            if found:
                return found
    return None
