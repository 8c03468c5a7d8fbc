"""The golden-file import: a golden file (or a foreign format, assay.convert) checked against the set,
its changes to the set's queries and frozen labels worked out and shown (the preview), written when
confirmed, recorded, and undone on request (docs/labeling.md, "Imports").

Two modes. **Merge** (the default) changes exactly the (query, document) pairs the file names: a label
is added or its grade changed, no other label moves; a query field the file's format cannot carry keeps
its value, and so does one it carries but leaves empty; queries the file does not name are untouched.
**Replace** makes the set's labels exactly the file's (every other label is removed, and the preview
says how many) and gives the queries it names every field its format carries, empty ones included.

Every write runs in one transaction under the set's row lock and is refused, whole, when the next
freeze would refuse the set afterwards for a reason it did not have before (the critical-query rule,
the scale, documents): the preview says so before anything is written. The file is converted and the
changes planned before that transaction, outside it; on the web, a file past the page's limits is refused
before even that (`too_large`). Part of `golden_io.services`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from assay.convert.formats import FORMATS, GOLDEN_FORMATS, QUERY_FIELDS
from assay.convert.sizes import measure
from assay.golden.format import GoldenFormatError, parse
from assay.golden.model import GoldenFile, GoldenQuery
from assay.problems import ImportReport
from golden_io import selectors
from golden_io.foreign import GOLDEN, JudgmentsFormat, golden_from_format
from golden_io.models import GoldenImport
from labeling.models import (
    Candidate,
    Document,
    FrozenLabel,
    GoldenSet,
    Query,
    TierMove,
)
from labeling.selectors.labels import HUMAN
from labeling.services import retired_work_reopen
from labeling.services.pools import JUDGED_SYSTEM, PoolEntry, pool_merge

MERGE = GoldenImport.Mode.MERGE.value
REPLACE = GoldenImport.Mode.REPLACE.value
# A preview waits this long for its confirmation; an older one is discarded (its file dropped).
PREVIEW_HOURS = 24

# A query field's value in the database when the file leaves it empty (the golden file's defaults).
_EMPTY: dict[str, Any] = {
    "text": "",
    "locale": "",
    "filters": {},
    "stratum": "",
    "traffic_band": "",
    "failure_mode": "",
    "weight": 1.0,
    "tier": Query.Tier.CORE.value,
    "expect_empty": False,
    "critical": False,
    "tags": [],
}
assert tuple(_EMPTY) == QUERY_FIELDS


def _stored(q: GoldenQuery) -> dict[str, Any]:
    """A golden query's fields as the Query row stores them."""
    return {
        "text": q.text,
        "locale": q.locale or "",
        "filters": dict(q.filters),
        "stratum": q.stratum or "",
        "traffic_band": q.traffic_band or "",
        "failure_mode": q.failure_mode or "",
        "weight": q.weight,
        "tier": q.tier,
        "expect_empty": q.expect_empty,
        "critical": q.critical,
        "tags": list(q.tags),
    }


# ------------------------------------------------------------------------------------------ changes


@dataclass(frozen=True, slots=True)
class LabelChange:
    """One frozen label added (old None), regraded, or removed (new None)."""

    query_id: str
    doc_id: str
    old: int | None
    new: int | None
    old_source: str = ""
    new_source: str = ""

    @property
    def kind(self) -> str:
        return "added" if self.old is None else "removed" if self.new is None else "changed"


@dataclass(frozen=True, slots=True)
class FieldChange:
    """A query's field (or, with `query_id` "", the set's own: k, relevant_min_grade, frozen_version)."""

    query_id: str
    field: str
    old: Any
    new: Any


@dataclass(slots=True)
class ImportChanges:
    """What an import (or its undo) changes, each listed: what the preview shows and counts."""

    labels: list[LabelChange] = field(default_factory=list)
    queries_created: list[tuple[str, str]] = field(default_factory=list)  # (id, text)
    queries_removed: list[str] = field(default_factory=list)  # an undo's: queries the import created
    fields: list[FieldChange] = field(default_factory=list)
    keys: list[tuple[str, str]] = field(default_factory=list)  # (doc id, key) set on a document without
    pools: list[tuple[str, str]] = field(default_factory=list)  # (query id, doc id) joining a pool

    @property
    def empty(self) -> bool:
        return not (self.labels or self.queries_created or self.queries_removed or self.fields or self.keys)

    def labels_of(self, kind: str) -> list[LabelChange]:
        return [c for c in self.labels if c.kind == kind]

    @property
    def query_fields(self) -> list[FieldChange]:
        return [c for c in self.fields if c.query_id]

    @property
    def set_fields(self) -> list[FieldChange]:
        return [c for c in self.fields if not c.query_id]

    def counts(self) -> dict[str, int]:
        """The preview's figures, in its words (every one shown, zeros too, so nothing hides)."""
        return {
            "labels added": len(self.labels_of("added")),
            "labels changed": len(self.labels_of("changed")),
            "labels removed": len(self.labels_of("removed")),
            "queries created": len(self.queries_created),
            "queries removed": len(self.queries_removed),
            "query fields changed": len(self.query_fields),
            "set settings changed": len(self.set_fields),
            "document keys set": len(self.keys),
            "documents joining pools": len(self.pools),
        }

    def digest(self) -> str:
        """Names exactly these changes: a confirmation writes only if the file still makes them."""
        body = json.dumps(
            [
                [list(map(_plain, (c.query_id, c.doc_id, c.old, c.new, c.new_source))) for c in self.labels],
                self.queries_created,
                self.queries_removed,
                [[c.query_id, c.field, _plain(c.old), _plain(c.new)] for c in self.fields],
                self.keys,
                self.pools,
            ],
            sort_keys=True,
        )
        return hashlib.sha256(body.encode()).hexdigest()


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, str | int | float | bool | list | dict) else str(value)


# ------------------------------------------------------------------------------------------ the plan


@dataclass(slots=True)
class _Plan:
    """A checked file's changes and what writing them needs."""

    golden: GoldenFile
    mode: str
    changes: ImportChanges
    documents: dict[str, Document]
    queries: dict[str, Query]  # the set's queries by id
    created: dict[str, dict[str, Any]]  # new query id -> its stored fields
    updates: dict[str, dict[str, Any]]  # query id -> field -> new value
    # (query id, doc id) -> (grade, source) to write, or None to remove
    writes: dict[tuple[str, str], tuple[int, str] | None]
    existing: dict[tuple[str, str], FrozenLabel]
    set_values: dict[str, Any]
    integrity: list[str] = field(default_factory=list)  # the problems the set had before


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
    return _golden_read(golden_set=golden_set, data=data, source=source, web_limits=web_limits, fmt=fmt)[0]


def too_large(*, golden_set: GoldenSet, data: bytes, fmt: JudgmentsFormat) -> tuple[str, str, str] | None:
    """Why a file uploaded on the web is refused for its size alone, as (where, message, code), or None:
    decided by counting its queries and judgments (`assay.convert.sizes`, which stops once past a limit)
    before anything converts or checks it, so that a file a web request could not check in time is
    refused at once, in any format."""
    size = measure(
        fmt.name,
        data,
        max_queries=settings.ASSAY_WEB_GOLDEN_MAX_QUERIES,
        max_judgments=settings.ASSAY_WEB_GOLDEN_MAX_JUDGMENTS,
        topics_data=fmt.topics[1] if fmt.topics else None,
        unzip_limit=settings.ASSAY_MAX_UPLOAD_BYTES,
    )
    command = f"python manage.py import_golden {golden_set.slug} <file>"
    if fmt.name not in GOLDEN_FORMATS:
        command += f" --from {fmt.name}" + (" --topics <topics file>" if fmt.topics else "")
    for what, counted, setting in (
        ("queries", size.queries, "ASSAY_WEB_GOLDEN_MAX_QUERIES"),
        ("judgments", size.judgments, "ASSAY_WEB_GOLDEN_MAX_JUDGMENTS"),
    ):
        most = getattr(settings, setting)
        if counted > most:
            message = (
                f"the file holds more than {most:,} {what}; a file uploaded here may hold at most "
                f"{most:,} ({setting}), so that it is checked and written within one web request. "
                f"Import it on the server with: {command}"
            )
            return what, message, f"too_many_{what}"
    return None


def _golden_read(
    *,
    golden_set: GoldenSet,
    data: bytes,
    source: str,
    web_limits: bool,
    fmt: JudgmentsFormat,
) -> tuple[ImportReport, GoldenFile | None, dict[str, Document], dict[str, str]]:
    """The file against the format and against the set (scale, rubric, locales, documents, keys): the
    report, and when there is no problem the golden file, the set's documents by id and the keys to set
    on documents that have none. Reads only. A file in another format is converted first."""
    report = ImportReport(kind="golden", source=source)
    nothing: tuple[ImportReport, None, dict[str, Document], dict[str, str]] = (report, None, {}, {})
    if web_limits:
        refused = too_large(golden_set=golden_set, data=data, fmt=fmt)
        if refused:
            report.add(*refused)
            return nothing
    if fmt.name not in GOLDEN_FORMATS:  # parse reads both golden forms
        converted = golden_from_format(
            golden_set=golden_set, data=data, source=source, fmt=fmt, report=report
        )
        if converted is None:
            return nothing
        data = converted
    try:
        golden = parse(data)
    except GoldenFormatError as exc:
        for problem in exc.problems:
            report.add(problem.where, problem.message, problem.code, problem.query_id)
        return nothing
    rubric = golden_set.rubric
    if (golden.scale.min, golden.scale.max) != (rubric.scale_min, rubric.scale_max):
        report.add(
            "scale",
            f"the file's scale {golden.scale} differs from rubric {rubric}'s scale "
            f"{rubric.scale_min}..{rubric.scale_max}",
            "scale_mismatch",
        )
    if golden.rubric and golden.rubric != str(rubric):
        report.add(
            "rubric",
            f"the file was judged with rubric {golden.rubric}, this golden set uses {rubric}",
            "rubric_mismatch",
        )
    documents = {d.doc_id: d for d in golden_set.documents.all()}
    key_owners = {d.key: d.doc_id for d in documents.values() if d.key}
    new_keys: dict[str, str] = {}
    for i, q in enumerate(golden.queries):
        if q.locale and not golden_set.in_scope(q.locale):
            report.add(
                f"queries[{i}].locale",
                f"query {q.id}: locale {q.locale} is outside the golden set's scope "
                f"({', '.join(golden_set.locales)})",
                "locale_out_of_scope",
                q.id,
            )
        for j, judgment in enumerate(q.judgments):
            doc = documents.get(judgment.doc_id)
            where = f"queries[{i}].judgments[{j}]"
            if doc is None:
                report.add(
                    f"{where}.doc_id",
                    f"query {q.id}: {judgment.doc_id} is not a document of golden set {golden_set.slug} "
                    "(import its documents first)",
                    "unknown_document",
                    q.id,
                )
            elif judgment.key and doc.key and judgment.key != doc.key:
                report.add(
                    f"{where}.key",
                    f"query {q.id}: key {judgment.key} differs from the document's {doc.key}",
                    "key_mismatch",
                    q.id,
                )
            elif judgment.key and not doc.key:
                _key_to_set(new_keys, key_owners, doc, judgment.key, f"{where}.key", q.id, report)
    if not report.ok:
        return nothing
    return report, golden, documents, new_keys


def _carried(fmt: JudgmentsFormat) -> tuple[str, ...]:
    """The query fields a file of this format gives (TREC qrels: the text only with a topics file)."""
    if fmt.name == "trec-qrels" and fmt.topics is None:
        return ()
    return FORMATS[fmt.name].carries


def _plan(
    *,
    golden_set: GoldenSet,
    data: bytes,
    source: str,
    web_limits: bool,
    fmt: JudgmentsFormat,
    mode: str,
) -> tuple[ImportReport, _Plan | None]:
    """The report, and the changes the file would make to the set in `mode` (None when it has problems)."""
    report, golden, documents, new_keys = _golden_read(
        golden_set=golden_set, data=data, source=source, web_limits=web_limits, fmt=fmt
    )
    if golden is None:
        return report, None
    changes = ImportChanges(keys=sorted(new_keys.items()))
    carried = _carried(fmt)
    queries = {q.external_id: q for q in golden_set.queries.all()}
    created: dict[str, dict[str, Any]] = {}
    updates: dict[str, dict[str, Any]] = {}
    for q in golden.queries:
        values = _stored(q)
        row = queries.get(q.id)
        if row is None:
            created[q.id] = values  # a new query takes what the file gives (the format's defaults)
            changes.queries_created.append((q.id, q.text))
            continue
        wanted: dict[str, Any] = {}
        for name in carried:
            value = values[name]
            if value == _EMPTY[name] and mode == MERGE:
                continue  # left empty: kept
            if getattr(row, name) != value:
                wanted[name] = value
        if row.status != Query.Status.ACTIVE:
            wanted["status"] = Query.Status.ACTIVE.value  # named by the file: it returns
        if wanted:
            updates[q.id] = wanted
            changes.fields += [
                FieldChange(q.id, name, getattr(row, name), new) for name, new in wanted.items()
            ]

    sources = fmt.name in GOLDEN_FORMATS  # only Assay's own files say which labels a judge gave
    existing = {
        (label.query.external_id, label.document.doc_id): label
        for label in FrozenLabel.objects.filter(query__golden_set=golden_set).select_related(
            "query", "document"
        )
    }
    writes: dict[tuple[str, str], tuple[int, str] | None] = {}
    named: set[tuple[str, str]] = set()
    for q in golden.queries:
        for j in q.judgments:
            pair = (q.id, j.doc_id)
            named.add(pair)
            source_ = (j.source or HUMAN) if sources else HUMAN
            held = existing.get(pair)
            if held is None:
                writes[pair] = (j.grade, source_)
                changes.labels.append(LabelChange(*pair, None, j.grade, "", source_))
            elif held.grade != j.grade or (sources and held.source != source_):
                writes[pair] = (j.grade, source_)
                changes.labels.append(LabelChange(*pair, held.grade, j.grade, held.source, source_))
    if mode == REPLACE:
        for pair, held in existing.items():
            if pair not in named:
                writes[pair] = None
                changes.labels.append(LabelChange(*pair, held.grade, None, held.source, ""))
    changes.labels.sort(key=lambda c: (c.kind, c.query_id, c.doc_id))

    pooled = set(
        Candidate.objects.filter(query__golden_set=golden_set).values_list(
            "query__external_id", "document__doc_id"
        )
    )
    changes.pools = sorted(pair for pair in named if pair not in pooled)

    set_values: dict[str, Any] = {}
    if fmt.name in GOLDEN_FORMATS:  # only Assay's own files carry k, the cutoff and a version name
        set_values = {"k": golden.k, "relevant_min_grade": golden.relevant_min_grade}
        if mode == REPLACE or not golden_set.frozen_version:
            set_values["frozen_version"] = golden.version
    for name, value in set_values.items():
        if getattr(golden_set, name) != value:
            changes.fields.append(FieldChange("", name, getattr(golden_set, name), value))
    plan = _Plan(
        golden=golden,
        mode=mode,
        changes=changes,
        documents=documents,
        queries=queries,
        created=created,
        updates=updates,
        writes=writes,
        existing=existing,
        set_values=set_values,
    )
    return report, plan


# ------------------------------------------------------------------------------------------ writing


def _write(golden_set: GoldenSet, plan: _Plan, source: str) -> dict[str, Any]:
    """Write the plan's changes; returns the record of the state before them that an undo restores."""
    undo: dict[str, Any] = {
        "labels": [],
        "queries": [],
        "created": [],
        "keys": [],
        "set": {},
        "candidates": [],
        "reopened": 0,
    }
    documents, queries = plan.documents, plan.queries
    for doc_id, key in plan.changes.keys:
        Document.objects.filter(pk=documents[doc_id].pk).update(key=key)
        undo["keys"].append([documents[doc_id].pk, key])
    created = [
        Query(golden_set=golden_set, external_id=query_id, **values)
        for query_id, values in plan.created.items()
    ]
    for row in Query.objects.bulk_create(created, batch_size=1000):
        queries[row.external_id] = row
        undo["created"].append(row.pk)
    reason = f"golden file import {source} (version {plan.golden.version})"
    for query_id, values in plan.updates.items():
        row = queries[query_id]
        undo["queries"].append([row.pk, {name: getattr(row, name) for name in values}])
        undo["reopened"] += query_update(row, values, by=None, reason=reason)

    version = plan.golden.version
    gone: list[int] = []
    regraded: dict[tuple[int, str], list[int]] = {}
    new: list[FrozenLabel] = []
    for pair, wanted in plan.writes.items():
        held = plan.existing.get(pair)
        if held is not None:
            undo["labels"].append([held.query_id, held.document_id, label_state(held)])
            if wanted is None:
                gone.append(held.pk)
            else:
                regraded.setdefault(wanted, []).append(held.pk)
        elif wanted is not None:
            query, document = queries[pair[0]], documents[pair[1]]
            undo["labels"].append([query.pk, document.pk, None])
            new.append(
                FrozenLabel(
                    query=query, document=document, grade=wanted[0], version=version, source=wanted[1]
                )
            )
    for pks in chunks(gone):
        FrozenLabel.objects.filter(pk__in=pks).delete()
    for (grade, source_), held_pks in regraded.items():
        for pks in chunks(held_pks):
            FrozenLabel.objects.filter(pk__in=pks).update(
                grade=grade, version=version, source=source_, judge=None, judge_name=""
            )
    FrozenLabel.objects.bulk_create(new, batch_size=1000)

    pools: dict[int, list[PoolEntry]] = {}
    for query_id, doc_id in plan.changes.pools:
        pools.setdefault(queries[query_id].pk, []).append(PoolEntry(documents[doc_id], JUDGED_SYSTEM, None))
    # A labelled document needs no rater: finished work is not reopened for it.
    undo["candidates"] = sorted(map(list, pool_merge(pools=pools, reopen=False).added))

    if plan.set_values:
        undo["set"] = {name: getattr(golden_set, name) for name in plan.set_values}
        for name, value in plan.set_values.items():
            setattr(golden_set, name, value)
        golden_set.save(update_fields=list(plan.set_values))
    return undo


def chunks(values: list[int], size: int = 10_000) -> list[list[int]]:
    return [values[start : start + size] for start in range(0, len(values), size)]


def label_state(label: FrozenLabel) -> list[Any]:
    return [label.grade, label.version, label.source, label.judge_id, label.judge_name]


def query_update(row: Query, values: dict[str, Any], *, by: User | None, reason: str) -> int:
    """Set a query's fields; a change of tier or status is recorded as a TierMove, and a query that
    returns from retirement gets back the work its retirement closed: how many assignments reopened."""
    tier, status = values.get("tier", row.tier), values.get("status", row.status)
    if (tier, status) != (row.tier, row.status):
        TierMove.objects.create(
            query=row,
            by=by,
            from_tier=row.tier,
            to_tier=tier,
            from_status=row.status,
            to_status=status,
            reason=reason,
        )
    was_retired = row.status == Query.Status.RETIRED
    Query.objects.filter(pk=row.pk).update(**values)
    for name, value in values.items():
        setattr(row, name, value)
    if was_retired and row.status == Query.Status.ACTIVE:
        return retired_work_reopen(query=row)
    return 0


class _Rollback(Exception):
    pass


@contextmanager
def written_checked(golden_set: GoldenSet, report: ImportReport, *, keep: bool) -> Iterator[None]:
    """Run the writes of the block in a transaction under the set's row lock, then refuse them (every
    problem in `report`, all rolled back) when the next freeze would refuse the set afterwards for a
    reason it did not have before; `keep=False` rolls back in any case (a preview).

    The reasons before are read first, outside the transaction, so that the lock (on SQLite, the database's
    write lock) is held for one freeze check, not two, when the set has none (the common case): a reason
    some other write gave the set meanwhile then refuses this one too (never the other way round). When
    it has some, they are read again under the lock, so that none that was mended meanwhile is taken for
    one the set had."""
    before = _freeze_problems(golden_set)
    try:
        with transaction.atomic():
            GoldenSet.objects.select_for_update().filter(pk=golden_set.pk).first()
            if before:
                before = _freeze_problems(golden_set)
            yield
            for problem in _freeze_problems(golden_set):
                if problem not in before:
                    report.add(
                        "set",
                        f"the next freeze would refuse the set afterwards: {problem}",
                        "freeze_refused",
                    )
            if not report.ok or not keep:
                raise _Rollback
    except _Rollback:
        golden_set.refresh_from_db()


def _freeze_problems(golden_set: GoldenSet) -> list[str]:
    """Why the next freeze would refuse the set's labels as they stand (places as `queries[i]` dropped:
    they move when a query is added before them)."""
    try:
        selectors.working_golden_get(golden_set=golden_set)
    except selectors.WorkingGoldenInvalid as exc:
        return [re.sub(r"queries\[\d+\]\.?", "", problem) for problem in exc.problems]
    return []


# ------------------------------------------------------------------------------------------ the steps


def _report_changes(report: ImportReport, changes: ImportChanges) -> None:
    for name, n in changes.counts().items():
        report.count(name, n)
    if changes.empty:
        report.notes.append("The file would change nothing: nothing was written.")


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
    """What the file would change, written nowhere: the report (its problems, and refusals the changes
    would meet), the changes, and a previewed record holding the file for `golden_import_confirm`
    (None when the file has problems or would change nothing)."""
    _discard_stale(golden_set)
    report, plan = _plan(
        golden_set=golden_set, data=data, source=source, web_limits=web_limits, fmt=fmt, mode=mode
    )
    if plan is None:
        return report, None, None
    with written_checked(golden_set, report, keep=False):
        _write(golden_set, plan, source)
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


def golden_import_confirm(
    *, record: GoldenImport, digest: str, web_limits: bool = False
) -> tuple[ImportReport, ImportChanges | None]:
    """Write a previewed import, if the file still makes exactly the changes previewed (`digest`); when the
    set changed meanwhile nothing is written and the report says so (preview again)."""
    golden_set = record.golden_set
    fmt = format_of(record)
    report = ImportReport(kind="golden", source=record.source)
    if record.status != GoldenImport.Status.PREVIEWED:
        report.add("", f"this import was {record.get_status_display()} already: nothing was written", "stale")
        return report, None
    report, plan = _plan(
        golden_set=golden_set,
        data=bytes(record.data),
        source=record.source,
        web_limits=web_limits,
        fmt=fmt,
        mode=record.mode,
    )
    if plan is None:
        return report, None
    if plan.changes.digest() != digest or record.digest != digest:
        report.add(
            "",
            "the set changed since the preview, so the file would now change other things: nothing was "
            "written; preview it again",
            "stale_preview",
        )
        return report, plan.changes
    with written_checked(golden_set, report, keep=True):
        # Claimed under the set's lock: of two confirmations at once (a double click, two tabs) one writes.
        claimed = GoldenImport.objects.filter(pk=record.pk, status=GoldenImport.Status.PREVIEWED).update(
            status=GoldenImport.Status.APPLIED, applied=timezone.now(), data=b"", topics_data=b""
        )
        if not claimed:
            report.add(
                "", "this import was confirmed or cancelled already: nothing more was written", "stale"
            )
        else:
            undo = _write(golden_set, plan, record.source)
            _report_changes(report, plan.changes)
            if undo["reopened"]:
                report.count("assignments of returning queries reopened", undo["reopened"])
            GoldenImport.objects.filter(pk=record.pk).update(undo=undo)
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


def _key_to_set(
    new_keys: dict[str, str],
    key_owners: dict[str, str],
    doc: Document,
    key: str,
    where: str,
    query_id: str,
    report: ImportReport,
) -> None:
    """Plan giving `doc` (which has no key) the judgment's `key`, or report why it cannot have it."""
    owner = key_owners.get(key)
    planned = new_keys.get(doc.doc_id)
    what = f"query {query_id}"
    if owner is not None and owner != doc.doc_id:
        message = f"{what}: key {key} belongs to document {owner}, not {doc.doc_id}"
        report.add(where, message, "key_conflict", query_id)
    elif planned is not None and planned != key:
        report.add(
            where,
            f"{what}: key {key} for {doc.doc_id}, which another judgment keys {planned}",
            "key_conflict",
            query_id,
        )
    else:
        new_keys[doc.doc_id] = key
        key_owners[key] = doc.doc_id
