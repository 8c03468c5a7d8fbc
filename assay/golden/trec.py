"""TREC qrels and run files, read and written the way trec_eval reads them (pure, no Django).

qrels: `qid iter docno rel`, one judgment a line. Run: `qid Q0 docno rank score tag [junk...]`; trec_eval
ignores the rank column and orders a topic's documents by score descending, ties by docno descending
(plain string comparison), so `read_run` reproduces exactly that order and nothing else.
Every problem in a file is collected and reported at once, each naming its line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from assay.golden.format import from_dict, natural_key, to_dict
from assay.golden.model import (
    DEFAULT_K,
    GoldenFile,
    GoldenQuery,
    Judgment,
    Scale,
    default_relevant_min_grade,
)


class TrecFormatError(ValueError):
    """Bad TREC input or output; `problems` lists every one found, each naming its place."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def _rows(text: str, columns: str, problems: list[str], *, extra: bool) -> Iterator[tuple[int, list[str]]]:
    """Non-blank lines split on whitespace, with 1-based line numbers; bad column counts become problems."""
    expected = len(columns.split())
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if fields and (len(fields) < expected or (len(fields) > expected and not extra)):
            least = "at least " if extra else ""
            problems.append(
                f"line {number}: expected {least}{expected} columns ({columns}), got {len(fields)}"
            )
        elif fields:
            yield number, fields


def _earlier(first_line: dict[tuple[str, str], int], key: tuple[str, str], number: int) -> int | None:
    """The line where `key` was first seen, when this line repeats it."""
    seen = first_line.setdefault(key, number)
    return seen if seen != number else None


def read_qrels(text: str) -> dict[str, dict[str, int]]:
    """qid -> {docno: grade}, topics and documents in file order. Negative grades are kept as read."""
    qrels: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    problems: list[str] = []
    for number, fields in _rows(text, "qid iter docno rel", problems, extra=False):
        qid, _iteration, docno, rel = fields
        try:
            grade = int(rel)
        except ValueError:
            problems.append(f"line {number}: relevance {rel!r} is not an integer")
            continue
        if earlier := _earlier(first_line, (qid, docno), number):
            problems.append(
                f"line {number}: duplicate judgment for qid {qid} docno {docno} (first at line {earlier})"
            )
            continue
        qrels.setdefault(qid, {})[docno] = grade
    if problems:
        raise TrecFormatError(problems)
    return qrels


def _check_token(what: str, value: str, where: str, problems: list[str]) -> None:
    # TREC files are whitespace-separated: an id with a space in it could not be read back.
    if not value or any(ch.isspace() for ch in value):
        problems.append(f"{where}: {what} {value!r} is empty or contains whitespace")


def write_qrels(golden: GoldenFile) -> str:
    """`qid 0 docno grade` lines, queries and documents in natural order, so equal goldens give equal text.

    A query without judgments has no line (qrels cannot say "judged nothing").
    """
    problems: list[str] = []
    lines: list[str] = []
    for query in sorted(golden.queries, key=lambda q: natural_key(q.id)):
        _check_token("query id", query.id, f"query {query.id!r}", problems)
        for judgment in sorted(query.judgments, key=lambda j: natural_key(j.doc_id)):
            _check_token("doc_id", judgment.doc_id, f"query {query.id!r}", problems)
            lines.append(f"{query.id} 0 {judgment.doc_id} {judgment.grade}\n")
    if problems:
        raise TrecFormatError(problems)
    return "".join(lines)


class TrecRun(Mapping[str, tuple[str, ...]]):
    """A run file in trec_eval's order: qid -> docnos, best first; topics in order of first appearance."""

    def __init__(self, ranked: Mapping[str, tuple[str, ...]], tags: tuple[str, ...] = ()) -> None:
        self._ranked = dict(ranked)
        self.tags = tags  # distinct run tags in order of appearance (usually one)

    def __getitem__(self, qid: str) -> tuple[str, ...]:
        return self._ranked[qid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ranked)

    def __len__(self) -> int:
        return len(self._ranked)

    def __repr__(self) -> str:
        return f"TrecRun({len(self)} topics, tags={self.tags!r})"


def _parse_score(raw: str) -> float | None:
    # float() also takes "1_000" and "nan"; trec_eval's atof would not sort either meaningfully.
    if "_" in raw:
        return None
    try:
        score = float(raw)
    except ValueError:
        return None
    return None if math.isnan(score) else score


def read_run(text: str) -> TrecRun:
    """Read a run file; per topic the docnos by score descending, ties by docno descending (as trec_eval).

    The rank column is ignored (trec_eval ignores it) and columns after the tag are tolerated.
    A large file in the plain shape (ASCII, one space between exactly six columns) is read by pyarrow's
    CSV reader; anything else, and any problem, takes the line-by-line reading below, which names it.
    """
    if len(text) >= _ARROW_MIN_CHARS:
        fast = _read_run_arrow(text)
        if fast is not None:
            return fast
    entries: dict[str, list[tuple[float, str]]] = {}
    first_line: dict[tuple[str, str], int] = {}
    tags: dict[str, None] = {}
    problems: list[str] = []
    for number, fields in _rows(text, "qid Q0 docno rank score tag", problems, extra=True):
        qid, _q0, docno, _rank, raw_score, tag = fields[:6]
        score = _parse_score(raw_score)
        if score is None:
            problems.append(f"line {number}: score {raw_score!r} is not a number")
            continue
        if earlier := _earlier(first_line, (qid, docno), number):
            problems.append(
                f"line {number}: docno {docno} appears twice in topic {qid} (first at line {earlier})"
            )
            continue
        entries.setdefault(qid, []).append((score, docno))
        tags.setdefault(tag)
    if problems:
        raise TrecFormatError(problems)
    ranked = {qid: tuple(docno for _, docno in sorted(docs, reverse=True)) for qid, docs in entries.items()}
    return TrecRun(ranked, tuple(tags))


# Below this the line-by-line reading is as quick as importing pyarrow.
_ARROW_MIN_CHARS = 1 << 20
# pyarrow's CSV reader on one thread, in large blocks: `assay score` decodes the golden file on the other
# core meanwhile, and the reader's own threads cost more in memory and page faults than they save here.
_BLOCK = 8 << 20
# Arrow reads a score as float() does, or refuses it (then the line-by-line reading names it): checked
# on "1_0", "0x10", "1e", ".5", "inf", "nan" and padded numbers in tests/assay/golden/test_trec.py.


@dataclass(frozen=True, slots=True, eq=False)
class RunTable:
    """A run file's rows in trec_eval's order, as columns: topic by topic (in order of first appearance),
    within a topic by score descending, ties by docno descending. Row r is document
    `docnos[doc[r]]` of topic `topics[topic[r]]`; topic t holds rows `bounds[t]:bounds[t + 1]`. The codes
    `topic` and `doc` are 32-bit (pyarrow's dictionary indices, maybe read-only): widen them before any
    arithmetic that could pass 2^31."""

    topics: list[str]
    topic: NDArray[np.int32]
    bounds: NDArray[np.int64]
    docnos: list[str]  # the distinct docnos
    doc: NDArray[np.int32]
    tags: tuple[str, ...]

    def ranked(self) -> TrecRun:
        """The run as a mapping, qid -> docnos best first (one str per distinct docno, shared)."""
        names = np.array(self.docnos, dtype=object)[self.doc].tolist()
        ends = self.bounds.tolist()
        return TrecRun(
            {
                qid: tuple(names[start:end])
                for qid, start, end in zip(self.topics, ends, ends[1:], strict=False)
            },
            self.tags,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled by the process `assay score` forks to read a run: the topic column follows from the bounds
        # (rows stand topic by topic) and the document codes go in the smallest type that holds them (16
        # bits for up to 65,536 distinct docnos), so an eighth to a quarter of the bytes cross.
        doc = self.doc.astype(np.min_scalar_type(max(len(self.docnos) - 1, 0)))
        return (_unpickled_run_table, (self.topics, self.bounds, self.docnos, doc, self.tags))


def _unpickled_run_table(
    topics: list[str], bounds: NDArray[np.int64], docnos: list[str], doc: NDArray[Any], tags: tuple[str, ...]
) -> RunTable:
    topic = np.repeat(np.arange(len(topics), dtype=np.int32), np.diff(bounds))
    return RunTable(topics, topic, bounds, docnos, doc.astype(np.int32), tags)


def _read_run_arrow(text: str) -> TrecRun | None:
    """`read_run` for a run file in the plain shape, columnar; None when the file is not in that shape or
    has any problem (the line-by-line reading then reports it)."""
    if not text.isascii():
        return None
    table = read_run_table(text.encode("ascii"))
    return None if table is None else table.ranked()


@cache
def arrow_available() -> bool:
    """Whether pyarrow is installed (the `fast` extra: docs/cli.md, "Install"). Without it every run file
    takes the line-by-line reading, which gives the same runs and the same problems, only slower."""
    from importlib.util import find_spec

    return find_spec("pyarrow") is not None


def read_run_table(source: bytes | str) -> RunTable | None:
    """A run file in the plain shape (printable ASCII, one space between exactly six columns), its bytes or
    its path, read by pyarrow's CSV reader into a `RunTable`; None when the file is not in that shape, has
    any problem (a docno twice in a topic, a score that is not a number), or pyarrow is not installed:
    `read_run`'s line-by-line reading then reads it, and names any problem."""
    if not arrow_available():
        return None
    import pyarrow as pa
    import pyarrow.csv as csv

    names = ["qid", "q0", "docno", "rank", "score", "tag"]
    words = pa.dictionary(pa.int32(), pa.string())  # each distinct value once, rows as codes
    # Q0 and rank only need checking, as bytes: a dictionary of them would hash every row for nothing.
    unread = ("q0", "rank")
    try:
        table = csv.read_csv(
            pa.py_buffer(source) if isinstance(source, bytes) else source,
            read_options=csv.ReadOptions(column_names=names, block_size=_BLOCK, use_threads=False),
            parse_options=csv.ParseOptions(delimiter=" ", quote_char=False, ignore_empty_lines=True),
            convert_options=csv.ConvertOptions(
                column_types={
                    **dict.fromkeys(names, words),
                    **dict.fromkeys(unread, pa.binary()),
                    "score": pa.float64(),
                },
                null_values=[],  # "nan", "NA", "null" are not missing values here but bad scores
                strings_can_be_null=False,
            ),
        ).unify_dictionaries()
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError):
        return None  # a row of another width, mostly: the line-by-line reading names its line
    if not table.num_rows:
        return None
    # The line-by-line reading splits on any whitespace: only printable ASCII without spaces reads the
    # same both ways (an empty value is two spaces, or one at either end of a line).
    if not all(_plain_bytes(chunk) for name in unread for chunk in table[name].chunks):
        return None
    qids, docs = (table[name].combine_chunks() for name in ("qid", "docno"))
    topics, docnos = qids.dictionary.to_pylist(), docs.dictionary.to_pylist()
    # Tags in order of first appearance: unified, every chunk holds the same dictionary.
    tags = tuple(table["tag"].chunk(0).dictionary.to_pylist())
    for values in (topics, docnos, tags):
        joined = "".join(values)
        if not (joined.isascii() and joined.isprintable()) or " " in joined or "" in values:
            return None
    topic = _numbers(qids.indices, np.int32)
    doc = _numbers(docs.indices, np.int32)
    score = _numbers(table["score"].combine_chunks(), np.float64) + 0.0  # -0.0 ties 0.0
    if np.isnan(score).any():
        return None
    del table
    # What the reader allocated goes back to the system now, not when the allocator gets round to it: the
    # rest of the command (or the process reading the run, `assay score`) needs no more of it.
    pa.default_memory_pool().release_unused()
    if not _in_trec_order(topic, score, doc, docnos):
        # numpy's sort, not pyarrow's: pyarrow.compute and pa.array of a list import pandas (0.5 s).
        by_name = np.empty(len(docnos), dtype=np.int64)
        by_name[sorted(range(len(docnos)), key=docnos.__getitem__)] = np.arange(len(docnos))
        order = np.lexsort((-by_name[doc], -score, topic))  # the last key first: topic, score, docno
        topic, doc = topic[order], doc[order]
    width = len(docs.dictionary)
    pairs = np.sort(topic.astype(np.int64) * width + doc)
    if (pairs[1:] == pairs[:-1]).any():
        return None  # a docno twice in a topic: reported with both lines
    counts = np.bincount(topic, minlength=len(qids.dictionary))
    bounds = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    return RunTable(topics, topic, bounds, docnos, doc, tags)


def _plain_bytes(array: Any) -> bool:
    """Whether every value of a pyarrow binary array is non-empty printable ASCII without a space."""
    if not len(array):
        return True
    _, offsets, data = array.buffers()
    ends = np.frombuffer(offsets, dtype=np.int32, count=len(array) + 1, offset=array.offset * 4)
    if bool((ends[1:] <= ends[:-1]).any()):
        return False  # an empty value
    chars = np.frombuffer(data, dtype=np.uint8)[ends[0] : ends[-1]]
    return bool(((chars > 0x20) & (chars < 0x7F)).all())


def _numbers(array: Any, dtype: type[np.generic]) -> NDArray[Any]:
    """A pyarrow array of numbers without nulls, viewed as numpy's (its `to_numpy` imports pandas)."""
    return np.frombuffer(
        array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * np.dtype(dtype).itemsize
    )


def _in_trec_order(
    topic: NDArray[np.int32], score: NDArray[np.float64], doc: NDArray[np.int32], docnos: list[str]
) -> bool:
    """Whether rows already stand in trec_eval's order (most run files are written that way): topics in
    order of first appearance, scores descending, ties by docno descending."""
    same = topic[1:] == topic[:-1]
    if (topic[1:] < topic[:-1]).any() or (same & (score[1:] > score[:-1])).any():
        return False
    tied = np.flatnonzero(same & (score[1:] == score[:-1])).tolist()
    return all(docnos[doc[i]] > docnos[doc[i + 1]] for i in tied)


def write_run(ranked: Mapping[str, Sequence[str]], tag: str = "assay") -> str:
    """Run file lines with ranks 1..n and strictly decreasing integer scores, so any reader gets this order.

    A topic with an empty list writes no line: read back, it is absent, which scores as returning nothing.
    """
    problems: list[str] = []
    _check_token("tag", tag, "run", problems)
    lines: list[str] = []
    for qid, docnos in ranked.items():
        _check_token("qid", qid, f"topic {qid!r}", problems)
        seen: dict[str, int] = {}
        total = len(docnos)
        for rank, docno in enumerate(docnos, start=1):
            where = f"topic {qid!r} rank {rank}"
            _check_token("docno", docno, where, problems)
            first = seen.setdefault(docno, rank)
            if first != rank:
                problems.append(
                    f"{where}: docno {docno!r} repeats rank {first} (a run file cannot hold it twice)"
                )
            lines.append(f"{qid} Q0 {docno} {rank} {total - rank + 1} {tag}\n")
    if problems:
        raise TrecFormatError(problems)
    return "".join(lines)


def golden_from_trec(
    qrels: Mapping[str, Mapping[str, int]],
    queries: Mapping[str, str] | None = None,
    *,
    version: str,
    k: int = DEFAULT_K,
    relevant_min_grade: int | None = None,
    scale: Scale | None = None,
    clamp_negative: bool = False,
) -> GoldenFile:
    """A golden file from qrels (and query texts, e.g. Cranfield's `queries.seqid.tsv`).

    With `queries`, the golden holds exactly those queries in that order (a query without judgments gets
    none) and a judged qid without a text is an error; without it, one query per qrels topic whose text is
    its id. Grades off the scale are errors; `clamp_negative=True` first turns negative grades into 0 (the
    usual reading of trec_eval's -1 "judged, not relevant"). The result goes through the golden file's
    own validation and canonical order (`from_dict`), so it dumps like any golden file; the relevance
    cutoff defaults to 2 kept inside the scale.
    """
    scale = scale or Scale()
    problems: list[str] = []
    texts: Mapping[str, str] = queries if queries is not None else {qid: qid for qid in qrels}
    for qid in qrels:
        if qid not in texts:
            problems.append(f"qrels qid {qid}: no query text for it")
    built: list[GoldenQuery] = []
    for qid, text in texts.items():
        judgments: list[Judgment] = []
        for docno, raw in qrels.get(qid, {}).items():
            grade = 0 if clamp_negative and raw < 0 else raw
            if grade not in scale:
                problems.append(f"qrels qid {qid} docno {docno}: grade {raw} is outside the scale {scale}")
            judgments.append(Judgment(doc_id=docno, grade=grade))
        built.append(GoldenQuery(id=qid, text=text, judgments=tuple(judgments)))
    if problems:
        raise TrecFormatError(problems)
    if relevant_min_grade is None:
        relevant_min_grade = default_relevant_min_grade(scale)
    return from_dict(
        to_dict(
            GoldenFile(
                version=version, queries=tuple(built), k=k, relevant_min_grade=relevant_min_grade, scale=scale
            )
        )
    )
