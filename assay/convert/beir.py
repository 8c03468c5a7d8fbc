"""A BEIR dataset folder: `queries.jsonl` (`{"_id", "text"}`), `qrels/<split>.tsv` (a header
`query-id corpus-id score`, then tab-separated rows) and, optionally, `corpus.jsonl`
(`{"_id", "title", "text"}`), whose documents are then given back in the documents import format of
docs/labeling.md (`id`, `title`, `body`; a document without a title is titled by its id, since the
documents import requires one). Written, the folder gets a corpus.jsonl when there are documents: those of
a documents import file (`--documents FILE`), or the corpus of a BEIR input."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay.convert.core import ConvertError, Draft, Problems, build, describe, read_text
from assay.convert.options import Converted, Options
from assay.convert.zipped import zip_members
from assay.documents import parse_documents
from assay.golden.model import GoldenFile
from assay.jsonin import JsonInputError, json_loads
from assay.problems import ImportReport

QRELS_HEADER = ("query-id", "corpus-id", "score")
DEFAULT_SPLIT = "test"


def _jsonl(path: Path, text: str | None, problems: Problems) -> list[tuple[int, dict[str, Any]]]:
    """(line, object) for every non-blank line of `text` (the file at `path`); a line that is not an
    object is a problem."""
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


_QRELS = re.compile(r"^qrels/([A-Za-z0-9_-]+)\.tsv$")


class _Dataset:
    """The files of a BEIR dataset: a folder's, or a zip's members (read into memory by
    assay.convert.zipped), each named in problems as the file at `base / name`."""

    def __init__(self, base: Path, members: dict[str, bytes] | None = None) -> None:
        self.base = base
        self.members = members

    def names(self) -> list[str]:
        if self.members is not None:
            return sorted(self.members)
        return sorted(p.relative_to(self.base).as_posix() for p in self.base.rglob("*") if p.is_file())

    def has(self, name: str) -> bool:
        return name in self.members if self.members is not None else (self.base / name).is_file()

    def text(self, name: str, problems: Problems) -> str | None:
        if self.members is not None and name not in self.members:
            problems.add(self.base / name, "", "no such file in the zip")
            return None
        data = self.members[name] if self.members is not None else None
        return read_text(self.base / name, problems, data)


def _wanted(name: str, *, corpus: bool) -> bool:
    return name == "queries.jsonl" or bool(_QRELS.match(name)) or (corpus and name == "corpus.jsonl")


def _split(dataset: _Dataset, options: Options) -> str:
    if options.split is not None:
        return f"qrels/{options.split}.tsv"
    found = [name for name in dataset.names() if _QRELS.match(name)]
    if len(found) == 1:
        return found[0]
    base = dataset.base
    if not found:
        raise ConvertError([f"{base}: no qrels/<split>.tsv file: not a BEIR dataset folder"])
    names = ", ".join(name.removeprefix("qrels/").removesuffix(".tsv") for name in found)
    raise ConvertError(
        [f"{base}: several qrels splits ({names}): --split NAME chooses one (an upload holds one split)"]
    )


def _dataset(path: Path, options: Options) -> _Dataset:
    """A folder, or a zip of one: an upload (`options.data`) always is, and is read without its corpus
    (the import page imports judgments; documents come through its documents form)."""
    upload = options.data is not None
    if upload or path.is_file():
        members = zip_members(
            path, options.data, lambda name: _wanted(name, corpus=not upload), limit=options.unzip_limit
        )
        return _Dataset(path, members)
    if not path.is_dir():
        raise ConvertError(
            [f"{path}: no such folder: a BEIR dataset is a folder with queries.jsonl and qrels/ (or a zip)"]
        )
    return _Dataset(path)


def read_beir(path: Path, options: Options) -> Converted:
    """The queries judged in the split, in the order the qrels first name them, with their texts from
    queries.jsonl; every document of corpus.jsonl when the folder has one."""
    dataset = _dataset(path, options)
    problems = Problems()
    split = _split(dataset, options)
    qrels_path, queries_path = path / split, path / "queries.jsonl"
    draft = Draft(qrels_path, problems)
    texts: dict[str, tuple[str, int]] = {}
    for number, row in _jsonl(queries_path, dataset.text("queries.jsonl", problems), problems):
        qid, text = row.get("_id"), _text(row.get("text"))
        if not isinstance(qid, str) or not qid.strip():
            problems.add(queries_path, f"line {number}", f"_id: expected a query id, got {describe(qid)}")
        elif text is None:
            problems.add(queries_path, f"line {number}", "text: missing or empty")
        elif qid in texts:
            problems.add(queries_path, f"line {number}", f"_id {qid} again (first at line {texts[qid][1]})")
        else:
            texts[qid] = (text, number)
    qrels = dataset.text(split, problems)
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
    documents = _corpus(dataset, problems) if dataset.has("corpus.jsonl") else None
    golden = build(draft, version=options.version)
    problems.check()
    return Converted(golden, documents)


def _corpus(dataset: _Dataset, problems: Problems) -> tuple[dict[str, Any], ...]:
    path = dataset.base / "corpus.jsonl"
    documents: list[dict[str, Any]] = []
    first: dict[str, int] = {}
    for number, row in _jsonl(path, dataset.text("corpus.jsonl", problems), problems):
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
