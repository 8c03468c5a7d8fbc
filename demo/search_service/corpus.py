"""The corpus: documents read from JSONL, every bad line named.

Part of `demo.search_service` (its docstring has the contract and the query semantics).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from demo.search_service.base import CorpusError

# --------------------------------------------------------------------------------------------- corpus


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    title: str = ""
    body: str = ""
    key: str | None = None
    url: str | None = None
    snippet: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def check_field_value(value: object, where: str, problems: list[str]) -> None:
    if isinstance(value, list):
        for i, item in enumerate(value):
            if not _is_scalar(item):
                problems.append(f"{where}[{i}]: expected a string, number, boolean or null")
    elif not _is_scalar(value):
        problems.append(f"{where}: expected a string, number, boolean, null or a list of those")


def parse_document(obj: object, *, where: str = "document") -> Document:
    """One corpus record. Only `id` and one of `title`/`body` are required; ids may be JSON integers."""
    problems: list[str] = []
    if not isinstance(obj, dict):
        raise CorpusError([f"{where}: expected a JSON object"])
    raw_id = obj.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        problems.append(f"{where}: id: expected a string or an integer")
    elif isinstance(raw_id, str) and not raw_id.strip():
        problems.append(f"{where}: id: must not be empty")
    texts: dict[str, str | None] = {}
    for name in ("title", "body", "key", "url", "snippet"):
        value = obj.get(name)
        if value is not None and not isinstance(value, str):
            problems.append(f"{where}: {name}: expected a string")
            value = None
        texts[name] = value
    if not (texts["title"] or "").strip() and not (texts["body"] or "").strip():
        problems.append(f"{where}: needs a non-empty title or body")
    fields = obj.get("fields", {})
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        problems.append(f"{where}: fields: expected an object")
        fields = {}
    for name, value in fields.items():
        check_field_value(value, f"{where}: fields.{name}", problems)
    if problems:
        raise CorpusError(problems)
    return Document(
        id=str(raw_id),
        title=texts["title"] or "",
        body=texts["body"] or "",
        key=texts["key"],
        url=texts["url"],
        snippet=texts["snippet"],
        fields=dict(fields),
    )


def parse_corpus(lines: Iterable[str], *, source: str = "corpus") -> list[Document]:
    """Parse JSONL text; blank lines are skipped; every bad line and duplicate id is reported at once."""
    docs: list[Document] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg} at column {exc.colno})")
            continue
        try:
            doc = parse_document(obj, where=where)
        except CorpusError as exc:
            problems.extend(exc.problems)
            continue
        if doc.id in first_line:
            problems.append(f"{where}: id: {doc.id!r} already used on line {first_line[doc.id]}")
            continue
        first_line[doc.id] = number
        docs.append(doc)
    if problems:
        raise CorpusError(problems)
    if not docs:
        raise CorpusError([f"{source}: no documents"])
    return docs


def load_corpus(path: str | os.PathLike[str]) -> list[Document]:
    with open(path, encoding="utf-8") as handle:
        return parse_corpus(handle, source=str(path))
