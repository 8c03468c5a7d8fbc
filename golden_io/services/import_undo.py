"""Undoing a golden-file import (docs/labeling.md, "Imports"): the set's latest applied import taken back,
its labels and query fields returned to exactly what they were before it, from the state it recorded
(`GoldenImport.undo`). Shown first like the import (`import_undo_plan`). Part of `golden_io.services`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Q
from django.utils import timezone

from assay.display import counted
from assay.problems import ImportReport
from golden_io import selectors
from golden_io.models import GoldenImport
from golden_io.services.imports import (
    FieldChange,
    ImportChanges,
    LabelChange,
    chunks,
    label_state,
    query_update,
    written_checked,
)
from labeling.models import Candidate, Document, FrozenLabel, GoldenSet, Judgment, Query


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


def _labels_now(pairs: list[tuple[int, int]]) -> dict[tuple[int, int], FrozenLabel]:
    """The frozen labels of these (query pk, document pk) pairs as they stand."""
    wanted = set(pairs)
    found: dict[tuple[int, int], FrozenLabel] = {}
    for pks in chunks(sorted({q for q, _ in wanted})):
        for label in FrozenLabel.objects.filter(query_id__in=pks):
            if (label.query_id, label.document_id) in wanted:
                found[(label.query_id, label.document_id)] = label
    return found


def _with_work(query_pks: list[int]) -> set[int]:
    """Those of the queries someone graded (a judgment) since they were made: one statement per 10,000
    queries, not one per query (the undo page lists an import of a whole set)."""
    found: set[int] = set()
    for pks in chunks(sorted(set(query_pks))):
        graded = Judgment.objects.filter(assignment__query_id__in=pks).order_by()
        found |= set(graded.values_list("assignment__query_id", flat=True).distinct())
    return found


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
    with written_checked(record.golden_set, report, keep=True):
        # Claimed under the set's lock, while it is still the latest applied: of two undos at once one runs.
        latest = import_undoable(golden_set=record.golden_set)
        claimed = (
            latest is not None
            and latest.pk == record.pk
            and GoldenImport.objects.filter(pk=record.pk, status=GoldenImport.Status.APPLIED).update(
                status=GoldenImport.Status.UNDONE, undone=timezone.now(), undone_by=by
            )
        )
        if not claimed:
            report.add(
                "", "this import was undone already, or is no longer the latest: nothing was changed", "stale"
            )
        else:
            _undo_write(record, plan, by)
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


def _undo_write(record: GoldenImport, plan: UndoPlan, by: User | None) -> None:
    undo = record.undo or {}
    golden_set = record.golden_set
    reason = f"undo of the golden file import {record.source}"
    labels = undo.get("labels", [])
    now = _labels_now([(q, d) for q, d, _ in labels])
    for pks in chunks([label.pk for label in now.values()]):
        FrozenLabel.objects.filter(pk__in=pks).delete()
    FrozenLabel.objects.bulk_create(
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
            for q, d, prior in labels
            if prior is not None
        ],
        batch_size=1000,
    )
    for pk, before in undo.get("queries", []):
        row = Query.objects.filter(pk=pk).first()
        if row is not None:
            query_update(row, before, by=by, reason=reason)
    created = Query.objects.in_bulk(undo.get("created", []))
    for pk in undo.get("created", []):
        row = created.get(pk)
        if row is None:
            continue
        if row.external_id in plan.kept:
            query_update(row, {"status": Query.Status.RETIRED.value}, by=by, reason=reason)
        else:
            row.delete()
    for pk, key in undo.get("keys", []):
        Document.objects.filter(pk=pk, key=key).update(key=None)
    # The candidates it added leave the pools, unless graded since or labelled still.
    added = {(q, d) for q, d in undo.get("candidates", [])}
    gone: list[int] = []
    for pks in chunks(sorted({q for q, _ in added})):
        graded = Judgment.objects.filter(assignment__query_id__in=pks)
        kept = set(graded.values_list("assignment__query_id", "document_id"))
        kept |= set(FrozenLabel.objects.filter(query_id__in=pks).values_list("query_id", "document_id"))
        candidates = Candidate.objects.filter(query_id__in=pks).values_list("pk", "query_id", "document_id")
        gone += [pk for pk, q, d in candidates if (q, d) in added and (q, d) not in kept]
    for pks in chunks(gone):
        Candidate.objects.filter(pk__in=pks).delete()
    if undo.get("set"):
        for name, value in undo["set"].items():
            setattr(golden_set, name, value)
        golden_set.save(update_fields=list(undo["set"]))


def import_history(*, golden_set: GoldenSet, limit: int = 20) -> list[GoldenImport]:
    """The set's applied and undone imports, newest first."""
    return list(
        GoldenImport.objects.filter(golden_set=golden_set)
        .filter(Q(status=GoldenImport.Status.APPLIED) | Q(status=GoldenImport.Status.UNDONE))
        .select_related("by", "undone_by")
        .order_by("-applied", "-id")[:limit]
    )
