"""What a conversion is given besides its input, and what a reader gives back (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.convert.core import GradeReading
from assay.golden.model import GoldenFile


@dataclass(frozen=True, slots=True)
class Options:
    grades: GradeReading = field(default_factory=GradeReading)
    # The golden file's version (default: the one the input names, else "imported").
    version: str | None = None
    # trec-qrels: `qid<TAB>text` lines, read on import, written on export.
    topics: Path | None = None
    # The topics' bytes when they are not in a file (an upload): `topics` then only names them.
    topics_data: bytes | None = None
    # beir: the qrels split (`qrels/<split>.tsv`).
    split: str | None = None
    # beir export: a documents import file (docs/labeling.md) whose documents become corpus.jsonl.
    documents: Path | None = None
    # beir export: the documents corpus.jsonl is written from (`formats.convert` sets it: the documents
    # file's, or those a BEIR input held).
    corpus: tuple[dict[str, Any], ...] | None = None
    # The input's bytes when they are not in a file (an upload on the import page): the input path then
    # only names it in problems. For the formats of one file, and beir as a zip of its folder.
    data: bytes | None = None
    # beir from a zip: the most bytes its members may unpack to (None: no bound but memory), so that a
    # small upload cannot unpack to gigabytes.
    unzip_limit: int | None = None


@dataclass(frozen=True, slots=True)
class Converted:
    """A reader's result: the golden file and, when the input holds them (a BEIR corpus), its documents in
    the documents import format of docs/labeling.md (`id`, `title`, `body`)."""

    golden: GoldenFile
    documents: tuple[dict[str, Any], ...] | None = None
