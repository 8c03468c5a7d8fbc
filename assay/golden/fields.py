"""What the golden file's parser and its checks share (pure): the field names, the problem type,
the error, and the natural order of ids (docs/golden-format.md)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Format = Literal["json", "jsonl"]

# The format's revision (docs/golden-format.md, "Revisions"). A revision only adds optional fields, so a
# file of an earlier revision reads the same; a file does not name its revision.
FORMAT_REVISION = 3

FILE_FIELDS = ("version", "k", "relevant_min_grade", "scale", "rubric", "queries")
HEADER_FIELDS = FILE_FIELDS[:-1]
QUERY_FIELDS = (
    "id",
    "text",
    "locale",
    "filters",
    "stratum",
    "traffic_band",
    "failure_mode",
    "weight",
    "tier",
    "expect_empty",
    "critical",
    "tags",
    "judgments",
)
JUDGMENT_FIELDS = ("doc_id", "grade", "key", "source")
# The longest value of each string field that the database columns hold (labeling.models Query and
# Document, golden_io.models GoldenVersion: tests/golden_io/test_limits.py holds them equal), so that a file
# `assay validate` accepts is never refused on save, on SQLite (which would store it) as on PostgreSQL.
MAX_LENGTH = {
    "version": 100,
    "rubric": 100,
    "id": 200,
    "text": 1000,
    "locale": 35,
    "stratum": 100,
    "failure_mode": 100,
    "doc_id": 200,
    "key": 500,
}
# Integers the database's integer columns hold (k, relevant_min_grade, the scale, grades): 32 bits, signed.
MAX_INT = 2**31 - 1
SCALE_FIELDS = ("min", "max")


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong (or, from `golden_warnings`, worth a look) in a golden file.

    `where` and `message` together are the whole human text (`str(problem)`); `code` and `query_id` are
    for programs (an import page linking to the query, a test asserting the rule that fired).
    """

    where: str
    message: str
    code: str = "invalid"
    query_id: str | None = None

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class GoldenFormatError(ValueError):
    """A golden file that cannot be used; `problems` lists every problem found, in file order."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__(self.problems)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.problems,))


# --------------------------------------------------------------------------------------------- ordering


_DIGITS = re.compile(r"([0-9]+)")


def natural_key(value: str) -> tuple[Any, ...]:
    """Sort key putting q-2 before q-10; a total order (ties such as q-02 / q-2 fall back to the text)."""
    parts: list[tuple[Any, ...]] = []
    for i, part in enumerate(_DIGITS.split(value)):
        if not part:
            continue
        if i % 2:
            # A digit run compares by value: by length once leading zeros are gone, then digit by digit
            # (no int(): ids may hold more digits than Python converts).
            digits = part.lstrip("0")
            parts.append((0, len(digits), digits, part))
        else:
            parts.append((1, part))
    return (tuple(parts), value)


@dataclass(frozen=True, slots=True)
class _NonFinite:
    """NaN / Infinity / -Infinity: Python's json reads them, JSON does not allow them."""

    name: str
