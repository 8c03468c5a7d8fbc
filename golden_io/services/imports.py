"""The golden-file import: a golden file (or a foreign format, assay.convert) checked against the set,
its changes to the set's queries and frozen labels worked out and shown (the preview), written when
confirmed, recorded, and undone on request (docs/labeling.md, "Imports").

Two modes. **Merge** (the default) changes exactly the (query, document) pairs the file names: a label
is added or its grade changed, no other label moves; a query field the file's format cannot carry keeps
its value, and so does one it carries but leaves empty; queries the file does not name are untouched.
**Replace** makes the set's labels exactly the file's (every other label is removed, and the preview
says how many) and gives the queries it names every field its format carries, empty ones included.

An import is refused, whole, when the next freeze would refuse the set afterwards for a reason it did not
have before (the critical-query rule, the scale, documents): checked on the set as the changes would
leave it, built in memory (`freeze_refusals`), so the preview writes nothing and holds no lock. On the
web, a file past the page's limits is refused before it is even converted (`too_large`). The
confirmation reads, converts, plans and checks the same way outside any transaction, and builds there the
rows it writes; then one transaction writes them and, under the set's row lock, makes sure the set is as
the plan read it with those writes (`set_state`): on PostgreSQL the lock is taken only once the rows are
written (`golden_io.services.import_writing`). Part of `golden_io.services`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import orjson
from django.contrib.auth.models import User
from django.utils import timezone

from assay.golden.model import GoldenFile
from assay.golden.refusals import problems_added
from assay.problems import ImportReport
from golden_io import selectors
from golden_io.foreign import GOLDEN, JudgmentsFormat
from golden_io.models import GoldenImport
from golden_io.services.bulk import json_text
from golden_io.services.import_planning import (
    MERGE,
    ImportChanges,
    ImportPlan,
    file_checked,
    file_read,
    import_plan,
    set_state,
)
from golden_io.services.import_writing import Stale, import_rows, import_write, set_written, settings_write
from labeling.models import GoldenSet
from labeling.selectors import Unwritten

# A preview waits this long for its confirmation; an older one is discarded (its file dropped).
PREVIEW_HOURS = 24


def golden_import_check(
    *,
    golden_set: GoldenSet,
    data: bytes,
    source: str,
    web_limits: bool = False,
    fmt: JudgmentsFormat = GOLDEN,
) -> ImportReport:
    """Every problem the file has on its own and against the set, writing nothing: what the import page's
    CSV download lists (the page shows the first MAX_SHOWN)."""
    report, golden = file_read(
        golden_set=golden_set, data=data, source=source, web_limits=web_limits, fmt=fmt
    )
    if golden is not None:
        file_checked(golden_set=golden_set, golden=golden, report=report)
    return report


def freeze_refusals(
    golden_set: GoldenSet, unwritten: Unwritten, report: ImportReport, *, undo: bool = False
) -> None:
    """Add to `report` each reason the next freeze would refuse the set for once `unwritten` is written,
    that it would not refuse the set for now. Both are read as the freeze reads the set
    (`golden_io.selectors.working_golden_raw`), the changes in memory: nothing is written or locked. An
    `undo` that leaves the set no query (the undo of its first import) is not refused for that: the set
    had none before the import."""
    before = selectors.working_golden_raw(golden_set=golden_set)
    after = selectors.working_golden_raw(golden_set=golden_set, unwritten=unwritten)
    for problem in problems_added(before, after, empty_allowed=undo):
        report.add("set", f"the next freeze would refuse the set afterwards: {problem}", "freeze_refused")


def _report_changes(report: ImportReport, changes: ImportChanges) -> None:
    for name, n in changes.counts().items():
        report.count(name, n)
    if changes.empty:
        report.notes.append("The file would change nothing: nothing was written.")


def _planned(
    *,
    golden_set: GoldenSet,
    data: bytes,
    source: str,
    web_limits: bool,
    fmt: JudgmentsFormat,
    mode: str,
) -> tuple[ImportReport, GoldenFile | None, ImportPlan | None]:
    """The file read and planned against the set: the report, the file and the plan (None when the file
    has problems)."""
    report, golden = file_read(
        golden_set=golden_set, data=data, source=source, web_limits=web_limits, fmt=fmt
    )
    if golden is None:
        return report, None, None
    return (
        report,
        golden,
        import_plan(golden_set=golden_set, golden=golden, fmt=fmt, mode=mode, report=report, source=source),
    )


def golden_import_preview(
    *,
    golden_set: GoldenSet,
    data: bytes,
    source: str,
    by: User | None,
    web_limits: bool = False,
    fmt: JudgmentsFormat = GOLDEN,
    mode: str = MERGE,
) -> tuple[ImportReport, ImportChanges | None, GoldenImport | None]:
    """What the file would change, written nowhere and under no lock: the report (its problems, and
    refusals the changes would meet), the changes, and a previewed record holding the file for
    `golden_import_confirm` (None when the file has problems or would change nothing)."""
    _discard_stale(golden_set)
    report, _, plan = _planned(
        golden_set=golden_set, data=data, source=source, web_limits=web_limits, fmt=fmt, mode=mode
    )
    if plan is None:
        return report, None, None
    if not plan.changes.empty:
        freeze_refusals(golden_set, plan.unwritten(golden_set), report)
    _report_changes(report, plan.changes)
    if not report.ok or plan.changes.empty:
        return report, plan.changes, None
    record = GoldenImport.objects.create(
        golden_set=golden_set,
        mode=mode,
        source=source[:500],
        format=fmt.name,
        options=_options(fmt),
        data=data,
        topics_data=fmt.topics[1] if fmt.topics else b"",
        digest=plan.changes.digest(),
        counts=plan.changes.counts(),
        by=by,
    )
    return report, plan.changes, record


def _stale_preview(report: ImportReport) -> None:
    report.add(
        "",
        "the set changed since the preview, so the file would now change other things: nothing was "
        "written; preview it again",
        "stale_preview",
    )


def golden_import_confirm(
    *, record: GoldenImport, digest: str, web_limits: bool = False
) -> tuple[ImportReport, ImportChanges | None]:
    """Write a previewed import, if the file still makes exactly the changes previewed (`digest`); when the
    set changed meanwhile nothing is written and the report says so (preview again).

    The file is read, planned (its changes must still be the preview's: the digest) and checked against the
    next freeze before the transaction, as the preview did, and every row it writes is built; the
    transaction claims the record, writes the rows (`import_write`), then under the set's row lock reads
    the set again but for those rows and commits only if it is as the plan read it (`set_state`), with the
    set's own settings (`set_written`: on PostgreSQL the lock is taken after the writes)."""
    golden_set = record.golden_set
    fmt = format_of(record)
    report = ImportReport(kind="golden", source=record.source)
    if record.status != GoldenImport.Status.PREVIEWED:
        report.add("", f"this import was {record.get_status_display()} already: nothing was written", "stale")
        return report, None
    report, golden, plan = _planned(
        golden_set=golden_set,
        data=bytes(record.data),
        source=record.source,
        web_limits=web_limits,
        fmt=fmt,
        mode=record.mode,
    )
    if golden is None or plan is None:
        return report, None
    if plan.changes.digest() != digest or record.digest != digest:
        _stale_preview(report)
        return report, plan.changes
    freeze_refusals(golden_set, plan.unwritten(golden_set), report)
    if not report.ok:  # the set changed since the preview in a way that makes these changes refused
        return report, plan.changes
    rows = import_rows(golden_set, plan)

    def write(lock: Callable[[], None]) -> bool:
        # Claimed first: of two confirmations at once (a double click, two tabs) one writes.
        claimed = GoldenImport.objects.filter(pk=record.pk, status=GoldenImport.Status.PREVIEWED).update(
            status=GoldenImport.Status.APPLIED, applied=timezone.now(), data=b"", topics_data=b""
        )
        if not claimed:
            return False
        rows.undo["reopened"] = import_write(rows)
        GoldenImport.objects.filter(pk=record.pk).update(undo=json_text(orjson.dumps(rows.undo).decode()))
        lock()
        # Under the set's lock: the set must be what the plan read with these writes, or nothing is written.
        if set_state(golden_set, rows.skipped) != rows.state:
            raise Stale
        settings_write(golden_set, plan.set_values)
        return True

    try:
        claimed = set_written(golden_set, write)
    except Stale:
        _stale_preview(report)
        return report, plan.changes
    if not claimed:
        report.add("", "this import was confirmed or cancelled already: nothing more was written", "stale")
    else:
        _report_changes(report, plan.changes)
        if rows.undo["reopened"]:
            report.count("assignments of returning queries reopened", rows.undo["reopened"])
    record.refresh_from_db()
    return report, plan.changes


def golden_import(
    *,
    golden_set: GoldenSet,
    data: bytes,
    source: str,
    web_limits: bool = False,
    fmt: JudgmentsFormat = GOLDEN,
    mode: str = MERGE,
    by: User | None = None,
) -> ImportReport:
    """Preview and confirm at once (the demo's load, `import_golden --yes`): the report of what was
    written, or of why nothing was."""
    report, changes, record = golden_import_preview(
        golden_set=golden_set, data=data, source=source, by=by, web_limits=web_limits, fmt=fmt, mode=mode
    )
    if record is None:
        return report
    assert changes is not None
    written, _ = golden_import_confirm(record=record, digest=changes.digest(), web_limits=web_limits)
    return written


def format_of(record: GoldenImport) -> JudgmentsFormat:
    """The reading options a record was previewed with."""
    options = record.options or {}
    scale = options.get("scale")
    topics = options.get("topics")
    return JudgmentsFormat(
        name=record.format,
        scale=(float(scale[0]), float(scale[1])) if scale else None,
        mapping={float(raw): int(grade) for raw, grade in options.get("map", [])},
        topics=(topics, bytes(record.topics_data)) if topics else None,
    )


def _options(fmt: JudgmentsFormat) -> dict[str, Any]:
    return {
        "scale": list(fmt.scale) if fmt.scale else None,
        "map": [[raw, grade] for raw, grade in fmt.mapping.items()],
        "topics": fmt.topics[0] if fmt.topics else None,
    }


def _discard_stale(golden_set: GoldenSet) -> None:
    """Previews older than PREVIEW_HOURS are discarded and their files dropped."""
    cutoff = timezone.now() - dt.timedelta(hours=PREVIEW_HOURS)
    GoldenImport.objects.filter(
        golden_set=golden_set, status=GoldenImport.Status.PREVIEWED, created__lt=cutoff
    ).update(status=GoldenImport.Status.DISCARDED, data=b"", topics_data=b"")


def golden_import_discard(*, record: GoldenImport) -> None:
    """A preview cancelled: nothing was written, and its file is dropped."""
    GoldenImport.objects.filter(pk=record.pk, status=GoldenImport.Status.PREVIEWED).update(
        status=GoldenImport.Status.DISCARDED, data=b"", topics_data=b""
    )
