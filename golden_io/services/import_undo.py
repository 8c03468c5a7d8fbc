"""Undoing a golden-file import (docs/labeling.md, "Imports"): the set's latest applied import taken back,
its labels and query fields returned to exactly what they were before it, from the state it recorded
(`GoldenImport.undo`). Shown first like the import (`import_undo_plan`), checked against the next freeze
in memory like it, and written like it (`golden_io.services.import_writing.set_written`): its rows in a
few statements whatever their number, the queries it deletes taking with them what refers to them
(`golden_io.services.cascade`), and under the set's lock (on PostgreSQL taken once they are written) only
the check that it is still the set's latest import and the set's own settings. Part of
`golden_io.services`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from assay.display import counted
from assay.problems import ImportReport
from golden_io import selectors
from golden_io.models import GoldenImport
from golden_io.services.bulk import Prepared, id_list, pair_rows, prepared, prepared_insert
from golden_io.services.cascade import cascade_delete
from golden_io.services.import_planning import SET_READ, FieldChange, HeldLabel, ImportChanges, LabelChange
from golden_io.services.import_writing import (
    Stale,
    chunks,
    label_state,
    query_writes,
    query_writes_run,
    set_written,
    settings_write,
)
from golden_io.services.imports import freeze_refusals
from labeling.models import Candidate, Document, FrozenLabel, GoldenSet, Judgment, Query
from labeling.selectors import FrozenRow, Unwritten


def import_undoable(*, golden_set: GoldenSet) -> GoldenImport | None:
    """The import an undo would take back: the set's latest applied one not undone."""
    return (
        GoldenImport.objects.filter(golden_set=golden_set, status=GoldenImport.Status.APPLIED)
        .order_by("-applied", "-id")
        .first()
    )


@dataclass(slots=True)
class UndoPlan:
    record: GoldenImport
    changes: ImportChanges
    # Versions frozen since the import: they keep its labels (versions never change).
    versions_since: list[str]
    # Queries the import created that have work since: retired, not deleted (their work is kept).
    kept: list[str]


def import_undo_plan(*, record: GoldenImport) -> UndoPlan:
    """What undoing `record` would change: every label and query field it wrote back to what it was."""
    golden_set = record.golden_set
    undo = record.undo or {}
    changes = ImportChanges()
    label_pairs = [(q, d) for q, d, _ in undo.get("labels", [])]
    query_pks = (
        {q for q, _ in label_pairs} | {pk for pk, _ in undo.get("queries", [])} | set(undo.get("created", []))
    )
    names = dict(Query.objects.filter(pk__in=query_pks).values_list("pk", "external_id"))
    doc_pks = {d for _, d in label_pairs} | {pk for pk, _ in undo.get("keys", [])}
    docs = dict(Document.objects.filter(pk__in=doc_pks).values_list("pk", "doc_id"))
    now = _labels_now(label_pairs)
    for q, d, prior in undo.get("labels", []):
        label = now.get((q, d))
        held = None if label is None else label_state(label)
        old = None if held is None else held[0]
        new = None if prior is None else prior[0]
        if (held and held[:3]) != (prior and prior[:3]) and q in names and d in docs:
            changes.labels.append(
                LabelChange(names[q], docs[d], old, new, held[2] if held else "", prior[2] if prior else "")
            )
    rows = {row.pk: row for row in Query.objects.filter(pk__in=[pk for pk, _ in undo.get("queries", [])])}
    for pk, before in undo.get("queries", []):
        row = rows.get(pk)
        if row is None:
            continue
        for name, value in before.items():
            if getattr(row, name) != value:
                changes.fields.append(FieldChange(row.external_id, name, getattr(row, name), value))
    kept: list[str] = []
    created = [pk for pk in undo.get("created", []) if pk in names]
    worked = _with_work(created)
    for pk in created:
        (kept if pk in worked else changes.queries_removed).append(names[pk])
    for name, value in (undo.get("set") or {}).items():
        if getattr(golden_set, name) != value:
            changes.fields.append(FieldChange("", name, getattr(golden_set, name), value))
    given = dict(undo.get("keys", []))
    key_now = dict(Document.objects.filter(pk__in=list(given)).values_list("pk", "key"))
    changes.keys += [(docs.get(pk, str(pk)), "") for pk, key in given.items() if key_now.get(pk) == key]
    changes.labels.sort(key=lambda c: (c.kind, c.query_id, c.doc_id))
    since = (
        selectors.version_list(golden_set=golden_set)
        .filter(created__gt=record.applied or record.created)
        .order_by("created")
        .values_list("name", flat=True)
    )
    return UndoPlan(record=record, changes=changes, versions_since=list(since), kept=sorted(kept))


def _labels_now(pairs: list[tuple[int, int]]) -> dict[tuple[int, int], HeldLabel]:
    """The frozen labels of these (query pk, document pk) pairs as they stand."""
    wanted = set(pairs)
    found: dict[tuple[int, int], HeldLabel] = {}
    for pks in chunks(sorted({q for q, _ in wanted})):
        for row in FrozenLabel.objects.filter(query_id__in=pks).values_list(*HeldLabel._fields):
            label = HeldLabel(*row)
            if (label.query_id, label.document_id) in wanted:
                found[(label.query_id, label.document_id)] = label
    return found


def _with_work(query_pks: Collection[int]) -> set[int]:
    """Of these queries, the ones someone graded (a judgment) since they were made."""
    graded = Judgment.objects.filter(assignment__query_id__in=id_list(query_pks))
    return set(graded.values_list("assignment__query_id", flat=True).distinct())


def import_undo_unwritten(record: GoldenImport) -> Unwritten:
    """The undo's changes as consolidation reads them before they are written (`Unwritten`): each label
    back to its state before the import, each query's fields too, the queries it created out of the set
    (deleted or retired: either way no longer active), the keys it gave taken back, the set's settings
    restored, the candidates it added leaving the pools."""
    undo = record.undo or {}
    restore: dict[int, dict[str, Any]] = dict(undo.get("queries", []))
    created = set(undo.get("created", []))
    rows: dict[int, Query] = {}
    for pks in chunks(sorted(restore.keys() | created)):
        for row in Query.objects.filter(pk__in=pks):
            row = copy.copy(row)
            for name, value in (
                {"status": Query.Status.RETIRED} if row.pk in created else restore[row.pk]
            ).items():
                setattr(row, name, value)
            rows[row.pk] = row
    given = dict(undo.get("keys", []))
    key_now = dict(Document.objects.filter(pk__in=list(given)).values_list("pk", "key"))
    return Unwritten(
        frozen={
            (q, d): None if prior is None else FrozenRow(prior[0], prior[2], prior[3], prior[4])
            for q, d, prior in undo.get("labels", [])
        },
        queries=rows,
        pool_removed=frozenset((q, d) for _, q, d in _candidates_leaving(undo)),
        keys={pk: None for pk, key in given.items() if key_now.get(pk) == key},
        settings={name: value for name, value in (undo.get("set") or {}).items() if name in SET_READ},
    )


def _candidates_added(undo: dict[str, Any]) -> list[tuple[int, int, int]]:
    """(pk, query pk, document pk) of the pool candidates the import added that are still there."""
    added = {(q, d) for q, d in undo.get("candidates", [])}
    found = Candidate.objects.filter(query_id__in=id_list({q for q, _ in added}))
    return [(pk, q, d) for pk, q, d in found.values_list("pk", "query_id", "document_id") if (q, d) in added]


def _candidates_leaving(undo: dict[str, Any]) -> list[tuple[int, int, int]]:
    """(pk, query pk, document pk) of the candidates the import added that leave the pools with its
    undo: those neither graded since nor labelled once its labels are back as they were (the rule
    `_candidates_left` applies in the undo's transaction, here read for the freeze check before it)."""
    restored = {(q, d): prior is not None for q, d, prior in undo.get("labels", [])}
    added = _candidates_added(undo)
    queries = {q for _, q, _ in added}
    graded = Judgment.objects.filter(assignment__query_id__in=id_list(queries))
    kept = set(graded.values_list("assignment__query_id", "document_id"))
    labelled = FrozenLabel.objects.filter(query_id__in=id_list(queries)).values_list(
        "query_id", "document_id"
    )
    kept |= {pair for pair in labelled if restored.get(pair, True)}
    kept |= {pair for pair, has in restored.items() if has}
    return [(pk, q, d) for pk, q, d in added if (q, d) not in kept]


def _candidates_left(pks: Collection[int]) -> list[int]:
    """Of these candidates, the ones neither graded nor labelled now (in the undo's transaction, once the
    labels are back as they were before the import): those leave the pools."""
    graded = Judgment.objects.filter(
        assignment__query_id=OuterRef("query_id"), document_id=OuterRef("document_id")
    )
    labelled = FrozenLabel.objects.filter(query_id=OuterRef("query_id"), document_id=OuterRef("document_id"))
    leaving = Candidate.objects.filter(pk__in=id_list(pks)).exclude(Exists(graded)).exclude(Exists(labelled))
    return list(leaving.values_list("pk", flat=True))


@dataclass(slots=True)
class UndoRows:
    """What an undo writes that can be built before its transaction: the labels back as they were, and
    the candidates the import added that are still there (which of them leave is decided in it)."""

    priors: Prepared
    candidates: list[int]


def golden_import_undo(*, record: GoldenImport, by: User | None) -> tuple[ImportReport, UndoPlan]:
    """Take back `record`, the set's latest applied import: its labels and query fields return to what
    they were before it. Versions frozen since keep its labels (they never change)."""
    report = ImportReport(kind="golden import undo", source=record.source)
    latest = import_undoable(golden_set=record.golden_set)
    if latest is None or latest.pk != record.pk:
        report.add(
            "",
            "only the set's latest import can be undone"
            + (
                f" ({latest.source}, {latest.applied:%Y-%m-%d %H:%M} UTC)"
                if latest and latest.applied
                else ""
            ),
            "not_latest",
        )
        return report, import_undo_plan(record=record)
    plan = import_undo_plan(record=record)
    freeze_refusals(record.golden_set, import_undo_unwritten(record), report, undo=True)
    if not report.ok:
        return report, plan
    undo = record.undo or {}
    rows = UndoRows(_priors(undo), [pk for pk, _, _ in _candidates_added(undo)])

    def write(lock: Callable[[], None]) -> bool:
        # Claimed first: of two undos at once one runs.
        claimed = GoldenImport.objects.filter(pk=record.pk, status=GoldenImport.Status.APPLIED).update(
            status=GoldenImport.Status.UNDONE, undone=timezone.now(), undone_by=by
        )
        if not claimed:
            return False
        _undo_write(record, plan, rows, by)
        lock()
        # Under the set's lock: still the set's latest applied import, or nothing is changed.
        if _later_applied(record):
            raise Stale
        settings_write(record.golden_set, undo.get("set") or {})
        return True

    try:
        claimed = set_written(record.golden_set, write)
    except Stale:
        claimed = False
    if not claimed:
        report.add(
            "", "this import was undone already, or is no longer the latest: nothing was changed", "stale"
        )
    else:
        for name, n in plan.changes.counts().items():
            report.count(name, n)
    if report.ok:
        report.notes += undo_notes(plan)
    record.refresh_from_db()
    return report, plan


def undo_notes(plan: UndoPlan) -> list[str]:
    notes = []
    if plan.versions_since:
        notes.append(
            f"{counted(len(plan.versions_since), 'version')} frozen since the import "
            f"({', '.join(plan.versions_since)}) keep its labels: versions never change; freeze again to "
            "record the undo."
        )
    if plan.kept:
        notes.append(
            f"{counted(len(plan.kept), 'query', 'queries')} the import created were graded since and are "
            f"retired, not deleted, so that their grades are kept: {', '.join(plan.kept)}"
        )
    return notes


def _priors(undo: dict[str, Any]) -> Prepared:
    """The labels the import changed or removed, as they were before it: built before the transaction."""
    return prepared(
        FrozenLabel,
        [
            FrozenLabel(
                query_id=q,
                document_id=d,
                grade=prior[0],
                version=prior[1],
                source=prior[2],
                judge_id=prior[3],
                judge_name=prior[4],
            )
            for q, d, prior in undo.get("labels", [])
            if prior is not None
        ],
    )


def _later_applied(record: GoldenImport) -> bool:
    """Was an import of the set applied after `record`?"""
    applied = GoldenImport.objects.filter(
        golden_set_id=record.golden_set_id, status=GoldenImport.Status.APPLIED
    )
    return applied.filter(
        Q(applied__gt=record.applied) | Q(applied=record.applied, pk__gt=record.pk)
    ).exists()


def _undo_write(record: GoldenImport, plan: UndoPlan, rows: UndoRows, by: User | None) -> None:
    """The undo's writes, in its transaction before the set's lock, in a few statements whatever its
    size: the labels back, the queries' fields back, the queries it created deleted (with everything
    that refers to them) or, graded since, retired, the keys it gave taken back, the candidates it added
    out of the pools unless graded or labelled."""
    undo = record.undo or {}
    reason = f"undo of the golden file import {record.source}"
    pairs = [(q, d) for q, d, _ in undo.get("labels", [])]
    if pairs:  # whatever labels these pairs hold now
        FrozenLabel.objects.filter(pk__in=pair_rows(FrozenLabel, ("query_id", "document_id"), pairs)).delete()
    prepared_insert(rows.priors)
    restore: dict[int, dict[str, Any]] = dict(undo.get("queries", []))
    names = dict(
        Query.objects.filter(pk__in=id_list(undo.get("created", []))).values_list("pk", "external_id")
    )
    # Read in the transaction: a query graded since the plan was read keeps its grades (retired).
    worked = _with_work(names)
    plan.kept = sorted(names[pk] for pk in names if pk in worked)
    plan.changes.queries_removed = sorted(names[pk] for pk in names if pk not in worked)
    current = {row.pk: row for row in Query.objects.filter(pk__in=id_list(restore.keys() | worked))}
    updates = [(current[pk], before) for pk, before in restore.items() if pk in current]
    retired = [pk for pk in names if pk in worked and pk in current]
    updates += [(current[pk], {"status": Query.Status.RETIRED.value}) for pk in retired]
    query_writes_run(query_writes(updates, by=by, reason=reason))
    cascade_delete(Query, sorted(pk for pk in names if pk not in worked))
    given = dict(undo.get("keys", []))
    key_now = Document.objects.filter(pk__in=id_list(given)).values_list("pk", "key")
    taken = [pk for pk, key in key_now if given[pk] == key]
    if taken:
        Document.objects.filter(pk__in=id_list(taken)).update(key=None)
    # The candidates it added leave the pools, unless graded since or labelled still.
    cascade_delete(Candidate, _candidates_left(rows.candidates))


def import_history(*, golden_set: GoldenSet, limit: int = 20) -> list[GoldenImport]:
    """The set's applied and undone imports, newest first."""
    return list(
        GoldenImport.objects.filter(golden_set=golden_set)
        .filter(Q(status=GoldenImport.Status.APPLIED) | Q(status=GoldenImport.Status.UNDONE))
        .select_related("by", "undone_by")
        .order_by("-applied", "-id")[:limit]
    )
