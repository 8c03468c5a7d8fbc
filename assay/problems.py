"""What an import reports (pure, no Django): every problem with its place, and what was done.

One shape for every import (golden files, documents, query logs, run files) so the pages and the
management commands render them the same way. A report with problems means nothing was imported.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from assay.display import counted

# How many problems a page, a command's output or an error message lists: a 200,000-problem file gets the
# first MAX_SHOWN and the count of the rest, not a 25 MB page (`assay validate --problems-csv` writes all).
MAX_SHOWN = 1000


def more_text(total: int, shown: int = MAX_SHOWN) -> str:
    """ "... and 199,000 more (200,000 problems in all)"; "" when every problem is shown."""
    if total <= shown:
        return ""
    return f"... and {total - shown:,} more ({total:,} problems in all)"


def capped(problems: Sequence[Any], shown: int = MAX_SHOWN) -> list[Any]:
    return list(problems[:shown])


@dataclass(frozen=True, slots=True)
class Problem:
    where: str  # "line 12", "queries[3].judgments[1].grade", "header"
    message: str
    # For programs, as in the golden file's problems (assay.golden.fields.Problem): the rule that fired
    # and the query it is about; "" and None where an import does not say.
    code: str = ""
    query_id: str | None = None

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


@dataclass(slots=True)
class ImportReport:
    kind: str  # "golden", "documents", "query log", "run"
    source: str  # file name or URL
    problems: list[Problem] = field(default_factory=list)
    # Ordered facts for the report page: ("queries created", 12), ("emails stripped", 3)...
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # A few rows as read and as imported, (before, after): the query log's PII removal, shown once on
    # the report and never stored.
    samples: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def shown_problems(self) -> list[Problem]:
        """The problems a page lists: the first MAX_SHOWN."""
        return capped(self.problems)

    @property
    def more_problems(self) -> str:
        return more_text(len(self.problems))

    def add(self, where: str, message: str, code: str = "", query_id: str | None = None) -> None:
        self.problems.append(Problem(where, message, code, query_id))

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "source": self.source,
            "ok": self.ok,
            "problems": [{"where": p.where, "message": p.message} for p in self.problems],
            "counts": dict(self.counts),
            "notes": list(self.notes),
            "samples": [{"before": before, "after": after} for before, after in self.samples],
        }

    def render_text(self) -> str:
        head = f"{self.kind} import of {self.source}: " + (
            "ok" if self.ok else f"FAILED with {counted(len(self.problems), 'problem')}, nothing imported"
        )
        lines = [head]
        lines += [f"  problem: {p}" for p in self.shown_problems]
        if self.more_problems:
            lines.append(f"  {self.more_problems}")
        lines += [f"  {name}: {n}" for name, n in self.counts.items()]
        lines += [f"  note: {note}" for note in self.notes]
        lines += [f"  sample: {before!r} -> {after!r}" for before, after in self.samples]
        return "\n".join(lines)


class _CsvProblem(Protocol):
    @property
    def where(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def code(self) -> str: ...
    @property
    def query_id(self) -> str | None: ...


PROBLEMS_CSV_HEADER = ("where", "message", "code", "query_id")

# What a spreadsheet takes for the start of a formula (OWASP's list, "CSV Injection"), after any quotes
# the guard put there: a value that starts so gets one more quote, which `spreadsheet_text` takes off.
_GUARDED = re.compile(r"'*[=+\-@\t\r]")
_UNGUARD = re.compile(r"'+[=+\-@\t\r]")
# A plain decimal number: a spreadsheet reads it as the number, never as a formula, so it is left alone.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def spreadsheet_cell(value: str) -> str:
    """`value` for a CSV cell that a spreadsheet opens as text: a cell starting like a formula (`=`, `+`,
    `-`, `@`, tab or carriage return) gets a leading `'`, so `=HYPERLINK("http://...")` from a query id
    stays text rather than a live link or a command. Numbers (`-0.12`, `+3`) are left as they are. A value
    of quotes and then a formula start (`'=x`) gets one more too, so `spreadsheet_text` undoes exactly."""
    if _GUARDED.match(value) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def spreadsheet_text(cell: str) -> str:
    """The value `spreadsheet_cell` wrote as `cell`: one leading `'` off a cell of quotes and then a
    formula start. For Assay's own CSV formats read back (docs/cli.md, "CSV cells")."""
    return cell[1:] if _UNGUARD.match(cell) else cell


def csv_text(header: Sequence[str], rows: Iterable[Sequence[str]], *, newline: str = "\r\n") -> str:
    """A CSV document of `header` and `rows` of text, every cell through `spreadsheet_cell`, lines ended
    by `newline`: the one writer of every CSV that Assay serves or writes."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=newline)
    writer.writerow([spreadsheet_cell(cell) for cell in header])
    writer.writerows([spreadsheet_cell(cell) for cell in row] for row in rows)
    return out.getvalue()


def problems_csv(problems: Iterable[_CsvProblem]) -> str:
    """Every problem as CSV, one row each under PROBLEMS_CSV_HEADER: what `assay validate --problems-csv`
    writes and the golden import page's download answers (both list what a page or output caps). A cell
    that would start a spreadsheet formula starts with `'` (`spreadsheet_cell`)."""
    return csv_text(PROBLEMS_CSV_HEADER, ([p.where, p.message, p.code, p.query_id or ""] for p in problems))


def size_text(n: int) -> str:
    """A size in words: 50 MB, 2.5 MB, 63.2 MB; 900 bytes, 2,000 bytes (below a tenth of a MB)."""
    mb = 1024 * 1024
    return f"{n / mb:.1f}".removesuffix(".0") + " MB" if n >= mb // 10 else f"{n:,} bytes"


def decode_utf8(data: bytes, report: ImportReport) -> str | None:
    """UTF-8 text (a BOM is accepted), or None with a problem naming where the first bad byte is."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        report.add(
            f"line {line}",
            f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be decoded "
            "(save the file as UTF-8)",
        )
        return None
