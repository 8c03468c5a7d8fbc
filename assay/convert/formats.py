"""The one table of judgment formats `assay convert` reads and writes: each format's name, its reader
and writer, and what it cannot carry (docs/cli.md's table of losses is this table's `loses`).

Readers and writers are named, not imported: the command line builds its choices from this table on
every start, and the golden file's parser (numpy, msgspec) loads only when a conversion runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from assay.golden.fields import QUERY_FIELDS as GOLDEN_QUERY_FIELDS

if TYPE_CHECKING:
    from assay.convert.options import Converted, Options
    from assay.golden.model import GoldenFile

Reader = Callable[[Path, "Options"], "Converted"]
Writer = Callable[["GoldenFile", Path, "Options"], dict[Path, bytes]]


def _load(name: str) -> Callable[..., object]:
    module, _, function = name.partition(":")
    return cast(
        "Callable[..., object]", getattr(importlib.import_module(f"assay.convert.{module}"), function)
    )


# What a golden file holds beyond queries' texts and graded judgments, lost by every foreign format.
_HEADER = "version, k, relevant_min_grade, scale, rubric"
_QUERY = "locale, traffic_band, failure_mode, weight, tier, expect_empty, critical, tags"
_JUDGMENT = "judgment keys and sources"

# A golden query's fields (assay.golden.model.GoldenQuery) besides its id and judgments, in the file's
# order: what an import may change on a query of the set. A format `carries` those it can hold; the rest
# it cannot, and an import keeps the set's values (docs/labeling.md, "Imports").
QUERY_FIELDS = tuple(name for name in GOLDEN_QUERY_FIELDS if name not in ("id", "judgments"))


@dataclass(frozen=True, slots=True)
class JudgmentFormat:
    name: str
    summary: str
    reader: str | None  # "module:function" in assay.convert; None: export only
    writer: str
    folder: bool = False  # the input or output is a folder
    # What the format cannot carry from a golden file (docs/cli.md, "What each format keeps").
    loses: str = ""
    # Whether format -> golden -> format gives the same bytes (for a file in the canonical order).
    lossless: bool = False
    # Whether the format names queries by their text alone (their ids are made up: q-0001 ...).
    by_text: bool = False
    # The query fields (QUERY_FIELDS) it holds; every other one is in `loses`.
    carries: tuple[str, ...] = ("text",)

    @property
    def read(self) -> Reader | None:
        return None if self.reader is None else cast("Reader", _load(self.reader))

    @property
    def write(self) -> Writer:
        return cast("Writer", _load(self.writer))


FORMATS: dict[str, JudgmentFormat] = {
    f.name: f
    for f in (
        JudgmentFormat(
            "golden",
            "Assay's golden file, JSON (docs/golden-format.md)",
            "golden:read_golden",
            "golden:write_golden",
            loses="nothing",
            lossless=True,
            carries=QUERY_FIELDS,
        ),
        JudgmentFormat(
            "golden-jsonl",
            "Assay's golden file, JSONL: a header line, then one query a line",
            "golden:read_golden",
            "golden:write_golden_jsonl",
            loses="nothing",
            lossless=True,
            carries=QUERY_FIELDS,
        ),
        JudgmentFormat(
            "quepid-csv",
            "Quepid's basic ratings CSV, header `query,docid,rating`",
            "delimited:read_ratings_csv",
            "delimited:write_ratings_csv",
            loses=f"query ids, queries without judgments, filters, stratum, {_QUERY}; {_HEADER}; {_JUDGMENT}",
            lossless=True,
            by_text=True,
        ),
        JudgmentFormat(
            "srw-csv",
            "OpenSearch Search Relevance Workbench judgments CSV, `query,docid,rating`",
            "delimited:read_ratings_csv",
            "delimited:write_ratings_csv",
            loses=f"query ids, queries without judgments, filters, stratum, {_QUERY}; {_HEADER}; {_JUDGMENT}",
            lossless=True,
            by_text=True,
        ),
        JudgmentFormat(
            "srw-json",
            "OpenSearch Search Relevance Workbench `IMPORT_JUDGMENT` body",
            "srw:read_srw_json",
            "srw:write_srw_json",
            loses=f"query ids, filters, stratum, {_QUERY}; {_HEADER.removeprefix('version, ')} (the version "
            "is the name); " + _JUDGMENT,
            lossless=True,
            by_text=True,
        ),
        JudgmentFormat(
            "rre",
            "Rated Ranking Evaluator ratings JSON (topics, query groups, or queries at the top level as "
            "Quepid exports them; both `relevant_documents` shapes)",
            "rre:read_rre",
            "rre:write_rre",
            loses=f"query ids (a group is named by it, read back as q-0001 ...), {_QUERY}; {_HEADER}; "
            f"{_JUDGMENT}; on import, query group names and templates",
            by_text=True,
            carries=("text", "filters", "stratum"),
        ),
        JudgmentFormat(
            "trec-qrels",
            "TREC qrels, `qid iter docno rel`; `--topics FILE` holds `qid<TAB>text`",
            "trec:read_trec_qrels",
            "trec:write_trec_qrels",
            loses=f"query texts and queries without judgments (unless `--topics`), filters, stratum, "
            f"{_QUERY}; {_HEADER}; {_JUDGMENT}",
        ),
        JudgmentFormat(
            "beir",
            "a BEIR dataset folder (or a zip of it): `queries.jsonl`, `qrels/<split>.tsv`, optional "
            "`corpus.jsonl`",
            "beir:read_beir",
            "beir:write_beir",
            folder=True,
            loses=f"queries without judgments, filters, stratum, {_QUERY}; {_HEADER}; {_JUDGMENT}",
        ),
        JudgmentFormat(
            "ltr",
            "LTR training judgments, `rating qid:N # docid query`",
            None,
            "trec:write_ltr",
            loses=f"query ids (numbered 1, 2 ...), queries without judgments, filters, stratum, {_QUERY}; "
            f"{_HEADER}; {_JUDGMENT}",
        ),
    )
}


def convert(
    source: str, target: str, input_path: Path, output: Path, options: Options
) -> tuple[Converted, dict[Path, bytes]]:
    """Read `input_path` as `source` and render it as `target` at `output`: the golden file read and every
    file to write (path -> bytes), for the caller to write, all or nothing. Raises ConvertError."""
    from assay.convert.core import ConvertError

    read = FORMATS[source].read
    if read is None:
        raise ConvertError([f"--from {source}: {source} is export only"])
    converted = read(input_path, options)
    if target == "beir":
        from assay.convert.beir import read_documents

        corpus = converted.documents if options.documents is None else read_documents(options.documents)
        options = replace(options, corpus=corpus)
    return converted, FORMATS[target].write(converted.golden, output, options)


def formats_table() -> str:
    """The Markdown table of formats in docs/cli.md ("`assay convert`"), made from this table, so the
    docs cannot drift from it (tests/assay/convert/test_formats_table.py holds them equal)."""
    rows = ["| format | what it is | read | cannot carry |", "| --- | --- | --- | --- |"]
    for f in FORMATS.values():
        direction = "export only" if f.reader is None else "read and written"
        rows.append(f"| `{f.name}` | {f.summary} | {direction} | {f.loses} |")
    return "\n".join(rows) + "\n"


# Assay's own forms: their grades are grades already (no --scale or --map), and an import takes their k,
# cutoff and scale as the file gives them.
GOLDEN_FORMATS = ("golden", "golden-jsonl")


def upload_formats() -> list[JudgmentFormat]:
    """The formats the import page takes: every one that is read, a folder as a zip of it."""
    return [f for f in FORMATS.values() if f.reader is not None]
