"""TREC qrels (`qid iter docno rel`, read and written by assay.golden.trec) with an optional topics file
(`qid<TAB>text`, one query a line) for the query texts; and the LTR training format, export only."""

from __future__ import annotations

from pathlib import Path

from assay.convert.core import Draft, Problems, build, read_text
from assay.convert.options import Converted, Options
from assay.golden.model import GoldenFile
from assay.golden.trec import TrecFormatError, read_qrels, write_qrels


def read_topics(path: Path, problems: Problems, data: bytes | None = None) -> dict[str, tuple[str, int]]:
    """qid -> (text, line) from `qid<TAB>text` lines (the file's, or `data`, which `path` only names)."""
    topics: dict[str, tuple[str, int]] = {}
    text = read_text(path, problems, data)
    if text is None:
        return topics
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        qid, tab, query = line.partition("\t")
        qid, query = qid.strip(), query.strip()
        if not tab or not qid or not query:
            problems.add(path, f"line {number}", "expected qid<TAB>text")
        elif qid in topics:
            problems.add(path, f"line {number}", f"qid {qid} again (first at line {topics[qid][1]})")
        else:
            topics[qid] = (query, number)
    return topics


def _qrels_lines(text: str) -> dict[tuple[str, str], int]:
    """(qid, docno) -> its line, to name the line of a grade that does not fit."""
    lines: dict[tuple[str, str], int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if len(fields) == 4:
            lines.setdefault((fields[0], fields[2]), number)
    return lines


def read_trec_qrels(path: Path, options: Options) -> Converted:
    """Without `--topics`, one query per qrels topic whose text is its qid; with it, exactly the topics'
    queries in the topics file's order (a topic without judgments gets none) and a judged qid without a
    text is a problem."""
    problems = Problems()
    draft = Draft(path, problems)
    text = read_text(path, problems, options.data)
    topics = (
        read_topics(options.topics, problems, options.topics_data) if options.topics is not None else None
    )
    problems.check()
    assert text is not None
    try:
        qrels = read_qrels(text)
    except TrecFormatError as exc:
        for found_problem in exc.problems:
            where, _, message = found_problem.partition(": ")
            problems.add(path, where, message)
        problems.check()
        raise
    lines = _qrels_lines(text)
    if topics is not None:
        assert options.topics is not None
        for qid, (text_of, number) in topics.items():
            draft.query(qid, text_of, f"{options.topics} line {number}")
    for qid, docs in qrels.items():
        for docno, raw in docs.items():
            place = f"line {lines.get((qid, docno), '?')}"
            found = draft.queries.get(qid)
            if found is None:
                if topics is not None:
                    problems.add(path, place, f"qid {qid} has no text in {options.topics}")
                    continue
                found = draft.query(qid, qid, place)
            grade, problem = options.grades.read(raw, "relevance")
            if problem is not None:
                problems.add(path, place, problem)
                continue
            assert grade is not None
            draft.judge(found, docno, grade, place)
    return Converted(build(draft, version=options.version))


def write_trec_qrels(golden: GoldenFile, path: Path, options: Options) -> dict[Path, bytes]:
    """The qrels; with `--topics FILE`, the query texts there too."""
    files = {path: write_qrels(golden).encode("utf-8")}
    if options.topics is not None:
        files[options.topics] = "".join(f"{q.id}\t{_one_line(q.text)}\n" for q in golden.queries).encode(
            "utf-8"
        )
    return files


def _one_line(text: str) -> str:
    # A topics line ends at a newline and splits at the first tab: a text holding either reads back changed.
    return " ".join(text.split())


def write_ltr(golden: GoldenFile, path: Path, options: Options) -> dict[Path, bytes]:
    """`rating qid:N # docid query`, the LTR training file's judgment list (RankLib, the Elasticsearch and
    OpenSearch LTR plugins): queries numbered 1, 2 ... in the golden file's order, features left to the
    tool that logs them."""
    lines = [
        f"{j.grade} qid:{number} # {j.doc_id} {_one_line(query.text)}\n"
        for number, query in enumerate(golden.queries, start=1)
        for j in query.judgments
    ]
    return {path: "".join(lines).encode("utf-8")}
