"""The golden file's JSON Schema (draft 2020-12), for editors, CI jobs and other languages.

`assay.golden.format` is the authority: it also checks what a schema cannot say (unique ids, one judgment
per document, grades within an explicit scale, ...). docs/golden-format.md shows how to use both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("golden-file.schema.json")


def load_schema() -> dict[str, Any]:
    """The schema of the JSON form (a whole golden file)."""
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def line_schema(kind: str) -> dict[str, Any]:
    """A standalone schema for one JSONL line: `kind` is "header" (the first line) or "queryLine"."""
    schema = load_schema()
    if kind not in ("header", "queryLine"):
        raise ValueError(f"unknown JSONL line kind {kind!r}: use 'header' or 'queryLine'")
    return {"$schema": schema["$schema"], "$ref": f"#/$defs/{kind}", "$defs": schema["$defs"]}
