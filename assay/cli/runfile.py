"""A run file given to `assay score`, read into one typed `RunFile`: the columns of a large TREC run in
the plain shape (pyarrow, `assay.golden.trec.read_run_table`), or query id -> QueryResult for every
other run file (JSONL, or TREC read line by line, which names every problem). `beside` reads it while
the command decodes the golden file, in a forked process or on a thread."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import orjson

from assay.cli.files import decode, read_bytes
from assay.jsonin import MAX_DEPTH, JsonInputError, json_depth_over, json_loads
from assay.options import UsageError

if TYPE_CHECKING:
    from assay.golden.trec import RunTable
    from assay.results import QueryResult

T = TypeVar("T")


@dataclass(frozen=True)
class RunFile:
    """What `read_run_file` read: exactly one of `table` (the columns of a large TREC run) and `results`
    (query id -> QueryResult) is set. A forked reader sends it back pickled, so it holds plain data."""

    format: Literal["trec", "jsonl"]
    # A TREC run's tags (its sixth column, each distinct one in order); none for JSONL.
    tags: tuple[str, ...] = ()
    table: RunTable | None = None
    results: dict[str, QueryResult] = field(default_factory=dict)


_RESULT_FIELDS = ("query_id", "ids", "error", "titles")


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def read_results_jsonl(text: str) -> dict[str, QueryResult]:
    """`{"query_id", "ids": [...]}` per line (optionally `"error"` for a failed call, `"titles"`, ...):
    query id -> QueryResult. Every bad line is reported at once, each with its line number."""
    from assay.results import QueryResult

    results: dict[str, QueryResult] = {}
    first_line: dict[str, int] = {}
    problems: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            try:  # the standard module names the column (and reads what orjson refuses: NaN, ...)
                obj = json_loads(line)
            except JsonInputError as exc:
                syntax = f"invalid JSON at column {exc.column}: {exc.detail}"
                problems.append(f"{where}: {syntax if exc.syntax else exc}")
                continue
        if json_depth_over(obj, MAX_DEPTH):
            problems.append(f"{where}: nested deeper than {MAX_DEPTH} levels of arrays or objects")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: expected an object with query_id and ids")
            continue
        unknown = sorted(set(obj) - set(_RESULT_FIELDS))
        if unknown:
            problems.append(
                f"{where}: unknown field {', '.join(unknown)} (known: {', '.join(_RESULT_FIELDS)})"
            )
        qid = obj.get("query_id")
        if not _is_id(qid):
            problems.append(f"{where}: query_id: expected a string or integer")
            continue
        qid = str(qid)
        error = obj.get("error")
        if error is not None and not isinstance(error, str):
            problems.append(f"{where}: error: expected a string or null")
        ids = obj.get("ids", [] if error else None)
        if not isinstance(ids, list) or not all(_is_id(i) for i in ids):
            problems.append(f"{where}: ids: expected a list of string or integer ids")
            ids = []
        titles = obj.get("titles", [])
        if not isinstance(titles, list) or not all(isinstance(t, str) for t in titles):
            problems.append(f"{where}: titles: expected a list of strings")
            titles = []
        seen = first_line.setdefault(qid, number)
        if seen != number:
            problems.append(f"{where}: query_id {qid} appears twice (first at line {seen})")
            continue
        results[qid] = QueryResult(
            query_id=qid,
            ids=tuple(str(i) for i in ids),
            error=error if isinstance(error, str) else None,
            titles=tuple(titles),
        )
    if problems:
        raise UsageError("; ".join(problems))
    if not results:
        raise UsageError("no results in the file")
    return results


def _looks_like_jsonl(text: str) -> bool:
    """The first non-blank character opens an object (a TREC line starts with a query id)."""
    return text.lstrip().startswith("{")


def read_run_file(path: str) -> RunFile:
    """A run file: the columns of a TREC run in the plain shape, or query id -> QueryResult for every
    other run file (JSONL, or TREC read line by line, which names every problem)."""
    from assay.golden.trec import TrecFormatError, arrow_available, read_run, read_run_table
    from assay.results import QueryResult

    head = read_bytes(path, "run file", _COLUMNS_MIN_BYTES)
    if len(head) == _COLUMNS_MIN_BYTES and not _JSONL_START.match(head):
        # A large TREC run: pyarrow reads the file itself, in blocks, when it is in the plain shape.
        if not arrow_available():
            print(FAST_HINT, file=sys.stderr)
        table = read_run_table(path)
        if table is not None:
            return RunFile(format="trec", tags=table.tags, table=table)
    raw = head if len(head) < _COLUMNS_MIN_BYTES else read_bytes(path, "run file")
    if not raw or raw.isspace():
        raise UsageError(f"run file {path}: the file is empty")
    text = decode(raw, path, "run file")
    del raw  # the file's bytes: as large as everything read from it
    try:
        if _looks_like_jsonl(text):
            return RunFile(format="jsonl", results=read_results_jsonl(text))
        trec = read_run(text)
    except (UsageError, TrecFormatError) as exc:
        message = "; ".join(exc.problems) if isinstance(exc, TrecFormatError) else str(exc)
        raise UsageError(f"run file {path}: {message}") from None
    results = {qid: QueryResult(query_id=qid, ids=ids) for qid, ids in trec.items()}
    return RunFile(format="trec", tags=trec.tags, results=results)


# A run file this large is read as columns; below it, line by line is as quick as importing pyarrow.
_COLUMNS_MIN_BYTES = 1 << 20
# Said (not an error) when a large TREC run is read line by line for want of pyarrow, the `fast` extra
# (docs/cli.md, "Install": what it costs and what it buys).
FAST_HINT = (
    "hint: with pyarrow a run file this large is scored about 3 times faster in a third of the memory: "
    """pip install 'assay[fast]' (docs/cli.md, "Install")"""
)
# A JSONL run file opens an object (after a byte-order mark and blanks); a TREC line opens a query id.
_JSONL_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*\{")


@contextmanager
def beside(read: Callable[[str], T], path: str) -> Iterator[Callable[[], T]]:
    """`read(path)` done beside the block; the block calls what this yields for the result (or `read`'s
    exception). A large file is read by a forked process: decoding the golden file holds the GIL, so a
    thread would mostly wait for it. A smaller one, or any file where the platform cannot fork, is read
    by a thread: a forked process would first import what the thread shares. So is any file when this
    process already runs another thread (`assay` called in-process by a threaded program)."""
    import multiprocessing
    import threading

    try:
        large = os.path.getsize(path) >= FORK_MIN_BYTES
    except OSError:
        large = False  # `read` names what is wrong with the path
    # Forking while another thread runs may copy a lock it holds (the child then waits forever): only a
    # process of one thread forks, as `assay` started from the shell is here.
    alone = threading.active_count() == 1
    if not (large and alone) or "fork" not in multiprocessing.get_all_start_methods():
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as threads:
            yield threads.submit(read, path).result
        return
    # The pool forks its process before it starts its own threads, and no thread of ours is running.
    # Leaving the block ends the process, still reading if the block failed (a bad golden file).
    with multiprocessing.get_context("fork").Pool(1) as pool:
        yield pool.apply_async(read, (path,)).get


# From this size a run file is read by a forked process (at 6 MB, 2,000 queries x 100, the fork and its
# own imports cost about 0.1 s more than they save; at 60 MB, 20,000 queries, reading both files took
# 0.87-0.92 s forked against 1.35-1.40 s on a thread).
FORK_MIN_BYTES = 16 << 20
