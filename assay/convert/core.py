"""What every judgment format's reader and writer share (pure, no Django): the problems and their error,
reading grades onto the golden scale, queries identified by their text, and the draft a reader fills in
and `build` turns into a validated `GoldenFile`.

A reader never raises anything but `ConvertError` for bad input, and reports every problem it finds at
once, each naming the file and its place in it (a line, or a JSON path such as
`judgmentRatings[2].ratings[0].rating`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.golden.format import GoldenFormatError, from_dict
from assay.golden.model import GoldenFile, Scale
from assay.jsonin import JsonInputError, json_loads

DEFAULT_VERSION = "imported"
# A name a format carries (an SRW judgment list's name) becomes the golden version only when it is plainly
# one (docs/golden-format.md: a git tag name); otherwise the default, so a valid input never fails on it.
_PLAIN_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*$")


def plain_version(name: object) -> str | None:
    if (
        isinstance(name, str)
        and len(name) <= 100
        and _PLAIN_VERSION.match(name)
        and not name.endswith(".lock")
    ):
        return name
    return None


class ConvertError(ValueError):
    """Input that cannot be converted; `problems` lists every one found, each naming its file and place,
    and `places` the same as (file, place, message) where they were collected so (`Problems`)."""

    def __init__(self, problems: Iterable[str], places: Iterable[tuple[str, str, str]] = ()) -> None:
        self.problems = list(problems)
        self.places = list(places)
        super().__init__("\n".join(self.problems))


class Problems:
    """Problems collected while reading one or more files; `check()` raises them together."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.places: list[tuple[str, str, str]] = []

    def add(self, file: Path | str, where: str, message: str) -> None:
        self.items.append(f"{file}: {where}: {message}" if where else f"{file}: {message}")
        self.places.append((str(file), where, message))

    def check(self) -> None:
        if self.items:
            raise ConvertError(self.items, self.places)


# --------------------------------------------------------------------------------------------- grades

_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


def parse_number(text: str) -> float | None:
    """A decimal number as written in a file or on the command line (no `nan`, `inf`, `1_0` or hex)."""
    text = text.strip()
    if not _NUMBER.match(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class GradeReading:
    """How a format's ratings become golden grades: `mapping` first (`--map FROM=TO`), then `source` (the
    input's range, `--scale MIN..MAX`, read linearly onto `target` and rounded half up), else the rating
    must already be an integer on `target`."""

    target: Scale = field(default_factory=Scale)
    source: tuple[float, float] | None = None
    mapping: Mapping[float, int] = field(default_factory=dict)
    # What the scale and the map are called where they are given: the command's options, or a form's
    # fields ("Scale", "Map"), so that a problem names what the reader can change.
    names: tuple[str, str] = ("--scale", "--map")

    @property
    def how(self) -> str:
        return f"{self.names[0]} MIN..MAX or {self.names[1]} FROM=TO says how to read it"

    def read(self, raw: object, what: str = "rating") -> tuple[int | None, str | None]:
        """(grade, None) or (None, the problem in words, naming the value as the format does: `what`)."""
        shown = f'{what} "{raw}"' if isinstance(raw, str) else f"{what} {raw!r}"
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            return None, f"{shown} is not a number"
        if isinstance(raw, str):
            value = parse_number(raw)
            if value is None:
                why = "is empty" if not raw.strip() else "is not a number"
                return None, f"{shown} {why}"
        elif isinstance(raw, float) and not math.isfinite(raw):
            return None, f"{shown} is not a finite number"
        else:
            value = float(raw)
        if value in self.mapping:
            return self.mapping[value], None
        if self.source is not None:
            low, high = self.source
            if not low <= value <= high:
                return None, f"{shown} is outside {self.names[0]} {_num(low)}..{_num(high)}"
            span = self.target.max - self.target.min
            return self.target.min + math.floor((value - low) / (high - low) * span + 0.5), None
        if not value.is_integer():
            return None, f"{shown} is not an integer ({self.how})"
        grade = int(value)
        if grade not in self.target:
            return None, f"{shown} is outside the golden scale {self.target} ({self.how})"
        return grade, None


def _num(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def parse_scale_option(text: str) -> tuple[float, float]:
    """`--scale MIN..MAX`; ValueError in words."""
    low_text, sep, high_text = text.partition("..")
    low, high = parse_number(low_text), parse_number(high_text)
    if not sep or low is None or high is None:
        raise ValueError(f"{text!r}: expected MIN..MAX, e.g. 0..1")
    if low >= high:
        raise ValueError(f"{text!r}: MIN must be below MAX")
    return low, high


def parse_map_options(items: Iterable[str], target: Scale) -> dict[float, int]:
    """`--map FROM=TO` items: FROM a number as the input writes it, TO a grade on the golden scale."""
    mapping: dict[float, int] = {}
    for item in items:
        left, sep, right = item.partition("=")
        source, grade = parse_number(left), parse_number(right)
        if not sep or source is None or grade is None:
            raise ValueError(f"{item!r}: expected FROM=TO, e.g. 1=3")
        if not grade.is_integer() or int(grade) not in target:
            raise ValueError(f"{item!r}: {right.strip()} is not a grade on the golden scale {target}")
        if source in mapping:
            raise ValueError(f"{item!r}: {left.strip()} is mapped twice")
        mapping[source] = int(grade)
    return mapping


# --------------------------------------------------------------------------------------------- drafts


@dataclass(slots=True)
class DraftJudgment:
    doc_id: str
    grade: int
    place: str


@dataclass(slots=True)
class DraftQuery:
    """A query as a reader found it; `place` is where it first appears, `fields` any optional golden
    query fields the format carries (locale, filters, stratum ...)."""

    id: str
    text: str
    place: str
    judgments: dict[str, DraftJudgment] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)


class Draft:
    """The queries a reader found, in order, with the places the problems of `build` will name."""

    def __init__(self, file: Path, problems: Problems) -> None:
        self.file = file
        self.problems = problems
        self.queries: dict[str, DraftQuery] = {}
        self.header: dict[str, Any] = {}
        self._by_text: dict[str, DraftQuery] = {}

    def query(self, query_id: str, text: str, place: str) -> DraftQuery:
        found = self.queries.get(query_id)
        if found is None:
            found = self.queries[query_id] = DraftQuery(query_id, text, place)
        return found

    def query_by_text(self, text: str, place: str) -> DraftQuery:
        """Queries identified by their text get ids q-0001, q-0002 ... in order of first appearance."""
        found = self._by_text.get(text)
        if found is None:
            found = self.query(f"q-{len(self._by_text) + 1:04d}", text, place)
            self._by_text[text] = found
        return found

    def judge(self, query: DraftQuery, doc_id: str, grade: int, place: str) -> None:
        """One rating; a second rating of the same document for the same query is a problem."""
        earlier = query.judgments.get(doc_id)
        if earlier is not None:
            self.problems.add(
                self.file,
                place,
                f"a second rating of document {doc_id!r} for query {query.text!r} (first at {earlier.place})",
            )
            return
        query.judgments[doc_id] = DraftJudgment(doc_id, grade, place)


_GOLDEN_PLACE = re.compile(r"^queries\[(\d+)\](?:\.judgments\[(\d+)\])?\.?(.*)$")


def build(draft: Draft, *, version: str | None) -> GoldenFile:
    """The draft as a validated golden file; a golden file's problem names the draft's place in the input
    (`line 7: doc_id: ...`), not the golden file's path it never had."""
    draft.problems.check()
    queries = list(draft.queries.values())
    if not queries:
        raise ConvertError([f"{draft.file}: no judgments found: a golden file needs at least one query"])
    data: dict[str, Any] = dict(draft.header)
    data["version"] = version or data.get("version") or DEFAULT_VERSION
    data["queries"] = [
        {"id": q.id, "text": q.text, **q.fields}
        | {"judgments": [{"doc_id": j.doc_id, "grade": j.grade} for j in q.judgments.values()]}
        for q in queries
    ]
    try:
        return from_dict(data)
    except GoldenFormatError as exc:
        problems: list[str] = []
        for problem in exc.problems:
            match = _GOLDEN_PLACE.match(problem.where)
            if match is None:
                hint = " (--golden-version V sets another)" if problem.where == "version" else ""
                problems.append(f"{draft.file}: {problem}{hint}")
                continue
            query = queries[int(match.group(1))]
            rest = match.group(3)
            if match.group(2) is not None:
                place = list(query.judgments.values())[int(match.group(2))].place
            else:
                place = f"{query.place} (query {query.text!r})"
            problems.append(f"{draft.file}: {place}: {rest + ': ' if rest else ''}{problem.message}")
        raise ConvertError(problems) from None


# --------------------------------------------------------------------------------------------- reading


def read_bytes(path: Path, problems: Problems, data: bytes | None = None) -> bytes | None:
    """A file's bytes (or `data`, an upload's bytes that `path` only names); None and a problem when the
    file cannot be read."""
    if data is not None:
        return data
    try:
        return path.read_bytes()
    except FileNotFoundError:
        problems.add(path, "", "no such file")
        return None
    except IsADirectoryError:
        problems.add(path, "", "is a directory, expected a file")
        return None
    except OSError as exc:
        problems.add(path, "", str(exc.strerror or exc))
        return None


def read_text(path: Path, problems: Problems, data: bytes | None = None) -> str | None:
    """A file's UTF-8 text (a byte-order mark dropped); None and a problem when it cannot be read."""
    raw = read_bytes(path, problems, data)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        problems.add(path, f"line {line}", f"not UTF-8 text (byte {exc.start})")
        return None


def read_json_object(path: Path, problems: Problems, data: bytes | None, expected: str) -> Any:
    """A JSON file whose top level must be an object (`expected` says with what, for the error); stops
    with the problems (`Problems.check`) when it is not JSON or not an object."""
    body = read_json(path, problems, data)
    problems.check()
    if not isinstance(body, dict):
        problems.add(path, "", f"expected an object with {expected}, got {describe(body)}")
        problems.check()
    return body


def read_json(path: Path, problems: Problems, data: bytes | None = None) -> Any:
    """A JSON file through the project's bounded reader; None and a problem when it is not JSON."""
    text = read_text(path, problems, data)
    if text is None:
        return None
    if not text.strip():
        problems.add(path, "", "the file is empty")
        return None
    try:
        return json_loads(text)
    except JsonInputError as exc:
        if exc.syntax:
            problems.add(path, f"line {exc.line}, column {exc.column}", f"invalid JSON: {exc.detail}")
        else:
            problems.add(path, "", f"invalid JSON: {exc}")
        return None


def describe(value: object) -> str:
    """A JSON value's kind, for "expected an object, got an array"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
