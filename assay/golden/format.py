"""The golden file format: parse, validate, dump (pure, no Django). Field reference: docs/golden-format.md.

This module decodes and dumps; every rule is checked in `assay.golden.checks`; the field names, `Problem`,
`GoldenFormatError` and the natural order live in `assay.golden.fields` (re-exported here, the public API).

Two forms hold the same content:
- JSON: one document `{"version", "k", ..., "queries": [...]}` (docs/golden-format.md has a sample);
- JSONL: a header line with the file-level fields, then one query object per line.

Contracts the rest of Assay relies on:
- Parsing never raises anything but `GoldenFormatError` for bad input, and it reports every problem it can
  find at once, each naming its place (`queries[3].judgments[1].grade: 4 is outside the scale 0..3`).
- A parsed `GoldenFile` is canonical: queries sorted by id, judgments by doc id (natural order, q-2 before
  q-10), tags sorted, filter keys sorted. So `parse(dump(g)) == g` and a canonical file dumps back to the
  very same bytes, which is what makes "import, then freeze" reproduce a file exactly.
- Dumping is byte-deterministic and refuses (with `GoldenFormatError`) a `GoldenFile` that parse would
  reject: nothing is ever written that cannot be read back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from assay.golden.checks import (
    Checker,
    describe,
    golden_file_built,
    header_field_hint,
    query_field_hint_top,
    quote,
)
from assay.golden.columns import GoldenColumns
from assay.golden.fast import fast_columns
from assay.golden.fields import FILE_FIELDS as FILE_FIELDS
from assay.golden.fields import FORMAT_REVISION as FORMAT_REVISION
from assay.golden.fields import HEADER_FIELDS as HEADER_FIELDS
from assay.golden.fields import JUDGMENT_FIELDS as JUDGMENT_FIELDS
from assay.golden.fields import QUERY_FIELDS as QUERY_FIELDS
from assay.golden.fields import SCALE_FIELDS as SCALE_FIELDS
from assay.golden.fields import Format as Format
from assay.golden.fields import GoldenFormatError as GoldenFormatError
from assay.golden.fields import Problem as Problem
from assay.golden.fields import _NonFinite
from assay.golden.fields import natural_key as natural_key
from assay.golden.model import (
    GoldenFile,
    GoldenQuery,
    Scale,
    default_relevant_min_grade,
)
from assay.jsonin import JsonInputError, json_loads

# Beyond this an integral weight is written as a float: `2` reads better than `2.0`, but a weight of 1e300
# written out as 301 digits would not.
_MAX_INT_WEIGHT = 1e15
# --------------------------------------------------------------------------------------------- decoding


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers keys the document repeated (json keeps only the last)."""

    repeated: tuple[str, ...] = ()


def _object_hook(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeated: list[str] = []
        for key, _ in pairs:
            if key in seen and key not in repeated:
                repeated.append(key)
            seen.add(key)
        obj.repeated = tuple(repeated)
    return obj


_JSON_SPACE = " \t\r\n"  # what JSON allows between tokens; anything else on a "blank" line is junk


def _loads(text: str) -> Any:
    """The golden file's decoding (repeated keys kept, NaN marked), bounded by `assay.jsonin`: no depth
    bound beyond Python's own, since the checks refuse a nested value wherever one is not allowed and a
    depth walk over a large file would cost seconds. Raises JsonInputError."""
    return json_loads(text, max_depth=None, object_pairs_hook=_object_hook, parse_constant=_NonFinite)


def _decode_json(text: str, *, line: int | None) -> tuple[Any, Problem | None]:
    """Decode one JSON text; a problem instead of an exception. `line` offsets positions for JSONL."""
    try:
        value = _loads(text)
    except JsonInputError as e:
        if e.syntax:
            lineno = e.line if line is None else line
            return None, Problem(f"line {lineno}, column {e.column}", f"invalid JSON: {e.detail}", "json")
        where = "" if line is None else f"line {line}"
        return None, Problem(where, f"invalid JSON: {e}", "json")
    return value, None


def _to_text(data: str | bytes | bytearray | memoryview) -> str:
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"golden file data must be str or bytes, not {type(data).__name__}")
    raw = bytes(data)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        hint = " (it looks like UTF-16: save it as UTF-8)" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise GoldenFormatError(
            [
                Problem(
                    f"byte {e.start}",
                    f"not UTF-8: byte 0x{raw[e.start]:02x} on line {line} cannot be decoded "
                    f"({e.reason}){hint}",
                    "encoding",
                )
            ]
        ) from None


# --------------------------------------------------------------------------------------------- parsing


def from_dict(data: object) -> GoldenFile:
    """Validate an already-decoded golden file (the JSON form as Python objects) into a `GoldenFile`.

    Arrays may be lists or tuples, objects any Mapping. Raises `GoldenFormatError` with every problem.
    """
    checker = Checker()
    obj = checker.obj(data, "", FILE_FIELDS, what="the golden file", hint=query_field_hint_top)
    if obj is None:
        raise GoldenFormatError(checker.problems)
    version, k, scale, rmg, rubric = checker.header(obj, "")
    queries: list[GoldenQuery] = []
    if "queries" not in obj:
        checker.add(
            "queries",
            "missing required field: the list of queries (in JSONL, one query per line after the header)",
            "missing",
        )
    elif not isinstance(obj["queries"], list | tuple):
        checker.add("queries", f"must be an array of queries, got {describe(obj['queries'])}", "type")
    elif not obj["queries"]:
        checker.add("queries", "no queries: a golden file needs at least one", "empty")
    else:
        for i, item in enumerate(obj["queries"]):
            query = checker.query(item, f"queries[{i}]", scale)
            if query is not None:
                queries.append(query)
    return golden_file_built(checker, version, k, scale, rmg, rubric, queries)


def _decode_document(text: str) -> tuple[Any, Problem | None]:
    if not text.strip(_JSON_SPACE):
        return None, Problem("", "the file is empty", "empty")
    return _decode_json(text, line=None)


def _fast_columns(
    data: str | bytes | bytearray | memoryview, *, canonical: bool = True
) -> GoldenColumns | None:
    """A valid JSON file decoded and checked in bulk (`assay.golden.fast`); None sends the data through
    the careful walk, which names every problem."""
    if isinstance(data, str):
        try:
            raw = data.removeprefix("\ufeff").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the careful walk names it
            return None
    elif isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data).removeprefix(b"\xef\xbb\xbf")
    else:
        return None
    return fast_columns(raw, canonical=canonical)


def parse_json(data: str | bytes) -> GoldenFile:
    """Parse the JSON form (one document)."""
    fast = _fast_columns(data)
    if fast is not None:
        return fast.to_file()
    return _careful_json(_to_text(data))


def _careful_json(text: str) -> GoldenFile:
    value, problem = _decode_document(text)
    if problem is not None:
        raise GoldenFormatError([problem])
    return from_dict(value)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    # Split on "\n" only: str.splitlines would also split inside a line at U+2028, \x0c, \x85 ...
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip(_JSON_SPACE):
            yield number, line.removesuffix("\r")


def parse_jsonl(data: str | bytes) -> GoldenFile:
    """Parse the JSONL form: a header line with the file-level fields, then one query object per line."""
    text = _to_text(data)
    lines = list(_lines(text))
    if not lines:
        raise GoldenFormatError([Problem("", "the file is empty", "empty")])
    checker = Checker()
    (header_line, header_text), *rest = lines
    header_value, problem = _decode_json(header_text, line=header_line)
    version = rubric = None
    k = rmg = None
    scale: Scale | None = None
    if problem is not None:
        checker.problems.append(problem)
    elif isinstance(header_value, Mapping) and "version" not in header_value and "id" in header_value:
        checker.add(
            f"line {header_line}",
            "the first line must be the header with the file-level fields (version, k, ...); "
            "this line looks like a query",
            "missing",
        )
    else:
        where = f"line {header_line}: "
        header = checker.obj(
            header_value, where, HEADER_FIELDS, what="the header line", hint=header_field_hint
        )
        if header is not None:
            version, k, scale, rmg, rubric = checker.header(header, where)

    queries: list[GoldenQuery] = []
    for number, line in rest:
        value, problem = _decode_json(line, line=number)
        if problem is not None:
            checker.problems.append(problem)
            continue
        query = checker.query(value, f"line {number}: ", scale)
        if query is not None:
            queries.append(query)
    if not rest:
        checker.add("queries", "no queries: write one query object per line after the header", "empty")
    return golden_file_built(checker, version, k, scale, rmg, rubric, queries)


def _looks_like_jsonl(text: str) -> bool:
    """A header line and at least one more line, the first an object on its own line."""
    lines = _lines(text)
    first = next(lines, (0, ""))[1].strip(_JSON_SPACE)
    return first.startswith("{") and first.endswith("}") and next(lines, None) is not None


def parse(data: str | bytes, *, fmt: Format | None = None) -> GoldenFile:
    """Parse a golden file in either form.

    `fmt=None` detects it: one JSON document is the JSON form; text that is not one JSON document but
    whose first non-blank line is a JSON object is JSONL; anything else is reported as invalid JSON.
    """
    if fmt == "json":
        return parse_json(data)
    if fmt == "jsonl":
        return parse_jsonl(data)
    if fmt is not None:
        raise ValueError(f"unknown golden file format {fmt!r}: use 'json' or 'jsonl'")
    fast = _fast_columns(data)
    if fast is not None:
        return fast.to_file()
    return _careful(data)


def parse_columns(data: str | bytes, *, canonical: bool = True) -> GoldenColumns:
    """`parse` as columns (`assay.golden.columns`): what scoring a large run reads, without an object per
    judgment. Same problems, same content; with `canonical=False` maybe in the file's order (enough to
    count what it holds, as `assay validate` does)."""
    fast = _fast_columns(data, canonical=canonical)
    return fast if fast is not None else GoldenColumns.from_file(_careful(data))


def _careful(data: str | bytes) -> GoldenFile:
    """`parse` without the fast path: one JSON document, else JSONL, else the JSON problem."""
    text = _to_text(data)
    value, problem = _decode_document(text)
    if problem is None:
        return from_dict(value)
    if problem.code == "json" and _looks_like_jsonl(text):
        return parse_jsonl(text)
    raise GoldenFormatError([problem])


def load(path: str | os.PathLike[str]) -> GoldenFile:
    """Read a golden file: `.jsonl` is the JSONL form, anything else is detected. OSError if unreadable."""
    p = Path(path)
    return parse(p.read_bytes(), fmt="jsonl" if p.suffix.lower() == ".jsonl" else None)


# --------------------------------------------------------------------------------------------- warnings


def golden_warnings(golden: GoldenFile | GoldenColumns) -> list[Problem]:
    """Problems that do not stop an import but should be shown (docs/metrics.md: `no_positive_judgments`)."""
    if isinstance(golden, GoldenColumns):
        flags = golden.has_positive().tolist()
    else:
        flags = [q.has_positive_judgment for q in golden.queries]
    return [
        Problem(
            f"query {quote(q.id)}",
            "no judgment at grade >= 1, so it cannot score above 0 (no_positive_judgments)",
            "no_positive_judgments",
            q.id,
        )
        for q, has_positive in zip(golden.queries, flags, strict=True)
        if not q.expect_empty and not has_positive
    ]


# --------------------------------------------------------------------------------------------- dumping


def canonical_weight(value: float) -> int | float:
    """A weight as the canonical dump writes it: 2.0 as 2, 0.5 as 0.5."""
    if float(value).is_integer() and abs(value) < _MAX_INT_WEIGHT:
        return int(value)
    return float(value)


def _query_dict(q: GoldenQuery) -> dict[str, Any]:
    out: dict[str, Any] = {"id": q.id, "text": q.text}
    if q.locale is not None:
        out["locale"] = q.locale
    if q.filters:
        out["filters"] = {key: q.filters[key] for key in sorted(q.filters)}
    if q.stratum is not None:
        out["stratum"] = q.stratum
    if q.traffic_band is not None:
        out["traffic_band"] = q.traffic_band
    if q.failure_mode is not None:
        out["failure_mode"] = q.failure_mode
    if q.weight != 1:
        out["weight"] = canonical_weight(q.weight)
    if q.tier != "core":
        out["tier"] = q.tier
    if q.expect_empty:
        out["expect_empty"] = True
    if q.critical:
        out["critical"] = True
    if q.tags:
        out["tags"] = sorted(q.tags)
    out["judgments"] = [
        {"doc_id": j.doc_id, "grade": j.grade}
        | ({"key": j.key} if j.key is not None else {})
        | ({"source": j.source} if j.source is not None else {})
        for j in sorted(q.judgments, key=lambda j: natural_key(j.doc_id))
    ]
    return out


def _header_dict(golden: GoldenFile) -> dict[str, Any]:
    out: dict[str, Any] = {"version": golden.version, "k": golden.k}
    if golden.relevant_min_grade != default_relevant_min_grade(golden.scale):
        out["relevant_min_grade"] = golden.relevant_min_grade
    if golden.scale != Scale():
        out["scale"] = {"min": golden.scale.min, "max": golden.scale.max}
    if golden.rubric is not None:
        out["rubric"] = golden.rubric
    return out


def to_dict(golden: GoldenFile) -> dict[str, Any]:
    """The canonical JSON form as Python objects: fixed key order, defaults omitted, sorted queries.

    It does not validate (`dump_*` do): use `from_dict(to_dict(g))` to check a hand-built GoldenFile.
    """
    out = _header_dict(golden)
    out["queries"] = [_query_dict(q) for q in sorted(golden.queries, key=lambda q: natural_key(q.id))]
    return out


def _checked(golden: GoldenFile) -> dict[str, Any]:
    data = to_dict(golden)
    from_dict(data)  # refuses to write what could not be read back
    return data


_one_line = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False
).encode  # one instance: dumps() makes one a call


def _pretty(value: Any, level: int, *, inline_items: bool = False) -> str:
    """json.dumps(indent=2), except that an array of scalars (tags, a filter's values) stays on one line,
    and so does each item of an `inline_items` array (a judgment: a regrade is then a one-line diff)."""
    pad = "  " * (level + 1)
    end = "  " * level
    if isinstance(value, dict) and value:
        body = ",\n".join(
            f"{pad}{_one_line(key)}: {_pretty(item, level + 1, inline_items=key == 'judgments')}"
            for key, item in value.items()
        )
        return f"{{\n{body}\n{end}}}"
    if isinstance(value, list) and any(isinstance(item, dict | list) for item in value):
        render = _one_line if inline_items else (lambda item: _pretty(item, level + 1))
        body = ",\n".join(f"{pad}{render(item)}" for item in value)
        return f"[\n{body}\n{end}]"
    return _one_line(value)


def dump_json(golden: GoldenFile) -> bytes:
    """The canonical JSON form: 2-space indent, UTF-8, one line per judgment, trailing newline."""
    return (_pretty(_checked(golden), 0) + "\n").encode("utf-8")


def dump_jsonl(golden: GoldenFile) -> bytes:
    """The canonical JSONL form: the header line, then one query per line in id order."""
    data = _checked(golden)
    queries = data.pop("queries")
    lines = [_one_line(data), *(_one_line(q) for q in queries)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def dump(golden: GoldenFile, fmt: Format = "json") -> bytes:
    if fmt == "json":
        return dump_json(golden)
    if fmt == "jsonl":
        return dump_jsonl(golden)
    raise ValueError(f"unknown golden file format {fmt!r}: use 'json' or 'jsonl'")
