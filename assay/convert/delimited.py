"""`query,docid,rating` CSV: Quepid's basic ratings export and the Search Relevance Workbench's CSV
judgments. Queries are identified by their text (ids q-0001 ... in order of first appearance). Written
through the one CSV writer, formula starts guarded, and the guard taken off on reading (docs/cli.md,
"CSV cells")."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from assay.convert.core import Draft, Problems, build, read_text
from assay.convert.options import Converted, Options
from assay.golden.model import GoldenFile
from assay.problems import csv_text, spreadsheet_text

COLUMNS = ("query", "docid", "rating")


def read_ratings_csv(path: Path, options: Options) -> Converted:
    problems = Problems()
    draft = Draft(path, problems)
    text = read_text(path, problems, options.data)
    problems.check()
    assert text is not None
    rows = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(rows, None)
        if header is None or not any(cell.strip() for cell in header):
            problems.add(path, "", f"the file is empty: expected the header {','.join(COLUMNS)}")
            problems.check()
        assert header is not None
        names = [cell.strip().lower() for cell in header]
        if sorted(names) != sorted(COLUMNS):
            problems.add(
                path, "line 1", f"header {','.join(header)!r}: expected the columns {','.join(COLUMNS)}"
            )
            problems.check()
        at = {name: names.index(name) for name in COLUMNS}
        for row in rows:
            number = rows.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(COLUMNS):
                problems.add(path, f"line {number}", f"expected {len(COLUMNS)} columns, got {len(row)}")
                continue
            # A cell Assay's writer guarded against spreadsheet formulas reads as it was.
            query_text, doc_id, rating = (spreadsheet_text(row[at[name]]) for name in COLUMNS)
            place = f"line {number}"
            if not query_text.strip():
                problems.add(path, place, "query is empty")
                continue
            if not doc_id.strip():
                problems.add(path, place, "docid is empty")
                continue
            grade, problem = options.grades.read(rating)
            if problem is not None:
                problems.add(path, place, problem)
                continue
            assert grade is not None
            draft.judge(draft.query_by_text(query_text.strip(), place), doc_id.strip(), grade, place)
    except csv.Error as exc:
        problems.add(path, f"line {rows.line_num}", f"not readable as CSV: {exc}")
    return Converted(build(draft, version=options.version))


def write_ratings_csv(golden: GoldenFile, path: Path, options: Options) -> dict[Path, bytes]:
    """Through the one CSV writer (`assay.problems.csv_text`): a text or id that starts like a formula
    gets a leading `'`, which `read_ratings_csv` takes off again."""
    rows = ((q.text, j.doc_id, str(j.grade)) for q in golden.queries for j in q.judgments)
    return {path: csv_text(COLUMNS, rows, newline="\n").encode("utf-8")}
