"""The golden-file import's writes (docs/labeling.md, "Imports"): a planned import written, and the state
before it recorded for its undo, in statements of many rows each (bulk inserts and updates, in batches),
inside the one short transaction `set_locked` opens once everything was read and checked outside it.
Part of `golden_io.services`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Model

from golden_io.services.import_planning import HeldLabel, ImportPlan
from labeling.models import Candidate, Document, FrozenLabel, GoldenSet, Query, TierMove
from labeling.services import JUDGED_SYSTEM, PoolEntry, pool_merge, pool_merged, retired_work_reopen

# Rows per INSERT or UPDATE statement (Django makes it fewer where the database takes fewer parameters).
BATCH = 5000


@contextmanager
def set_locked(golden_set: GoldenSet) -> Iterator[None]:
    """One transaction under the set's row lock (on SQLite, the database's write lock, which every other
    write waits for): only the re-check that the set did not change since it was read, and the writes,
    run in it. Imports, undos and freezes of one set take turns."""
    with transaction.atomic():
        GoldenSet.objects.select_for_update().filter(pk=golden_set.pk).first()
        yield


@dataclass(slots=True)
class Prepared:
    """Rows of one model as the database stores them (each value converted by its field), prepared
    before the transaction that inserts them (`prepared_insert`): most of the work of an insert done
    outside the lock. `query_id` None: the model has no such column."""

    model: type[Model]
    columns: list[str]
    rows: list[list[Any]]
    query_id: int | None

    def __len__(self) -> int:
        return len(self.rows)

    def pairs(self) -> list[tuple[int, int]]:
        """(query pk, document pk) of each row."""
        q, d = self.columns.index("query_id"), self.columns.index("document_id")
        return [(row[q], row[d]) for row in self.rows]


def prepared(model: type[Model], objects: Sequence[Model]) -> Prepared:
    """`objects` (new rows of `model`) prepared for `prepared_insert`; their pks are not needed after."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    rows = [[f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields] for obj in objects]
    columns = [str(f.column) for f in fields]
    return Prepared(model, columns, rows, columns.index("query_id") if "query_id" in columns else None)


def prepared_insert(rows: Prepared) -> None:
    """Insert prepared rows: PostgreSQL's COPY, else one parameterised INSERT run for every row (SQLite).
    Either takes a fraction of the time of bulk_create for the same rows, which converts each value (in
    Python, per field and row) while it builds the statement, inside the transaction."""
    if not rows.rows:
        return
    table = connection.ops.quote_name(rows.model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(column) for column in rows.columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows.rows:
                    copy.write_row(row)
        else:
            values = ", ".join(["%s"] * len(rows.columns))
            cursor.executemany(
                f"INSERT INTO {table} ({columns}) VALUES ({values})",  # noqa: S608 (the model's own table)
                rows.rows,
            )


@dataclass(slots=True)
class ImportRows:
    """The rows an import inserts, built before its transaction: the queries it creates, which have
    stand-in pks (`ImportPlan.query_pks`) until they are inserted, their labels and pool candidates, and
    the other new labels (prepared); and the entries joining the pools of queries the set has, merged with
    the candidates there under the lock."""

    queries: list[Query]
    labels: Prepared
    candidates: Prepared
    pools: dict[int, list[PoolEntry]]

    def created(self, real: dict[int, int]) -> None:
        """The created queries' stand-in pks replaced by their rows' (`real`: stand-in -> pk)."""
        for rows in (self.labels, self.candidates):
            column = rows.query_id
            assert column is not None
            for row in rows.rows:
                row[column] = real.get(row[column], row[column])


def import_rows(golden_set: GoldenSet, plan: ImportPlan) -> ImportRows:
    """The rows the plan inserts, built before the transaction that inserts them (`import_write`)."""
    pks = plan.query_pks()
    documents, version = plan.documents, plan.golden.version
    labels = [
        FrozenLabel(
            query_id=pks[query_id],
            document_id=documents[doc_id].pk,
            grade=wanted[0],
            version=version,
            source=wanted[1],
        )
        for (query_id, doc_id), wanted in plan.writes.items()
        if wanted is not None and (query_id, doc_id) not in plan.existing
    ]
    new: dict[int, list[PoolEntry]] = {}
    pools: dict[int, list[PoolEntry]] = {}
    for query_id, doc_id in plan.changes.pools:
        entry = PoolEntry(documents[doc_id], JUDGED_SYSTEM, None)
        (new if query_id in plan.created else pools).setdefault(pks[query_id], []).append(entry)
    return ImportRows(
        queries=[
            Query(golden_set=golden_set, external_id=query_id, **values)
            for query_id, values in plan.created.items()
        ],
        labels=prepared(FrozenLabel, labels),
        # A query not created yet has no candidate: all of its are new.
        candidates=prepared(Candidate, list(pool_merged(new, {})[0].values())),
        pools=pools,
    )


def import_write(golden_set: GoldenSet, plan: ImportPlan, rows: ImportRows, source: str) -> dict[str, Any]:
    """Write the plan's changes, inserting `rows` (`import_rows` of a plan of the same rows); returns the
    record of the state before them that an undo restores."""
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
    keyed = []
    for doc_id, key in plan.changes.keys:
        documents[doc_id].key = key
        keyed.append(documents[doc_id])
        undo["keys"].append([documents[doc_id].pk, key])
    Document.objects.bulk_update(keyed, ["key"], batch_size=BATCH)
    created = Query.objects.bulk_create(rows.queries, batch_size=BATCH)
    rows.created({-n: row.pk for n, row in enumerate(created, start=1)})
    for row in created:
        queries[row.external_id] = row
        undo["created"].append(row.pk)
    reason = f"golden file import {source} (version {plan.golden.version})"
    updated = [(queries[query_id], values) for query_id, values in plan.updates.items()]
    undo["queries"] = [[row.pk, {name: getattr(row, name) for name in values}] for row, values in updated]
    undo["reopened"] = queries_update(updated, by=None, reason=reason)

    version = plan.golden.version
    gone: list[int] = []
    regraded: dict[tuple[int, str], list[int]] = {}
    for pair, wanted in plan.writes.items():
        held = plan.existing.get(pair)
        if held is None:
            continue
        undo["labels"].append([held.query_id, held.document_id, label_state(held)])
        if wanted is None:
            gone.append(held.pk)
        else:
            regraded.setdefault(wanted, []).append(held.pk)
    undo["labels"] += [[q, d, None] for q, d in rows.labels.pairs()]
    for pks in chunks(gone):
        FrozenLabel.objects.filter(pk__in=pks).delete()
    for (grade, source_), held_pks in regraded.items():
        for pks in chunks(held_pks):
            FrozenLabel.objects.filter(pk__in=pks).update(
                grade=grade, version=version, source=source_, judge=None, judge_name=""
            )
    prepared_insert(rows.labels)

    # A labelled document needs no rater: finished work is not reopened for it.
    prepared_insert(rows.candidates)
    added = pool_merge(pools=rows.pools, reopen=False).added | set(rows.candidates.pairs())
    undo["candidates"] = sorted(map(list, added))

    if plan.set_values:
        undo["set"] = {name: getattr(golden_set, name) for name in plan.set_values}
        for name, value in plan.set_values.items():
            setattr(golden_set, name, value)
        golden_set.save(update_fields=list(plan.set_values))
    return undo


def chunks(values: list[int], size: int = 10_000) -> list[list[int]]:
    return [values[start : start + size] for start in range(0, len(values), size)]


def label_state(label: FrozenLabel | HeldLabel) -> list[Any]:
    return [label.grade, label.version, label.source, label.judge_id, label.judge_name]


def queries_update(updates: Sequence[tuple[Query, dict[str, Any]]], *, by: User | None, reason: str) -> int:
    """Set each query's fields (one UPDATE per batch of queries changing the same fields); a change of
    tier or status is recorded as a TierMove, and a query that returns from retirement gets back the work
    its retirement closed: how many assignments reopened."""
    moves: list[TierMove] = []
    returning: list[Query] = []
    by_fields: dict[tuple[str, ...], list[Query]] = {}
    for row, values in updates:
        tier, status = values.get("tier", row.tier), values.get("status", row.status)
        if (tier, status) != (row.tier, row.status):
            moves.append(
                TierMove(
                    query=row,
                    by=by,
                    from_tier=row.tier,
                    to_tier=tier,
                    from_status=row.status,
                    to_status=status,
                    reason=reason,
                )
            )
        if row.status == Query.Status.RETIRED and status == Query.Status.ACTIVE:
            returning.append(row)
        for name, value in values.items():
            setattr(row, name, value)
        by_fields.setdefault(tuple(sorted(values)), []).append(row)
    TierMove.objects.bulk_create(moves, batch_size=BATCH)
    for names, rows in by_fields.items():
        Query.objects.bulk_update(rows, list(names), batch_size=BATCH)
    return retired_work_reopen(queries=returning) if returning else 0
