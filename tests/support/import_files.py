"""Import files for the tests, built in memory: documents (JSONL) and golden files.

Shared by labeling's import tests (tests/labeling/test_imports.py) and golden_io's golden-file import
tests (tests/golden_io/test_golden_import.py), which import the documents first.
"""

from __future__ import annotations

import json
import re
from typing import Any


def jsonl(*rows: Any) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows).encode()


def doc(doc_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": doc_id,
        "key": f"https://help.example.com/{doc_id}",
        "title": f"Article {doc_id}",
        "url": f"https://help.example.com/{doc_id}",
        "snippet": "Short.",
        "body": "Long.",
        "fields": {"product": "billing", "locale": "en-US"},
        **extra,
    }


def keyed(doc_id: str, key: str, **extra: Any) -> dict[str, Any]:
    return doc(doc_id, key=f"https://help.example.com/{key}", url=f"https://help.example.com/{key}", **extra)


def golden_file(*queries: dict[str, Any], **top: Any) -> bytes:
    return json.dumps({"version": "2026-08-01", "k": 10, "queries": list(queries), **top}).encode()


def golden_query(qid: str, *judgments: tuple[str, int], **extra: Any) -> dict[str, Any]:
    return {
        "id": qid,
        "text": f"text of {qid}",
        "locale": "en-US",
        "filters": {"product": "billing"},
        "judgments": [{"doc_id": d, "grade": g} for d, g in judgments],
        **extra,
    }


_CONFIRM = re.compile(
    r'<form method="post" action="([^"]+/confirm/)">.*?name="digest" value="([0-9a-f]{64})"', re.S
)


def confirmed(client: Any, preview: Any) -> Any:
    """The golden import page answers an upload with a preview: confirm it as a reviewer would (its
    form's action and digest), and answer the confirmation's page; a preview without a confirmation
    (refused, or nothing to change) is answered as it is."""
    found = _CONFIRM.search(preview.content.decode())
    if found is None:
        return preview
    return client.post(found.group(1), {"digest": found.group(2)})
