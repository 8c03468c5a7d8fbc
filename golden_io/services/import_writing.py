"""The golden-file import's writes (docs/labeling.md, "Imports"): every row a confirmation writes, and the
record of the state before it that its undo restores, built before its transaction (`import_rows`:
values converted, ids reserved, PostgreSQL's COPY text made); then written in that transaction, in a few
statements whatever the number of rows (`import_write`), and checked under the set's lock.

The transaction (`set_written`) holds the set's row lock only for its end on PostgreSQL: the rows are
written first, then the lock is taken, the set read again but for the rows this import wrote and
compared with what the plan read (`ImportRows.state`), and the transaction commits. Part of
`golden_io.services`."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction

from golden_io.services.bulk import (
    Prepared,
    PreparedUpdate,
    id_list,
    ids_reserved,
    prepared,
    prepared_insert,
    prepared_update,
    update_prepared,
)
from golden_io.services.import_planning import (
    DOCUMENT_STATE,
    QUERY_STATE,
    HeldLabel,
    ImportPlan,
    SetState,
    Skipped,
)
from labeling.models import Candidate, Document, FrozenLabel, GoldenSet, Query, TierMove
from labeling.services import JUDGED_SYSTEM, PoolEntry, pool_merged, retired_work_reopen

T = TypeVar("T")

# How long, on PostgreSQL, a statement of an import's transaction waits for a lock before it gives up
# (`set_written`): far below `deadlock_timeout` (1 s by default), so the transaction, which writes before
# it takes the set's lock, is never caught in a wait for a holder of the set's lock that waits for one of
# its rows.
LOCK_WAIT_MS = 50


class Stale(Exception):
    """The set is not as the plan read it: nothing is written (the transaction is rolled back)."""


def set_written(golden_set: GoldenSet, write: Callable[[Callable[[], None]], T]) -> T:
    """`write` run in one transaction that holds the set's row lock from the moment it calls the function
    it is given (`lock`) until it commits: the rows are written before, the re-reading of the set and the
    last writes after. Imports, undos and freezes of one set take turns under that lock; a rater's grade
    save takes no part in it.

    On PostgreSQL the rows are written before the lock is taken, with each foreign key checked as its
    statement ends (not at the commit, which would hold the lock for it), and no statement waits more
    than LOCK_WAIT_MS for a lock. The set's lock is tried again and again (`_set_lock_giving_way`) while
    no other transaction waits for this one; a statement writing the rows that would wait longer, or a
    holder of the set's lock that waits for one of the rows written, and the transaction is rolled back
    and written again with the set's lock taken first, waiting for it, as on SQLite, where the
    transaction holds the database's write lock from its start (and every other write waits for it)."""
    if connection.vendor == "postgresql":
        outer = None
        if connection.in_atomic_block:  # inside an outer transaction: its settings given back after
            with connection.cursor() as cursor:
                cursor.execute("SELECT current_setting('lock_timeout')")
                outer = cursor.fetchone()[0]
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT_MS}ms'")
                    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                done = write(lambda: _set_lock_giving_way(golden_set))
                if outer is not None:
                    with connection.cursor() as cursor:
                        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [outer])
                        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
                return done
        except DatabaseError as exc:
            if not _lock_not_available(exc):
                raise
    with transaction.atomic():
        _set_lock(golden_set)
        return write(lambda: None)


def _lock_not_available(exc: DatabaseError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == "55P03"


def _set_lock_giving_way(golden_set: GoldenSet) -> None:
    """PostgreSQL, once the rows are written: the set's lock, tried LOCK_WAIT_MS at a time for as long as
    no other transaction waits for this one (whoever holds the set's lock meanwhile, a freeze or another
    import's end, may need none of its rows); once one does, the error that gives up the transaction."""
    while True:
        try:
            with transaction.atomic():  # a savepoint: a try that timed out leaves the transaction usable
                _set_lock(golden_set)
            return
        except DatabaseError as exc:
            if not _lock_not_available(exc) or _waited_for():
                raise


def _waited_for() -> bool:
    """Does another transaction wait for a lock this one holds (PostgreSQL)?"""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity"
            " WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid)))"
        )
        return bool(cursor.fetchone()[0])


def _set_lock(golden_set: GoldenSet) -> None:
    """The set's row lock, `FOR NO KEY UPDATE` as every taker of it takes it (the freeze, a baseline's
    promotion, a target's save): the foreign-key checks of rows being written that refer to the set share
    the row without holding that lock. On SQLite a no-op: the transaction holds the database's write
    lock."""
    GoldenSet.objects.select_for_update(no_key=True).filter(pk=golden_set.pk).values_list("pk").first()


@dataclass(slots=True)
class QueryWrites:
    """Changes of queries' fields, prepared (`query_writes`): their tier moves, the updates (one per
    set of fields changed), and the queries returning from retirement, whose closed work reopens."""

    moves: Prepared
    updates: list[PreparedUpdate]
    returning: list[Query]


def query_writes(
    updates: Sequence[tuple[Query, dict[str, Any]]], *, by: User | None, reason: str
) -> QueryWrites:
    """Each query's new field values prepared (the rows given are left as they are); a change of tier or
    status recorded as a TierMove, and a query returning from retirement noted."""
    moves: list[TierMove] = []
    returning: list[Query] = []
    by_fields: dict[tuple[str, ...], list[Query]] = {}
    for row, values in updates:
        tier, status = values.get("tier", row.tier), values.get("status", row.status)
        if (tier, status) != (row.tier, row.status):
            moves.append(
                TierMove(
                    query_id=row.pk,
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
        changed = copy.copy(row)
        for name, value in values.items():
            setattr(changed, name, value)
        by_fields.setdefault(tuple(sorted(values)), []).append(changed)
    return QueryWrites(
        moves=prepared(TierMove, moves),
        updates=[update_prepared(Query, names, rows) for names, rows in by_fields.items()],
        returning=returning,
    )


def query_writes_run(writes: QueryWrites) -> int:
    """Write prepared query changes; how many assignments of returning queries reopened."""
    prepared_insert(writes.moves)
    for update in writes.updates:
        prepared_update(update)
    return retired_work_reopen(queries=writes.returning) if writes.returning else 0


@dataclass(slots=True)
class ImportRows:
    """Everything a confirmation writes, built before its transaction (`import_rows`): the queries it
    creates and the labels it adds (with ids reserved for them), the labels it regrades or removes as the
    plan read them (`held`) and the regrades, the pool candidates it adds, its changes of queries and
    documents with those rows as the plan read them, the record of the state before it for its undo (all
    but how many assignments reopen), and the set as the transaction must find it once these are
    written (`state`), but for the rows it writes (`skipped`)."""

    queries: Prepared
    labels: Prepared
    held: dict[int, HeldLabel]
    regraded: dict[tuple[int, str], list[int]]  # (grade, source) -> the held labels given them
    version: str  # the file's, stamped on the labels it writes
    candidates: Prepared
    query_writes: QueryWrites
    query_rows: dict[int, tuple[Any, ...]]  # the queries changed, as the plan read them (QUERY_STATE)
    keys: PreparedUpdate
    key_rows: dict[int, tuple[Any, ...]]  # the documents keyed, as the plan read them (DOCUMENT_STATE)
    undo: dict[str, Any]
    skipped: Skipped
    state: SetState


def import_rows(golden_set: GoldenSet, plan: ImportPlan) -> ImportRows:
    """The rows the plan writes, built before the transaction that writes them (`import_write`)."""
    pks = dict(zip(plan.created, ids_reserved(Query, len(plan.created)), strict=True))
    pks.update((query_id, row.pk) for query_id, row in plan.queries.items())
    documents, version = plan.documents, plan.golden.version
    new = [
        (pks[query_id], documents[doc_id].pk, wanted)
        for (query_id, doc_id), wanted in plan.writes.items()
        if wanted is not None and (query_id, doc_id) not in plan.existing
    ]
    # The labels it regrades (in place: their pks by new grade and source) or removes, as the plan read them.
    held: dict[int, HeldLabel] = {}
    regraded: dict[tuple[int, str], list[int]] = {}
    for pair, wanted in plan.writes.items():
        label = plan.existing.get(pair)
        if label is not None:
            held[label.pk] = label
            if wanted is not None:
                regraded.setdefault(wanted, []).append(label.pk)
    labels = [
        FrozenLabel(pk=pk, query_id=q, document_id=d, grade=wanted[0], version=version, source=wanted[1])
        for pk, (q, d, wanted) in zip(ids_reserved(FrozenLabel, len(new)), new, strict=True)
    ]
    # Pairs not pooled when the plan read the set (whose pool size the transaction checks): all new.
    pools: dict[int, list[PoolEntry]] = {}
    for query_id, doc_id in plan.changes.pools:
        pools.setdefault(pks[query_id], []).append(PoolEntry(documents[doc_id], JUDGED_SYSTEM, None))
    candidates = list(pool_merged(pools, {})[0].values())
    created = [
        Query(pk=pks[query_id], golden_set=golden_set, external_id=query_id, **values)
        for query_id, values in plan.created.items()
    ]
    updated = [(plan.queries[query_id], values) for query_id, values in plan.updates.items()]
    keyed = []
    for doc_id, key in plan.changes.keys:
        doc = copy.copy(documents[doc_id])
        doc.key = key
        keyed.append(doc)
    undo: dict[str, Any] = {
        "labels": [[label.query_id, label.document_id, label_state(label)] for label in held.values()]
        + [[q, d, None] for q, d, _ in new],
        "queries": [[row.pk, {name: getattr(row, name) for name in values}] for row, values in updated],
        "created": [row.pk for row in created],
        "keys": [[doc.pk, doc.key] for doc in keyed],
        "set": {name: getattr(golden_set, name) for name in plan.set_values},
        "candidates": sorted([c.query_id, c.document_id] for c in candidates),
        "reopened": 0,
    }
    reason = f"golden file import {plan.source} (version {version})"
    # The rows it writes are its own until it commits (inserted, or locked once compared with the plan):
    # the set read again under its lock is the rest.
    skipped = Skipped(
        labels=frozenset(held) | {label.pk for label in labels},  # held: locked, then changed
        queries=frozenset(row.pk for row in created) | {row.pk for row, _ in updated},
        documents=frozenset(doc.pk for doc in keyed),
    )
    return ImportRows(
        queries=prepared(Query, created, with_pk=True),
        labels=prepared(FrozenLabel, labels, with_pk=True),
        held=held,
        regraded=regraded,
        version=version,
        candidates=prepared(Candidate, candidates),
        query_writes=query_writes(updated, by=None, reason=reason),
        query_rows={row.pk: _state_of(row, QUERY_STATE) for row, _ in updated},
        keys=update_prepared(Document, ["key"], keyed),
        key_rows={doc.pk: _state_of(documents[doc.doc_id], DOCUMENT_STATE) for doc in keyed},
        undo=undo,
        skipped=skipped,
        state=plan.state.without(skipped)._replace(candidates=plan.state.candidates + len(candidates)),
    )


def _state_of(row: Any, names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(getattr(row, name) for name in names)


def import_write(rows: ImportRows) -> int:
    """Write an import's rows (`import_rows`), in its transaction before the set's lock: first the rows it
    changes are locked and compared with what the plan read, then the inserts, updates and deletes, a few
    statements whatever their number of rows. Raises Stale, writing nothing, when one of them is not as
    the plan read it; returns how many assignments of returning queries reopened."""
    held = {pk: tuple(label) for pk, label in rows.held.items()}
    for model, wanted, names in (
        (FrozenLabel, held, HeldLabel._fields),
        (Query, rows.query_rows, QUERY_STATE),
        (Document, rows.key_rows, DOCUMENT_STATE),
    ):
        if wanted:
            found = model._base_manager.select_for_update().filter(pk__in=id_list(wanted))
            if {row[0]: row for row in found.values_list(*names)} != wanted:
                raise Stale
    version = rows.version
    regraded = {pk for pks in rows.regraded.values() for pk in pks}
    gone = [pk for pk in rows.held if pk not in regraded]
    if gone:
        FrozenLabel.objects.filter(pk__in=id_list(gone)).delete()
    for (grade, source), pks in rows.regraded.items():
        FrozenLabel.objects.filter(pk__in=id_list(pks)).update(
            grade=grade, version=version, source=source, judge=None, judge_name=""
        )
    prepared_insert(rows.queries)
    prepared_insert(rows.labels)
    # A labelled document needs no rater: finished work is not reopened for it.
    prepared_insert(rows.candidates)
    prepared_update(rows.keys)
    return query_writes_run(rows.query_writes)


def settings_write(golden_set: GoldenSet, values: dict[str, Any]) -> None:
    """The set's own settings (k, the cutoff, the frozen version) set: the last write, under its lock."""
    if values:
        for name, value in values.items():
            setattr(golden_set, name, value)
        golden_set.save(update_fields=list(values))


def chunks(values: list[int], size: int = 10_000) -> list[list[int]]:
    return [values[start : start + size] for start in range(0, len(values), size)]


def label_state(label: FrozenLabel | HeldLabel) -> list[Any]:
    return [label.grade, label.version, label.source, label.judge_id, label.judge_name]
