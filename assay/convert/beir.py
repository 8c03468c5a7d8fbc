"""A BEIR dataset folder: `queries.jsonl` (`{"_id", "text"}`), `qrels/<split>.tsv` (a header
`query-id corpus-id score`, then tab-separated rows) and, optionally, `corpus.jsonl`
(`{"_id", "title", "text"}`), whose documents are then given back in the documents import format of
docs/labeling.md (`id`, `title`, `body`; a document without a title is titled by its id, since the
documents import requires one). Written, the folder gets a corpus.jsonl when there are documents: those of
a documents import file (`--documents FILE`), or the corpus of a BEIR input."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay.convert.core import ConvertError, Draft, Problems, build, describe, read_text
from assay.convert.options import Converted, Options
from assay.documents import parse_documents
from assay.golden.model import GoldenFile
from assay.jsonin import JsonInputError, json_loads
from assay.problems import ImportReport

QRELS_HEADER = ("query-id", "corpus-id", "score")
DEFAULT_SPLIT = "test"


def _jsonl(path: Path, problems: Problems) -> list[tuple[int, dict[str, Any]]]:
    """(line, object) for every non-blank line; a line that is not an object is a problem."""
    text = read_text(path, problems)
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate((text or "").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json_loads(line)
        except JsonInputError as exc:
            detail = (
                f"invalid JSON at column {exc.column}: {exc.detail}" if exc.syntax else f"invalid JSON: {exc}"
            )
            problems.add(path, f"line {number}", detail)
            continue
        if not isinstance(value, dict):
            problems.add(path, f"line {number}", f"expected an object, got {describe(value)}")
            continue
        rows.append((number, value))
    return rows


def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _split(folder: Path, options: Options) -> Path:
    if options.split is not None:
        return folder / "qrels" / f"{options.split}.tsv"
    found = sorted(folder.glob("qrels/*.tsv"))
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConvertError([f"{folder}: no qrels/<split>.tsv file: not a BEIR dataset folder"])
    names = ", ".join(path.stem for path in found)
    raise ConvertError([f"{folder}: several qrels splits ({names}): --split NAME chooses one"])


def read_beir(folder: Path, options: Options) -> Converted:
    """The queries judged in the split, in the order the qrels first name them, with their texts from
    queries.jsonl; every document of corpus.jsonl when the folder has one."""
    if not folder.is_dir():
        raise ConvertError(
            [f"{folder}: not a folder: a BEIR dataset is a folder with queries.jsonl and qrels/"]
        )
    problems = Problems()
    qrels_path = _split(folder, options)
    queries_path = folder / "queries.jsonl"
    draft = Draft(qrels_path, problems)
    texts: dict[str, tuple[str, int]] = {}
    for number, row in _jsonl(queries_path, problems):
        qid, text = row.get("_id"), _text(row.get("text"))
        if not isinstance(qid, str) or not qid.strip():
            problems.add(queries_path, f"line {number}", f"_id: expected a query id, got {describe(qid)}")
        elif text is None:
            problems.add(queries_path, f"line {number}", "text: missing or empty")
        elif qid in texts:
            problems.add(queries_path, f"line {number}", f"_id {qid} again (first at line {texts[qid][1]})")
        else:
            texts[qid] = (text, number)
    qrels = read_text(qrels_path, problems)
    problems.check()
    assert qrels is not None
    rows = qrels.split("\n")
    header = tuple(cell.strip() for cell in rows[0].removesuffix("\r").split("\t"))
    if header != QRELS_HEADER:
        problems.add(qrels_path, "line 1", f"expected the header {'<TAB>'.join(QRELS_HEADER)}")
        problems.check()
    for number, line in enumerate(rows[1:], start=2):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split("\t")]
        place = f"line {number}"
        if len(cells) != len(QRELS_HEADER):
            problems.add(qrels_path, place, f"expected 3 tab-separated columns, got {len(cells)}")
            continue
        qid, doc_id, score = cells
        if qid not in texts:
            problems.add(qrels_path, place, f"query-id {qid} is not in {queries_path}")
            continue
        grade, problem = options.grades.read(score, "score")
        if problem is not None:
            problems.add(qrels_path, place, problem)
            continue
        assert grade is not None
        draft.judge(
            draft.query(qid, texts[qid][0], f"{queries_path} line {texts[qid][1]}"), doc_id, grade, place
        )
    documents = _corpus(folder / "corpus.jsonl", problems)
    golden = build(draft, version=options.version)
    problems.check()
    return Converted(golden, documents)


def _corpus(path: Path, problems: Problems) -> tuple[dict[str, Any], ...] | None:
    if not path.exists():
        return None
    documents: list[dict[str, Any]] = []
    first: dict[str, int] = {}
    for number, row in _jsonl(path, problems):
        doc_id = row.get("_id")
        if not isinstance(doc_id, str) or not doc_id.strip():
            problems.add(path, f"line {number}", f"_id: expected a document id, got {describe(doc_id)}")
            continue
        if (seen := first.setdefault(doc_id, number)) != number:
            problems.add(path, f"line {number}", f"_id {doc_id} again (first at line {seen})")
            continue
        title, body = row.get("title", ""), row.get("text", "")
        for name, value in (("title", title), ("text", body)):
            if not isinstance(value, str):
                problems.add(path, f"line {number}", f"{name}: expected text, got {describe(value)}")
        if isinstance(title, str) and isinstance(body, str):
            documents.append({"id": doc_id, "title": title.strip() or doc_id, "body": body})
    return tuple(documents)


def write_beir(golden: GoldenFile, folder: Path, options: Options) -> dict[Path, bytes]:
    """queries.jsonl and qrels/<split>.tsv (`--split`, default test) in the folder; corpus.jsonl too when
    there are documents (`options.corpus`): `{"_id", "title", "text"}`, the text a document's body (its
    snippet when it has none)."""
    split = options.split or DEFAULT_SPLIT
    queries = "".join(
        json.dumps({"_id": q.id, "text": q.text}, ensure_ascii=False) + "\n" for q in golden.queries
    )
    qrels = "\t".join(QRELS_HEADER) + "\n"
    qrels += "".join(f"{q.id}\t{j.doc_id}\t{j.grade}\n" for q in golden.queries for j in q.judgments)
    files = {
        folder / "queries.jsonl": queries.encode("utf-8"),
        folder / "qrels" / f"{split}.tsv": qrels.encode("utf-8"),
    }
    if options.corpus is not None:
        corpus = (
            {"_id": doc["id"], "title": doc["title"], "text": doc.get("body") or doc.get("snippet") or ""}
            for doc in options.corpus
        )
        files[folder / "corpus.jsonl"] = _jsonl_bytes(corpus)
    return files


def read_documents(path: Path) -> tuple[dict[str, Any], ...]:
    """The documents of a documents import file (docs/labeling.md), read as labeling's import reads them
    (assay.documents: the same problems in the same words, here naming the file); ConvertError."""
    problems = Problems()
    text = read_text(path, problems)
    problems.check()
    assert text is not None
    report = ImportReport(kind="documents", source=str(path))
    rows, _ = parse_documents(text, report)
    for problem in report.problems:
        problems.add(path, "" if problem.where == "file" else problem.where, problem.message)
    problems.check()
    return tuple(
        {"id": row["doc_id"], "title": row["title"], "body": row["body"], "snippet": row["snippet"]}
        for row in rows.values()
    )


def documents_jsonl(documents: tuple[dict[str, Any], ...]) -> bytes:
    """The documents import file (docs/labeling.md): one object a line."""
    return _jsonl_bytes(documents)


def _jsonl_bytes(rows: Iterable[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
