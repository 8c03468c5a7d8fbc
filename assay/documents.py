"""The documents import format (docs/labeling.md, "Imports"), read (pure, no Django): JSONL, one object a
line, `id` and `title` required, `key`, `url`, `snippet`, `body` and `fields` optional.

One reader for its two users: labeling's documents import (`labeling.services.imports`), which then
checks every row against its columns and stores it, and `assay convert --to beir --documents FILE`
(assay.convert.beir), which writes the documents as a BEIR corpus. Both so refuse and accept the same
lines, with the same words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from assay.display import in_number
from assay.jsonin import JsonInputError, json_loads
from assay.problems import ImportReport

# The fields a line may hold, in the file's names; a row names the id `doc_id`, as the stored document does.
DOCUMENT_FIELDS = ("id", "key", "title", "url", "snippet", "body", "fields")

# Whether a read row can be kept as it is (labeling: whether its columns hold every value), reporting
# each reason it cannot under `where`.
RowCheck = Callable[[dict[str, Any], str, ImportReport], bool]


def parse_documents(
    text: str, report: ImportReport, check: RowCheck | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """The rows by id, in the file's order, and each id's line. Every problem goes to `report` (a line
    that is not an object of the format, a duplicate id or key naming both lines, a file without
    documents); the fields no document holds are noted there, counted."""
    rows: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
    key_lines: dict[str, tuple[int, str]] = {}
    ignored: Counter[str] = Counter()
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"line {line}"
        row = document_row(raw, where, report, ignored)
        if row is None or (check is not None and not check(row, where, report)):
            continue
        doc_id = row["doc_id"]
        if doc_id in lines:
            report.add(f"line {line}: id", f"duplicate id {doc_id!r} (first on line {lines[doc_id]})")
            continue
        if row["key"] is not None:
            if row["key"] in key_lines:
                first_line, first_id = key_lines[row["key"]]
                report.add(
                    f"line {line}: key",
                    f"duplicate key {row['key']!r} (also {first_id!r} on line {first_line})",
                )
                continue
            key_lines[row["key"]] = (line, doc_id)
        lines[doc_id] = line
        rows[doc_id] = row
    if not rows and report.ok:
        report.add("file", "no documents found")
    if len(report.problems) > 1 and _is_one_json_document(text):
        report.problems[:] = []
        report.add("file", "this is one JSON document; documents come as JSONL, one JSON object per line")
    if ignored:
        report.notes.append(
            f"ignored {in_number(len(ignored), 'field')}: "
            + ", ".join(f"{k} ({n}x)" for k, n in sorted(ignored.items()))
        )
    return rows, lines


def _is_one_json_document(text: str) -> bool:
    try:
        json_loads(text, max_depth=None)  # any depth: the question is only whether it is one document
    except JsonInputError:
        return False
    return True


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def document_row(raw: str, where: str, report: ImportReport, ignored: Counter[str]) -> dict[str, Any] | None:
    """One line as a row (`doc_id`, `key` or None, `title`, `url`, `snippet`, `body`, `fields`), or None
    and its problems in `report`; the names it does not know are counted in `ignored`."""
    try:
        obj = json_loads(raw)
    except JsonInputError as exc:
        report.add(where, f"malformed JSON at column {exc.column}: {exc.detail}" if exc.syntax else str(exc))
        return None
    if not isinstance(obj, dict):
        report.add(where, f"expected a JSON object, found {type(obj).__name__}")
        return None
    ok = True
    doc_id = obj.get("id")
    if _is_int(doc_id):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip():
        report.add(f"{where}: id", f"missing or empty id (found {obj.get('id')!r})")
        ok = False
    if not isinstance(obj.get("title"), str) or not obj["title"].strip():
        report.add(f"{where}: title", f"missing or empty title (found {obj.get('title')!r})")
        ok = False
    for name in ("url", "snippet", "body"):
        if obj.get(name) is not None and not isinstance(obj[name], str):
            report.add(f"{where}: {name}", f"expected text, found {type(obj[name]).__name__}")
            ok = False
    key = obj.get("key")
    if key is not None and (not isinstance(key, str) or not key.strip()):
        report.add(f"{where}: key", f"expected a non-empty text key or null, found {key!r}")
        ok = False
    fields = obj.get("fields", {})
    if not isinstance(fields, dict):
        report.add(f"{where}: fields", f"expected an object, found {type(fields).__name__}")
        ok = False
    ignored.update(k for k in obj if k not in DOCUMENT_FIELDS)
    if not ok:
        return None
    return {
        "doc_id": doc_id.strip(),  # type: ignore[union-attr]
        "key": key.strip() if isinstance(key, str) else None,
        "title": obj["title"].strip(),
        "url": obj.get("url") or "",
        "snippet": obj.get("snippet") or "",
        "body": obj.get("body") or "",
        "fields": fields,
    }
