"""What every command reads: files given on the command line (bytes, UTF-8 text, bounded JSON) and the
golden file with its problems worded for the terminal. A missing, unreadable or invalid file is a
UsageError naming the option and the path (exit 2, one line)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from assay.artifacts import write_atomic
from assay.jsonin import MAX_DEPTH, JsonInputError, json_depth_over, json_loads
from assay.options import UsageError
from assay.problems import capped, more_text
from assay.problems import problems_csv as csv_of_problems

# Where `run` and `score` write the artifact unless told.
DEFAULT_OUT = "artifacts/relevance.json"


def read_bytes(path: str, what: str, limit: int = -1) -> bytes:
    """A file's bytes (the first `limit` only, when given); a missing, unreadable or directory path is a
    UsageError naming it."""
    try:
        with Path(path).open("rb") as handle:
            return handle.read(limit)
    except FileNotFoundError:
        raise UsageError(f"{what} {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path}: is a directory, expected a file") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: {exc.strerror or exc}") from None


def decode(raw: bytes, path: str, what: str) -> str:
    """UTF-8 text (a byte-order mark is dropped, so a JSONL file saved with one is still JSONL)."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        hint = " (it looks like UTF-16: save it as UTF-8)" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise UsageError(f"{what} {path}: not UTF-8 text (byte {exc.start}){hint}") from None


def read_text(path: str, what: str) -> str:
    """A file's UTF-8 text (`read_bytes`, `_decode`)."""
    return decode(read_bytes(path, what), path, what)


def read_json(path: str, what: str) -> Any:
    """A JSON file given to a command, bounded in depth like every user's JSON (`assay.jsonin`)."""
    text = read_text(path, what)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        # The standard module names the place (and reads what orjson refuses: NaN, huge integers).
        try:
            return json_loads(text)
        except JsonInputError as exc:
            raise UsageError(f"{what} {path}: {exc}") from None
    if json_depth_over(value, MAX_DEPTH):
        raise UsageError(f"{what} {path}: nested deeper than {MAX_DEPTH} levels of arrays or objects")
    return value


def load_golden(path: str, problems_csv: str | None = None) -> Any:
    """The golden file (a GoldenFile), or a UsageError listing its first MAX_SHOWN problems (with
    `problems_csv`, every problem is written there as CSV: where, message, code, query_id)."""
    return load_golden_columns(path, problems_csv).to_file()


def load_golden_columns(path: str, problems_csv: str | None = None, *, canonical: bool = True) -> Any:
    """`load_golden` as columns (`assay.golden.columns`): what `score` and `validate` read; `validate`
    only counts, so it takes them in the file's order (`canonical=False`)."""
    from assay.golden.format import GoldenFormatError, golden_warnings, parse_columns

    raw = read_bytes(path, "golden file")
    try:
        try:
            golden = parse_columns(raw, canonical=canonical)
        except GoldenFormatError:
            # The careful walk named the problems; the command's own words for a file that is not UTF-8.
            decode(raw, path, "golden file")
            raise
    except GoldenFormatError as exc:
        if problems_csv:
            write_problems_csv(problems_csv, exc.problems)
        count = len(exc.problems)
        if count <= _ONE_LINE_PROBLEMS:
            # A few problems read best on the error's one line; a longer list goes one problem a line.
            said = "; ".join(str(problem) for problem in exc.problems)
            raise UsageError(
                f"golden file {path}: {count} problem{'s' if count != 1 else ''}, nothing evaluated: {said}"
            ) from None
        lines = "\n".join(f"  {problem}" for problem in capped(exc.problems))
        more = more_text(len(exc.problems))
        if more:
            lines += f"\n  {more}" + (
                f"; every one is in {problems_csv}"
                if problems_csv
                else "; --problems-csv FILE writes every one"
            )
        raise UsageError(
            f"golden file {path}: {count} problem{'s' if count != 1 else ''}, nothing evaluated:\n{lines}"
        ) from None
    for warning in golden_warnings(golden):
        print(f"warning: golden file {path}: {warning}", file=sys.stderr)
    return golden


# Up to this many problems of a golden file are said on the error's one line.
_ONE_LINE_PROBLEMS = 3


def write_problems_csv(path: str, problems: Sequence[Any]) -> None:
    write_atomic(Path(path), csv_of_problems(problems).encode())
