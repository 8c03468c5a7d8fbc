"""The confirmation's and the undo's transactions (docs/labeling.md, "Imports"): what they hold the set's
lock for, and what the undo deletes.

- The undo deletes the queries an import created and the candidates it added with everything Django's
  delete would take with them, in statements over subqueries (`golden_io.services.cascade_delete`): held
  to Django's own delete on every table of every app, row by row; an undo leaves every table as it was
  before the import, work done since on the created queries gone with them, and no row anywhere refers to
  a row that is gone.
- The statements run while the set's lock is held are as many for an import of 40 queries as for one of
  4 (on PostgreSQL only reads and the set's own row: the rows are written before the lock is taken).
- On PostgreSQL, with the confirmation or the undo held after writing its rows (before it takes the set's
  lock) or holding the lock, a rater's grade save in the same set waits for nothing (a lock timeout of a
  second would fail it), and another transaction may take the set's lock while the rows are written, not
  while it is held. An import that finds the set's lock held when it needs it gives up its transaction at
  once and waits for the lock in the classic order, then writes in full.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.db import OperationalError, connection, transaction
from django.db.models import Model, ProtectedError

from assay.golden.format import dump_json
from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale
from golden_io import services
from golden_io.models import GoldenImport
from golden_io.services import import_writing
from labeling import services as labeling_services
from labeling.models import (
    Assignment,
    Candidate,
    CantJudgeMark,
    DisputeCheck,
    Document,
    FrozenLabel,
    GoldenSet,
    GoldItem,
    JudgeAnswer,
    JudgeJob,
    JudgeJobItem,
    JudgmentEvent,
    LabelProposal,
    Query,
    TierMove,
)
from labeling.models import Judgment as Grade
from tests import factories
from tests.support.judge_labels import label, make_judge
from tests.support.rich_set import rich_set
from tests.support.threads import backend_state, grade_saved_while

pytestmark = pytest.mark.django_db

# ----------------------------------------------------------------------------------------------- helpers


def _file(
    golden_set: GoldenSet, queries: int, docs: list[str], *, version: str = "v2", shift: int = 0
) -> bytes:
    """A golden file of `queries` new queries (q-2000...), each judged on every one of `docs` (the grades
    moved by `shift`)."""
    rubric = golden_set.rubric
    return dump_json(
        GoldenFile(
            version=version,
            queries=tuple(
                GoldenQuery(
                    f"q-{2000 + i}",
                    f"new query {i}",
                    tuple(Judgment(doc, (i + j + shift) % 4) for j, doc in enumerate(docs)),
                )
                for i in range(queries)
            ),
            k=golden_set.k,
            relevant_min_grade=golden_set.relevant_min_grade,
            scale=Scale(rubric.scale_min, rubric.scale_max),
            rubric=str(rubric),
        )
    )


def _confirmed(golden_set: GoldenSet, data: bytes) -> GoldenImport:
    report, changes, record = services.golden_import_preview(
        golden_set=golden_set, data=data, source="new.json", by=None
    )
    assert record is not None and changes is not None, report.problems
    written, _ = services.golden_import_confirm(record=record, digest=changes.digest())
    assert written.ok, written.problems
    record.refresh_from_db()
    return record


def _models() -> list[type[Model]]:
    """Every table of every app (the many-to-many tables too)."""
    return [m for m in apps.get_models(include_auto_created=True) if m._meta.managed]


def _tables(*, leave_out: tuple[type[Model], ...] = ()) -> dict[str, list[str]]:
    """Every row of every table but its pk, sorted: a row deleted and written again as it was is the same
    row (the undo writes back the labels an import changed)."""
    tables = {}
    for model in _models():
        if model in leave_out:
            continue
        pk = model._meta.pk
        names = [f.attname for f in model._meta.concrete_fields if f is not pk]
        tables[model._meta.label] = sorted(repr(row) for row in model._base_manager.values_list(*names))
    return tables


def _orphans() -> dict[str, int]:
    """Rows that refer (a foreign key, one-to-one, or a many-to-many table's row) to a row that is not there,
    by table and field: none, ever (the tests run in a transaction, whose foreign keys are checked only
    at its commit)."""
    found = {}
    for model in _models():
        for field in model._meta.concrete_fields:
            if not field.is_relation or field.related_model is None:
                continue
            target: Any = field.related_model
            fk: Any = field
            rows = model._base_manager.exclude(**{f"{field.attname}__isnull": True}).exclude(
                **{f"{field.attname}__in": target._base_manager.values(fk.target_field.attname)}
            )
            if n := rows.count():
                found[f"{model._meta.label}.{field.name}"] = n
    return found


class Judging:
    """A judge of the set, a job of it and an answer, made before the rows that refer to queries."""

    def __init__(self, golden_set: GoldenSet) -> None:
        self.judge = make_judge(golden_set, "m")
        self.job = JudgeJob.objects.create(judge=self.judge, total=1, done=1)
        self.answer = JudgeAnswer.objects.create(
            model="m",
            prompt_hash="p" * 64,
            query_hash="q" * 64,
            document_hash="d" * 64,
            grade=1,
            job=self.job,
        )


def _work_on(query: Query, rater: User, reviewer: User, judging: Judging) -> None:
    """What people and judges leave on a query without grading it: an assignment scoped to a candidate,
    with a can't-judge mark and its event, a tier move, a dispute check, a gold item, an adjudication, a
    judge's label and a judge job's item answered."""
    candidate = query.candidates.order_by("pk").first()
    assert candidate is not None
    doc = candidate.document
    assignment = factories.AssignmentFactory.create(query=query, rater=rater)
    assignment.scope.add(candidate)
    CantJudgeMark.objects.create(assignment=assignment, document=doc, reason="broken")
    JudgmentEvent.objects.create(assignment=assignment, document=doc, rater=rater, new_cant_judge="broken")
    TierMove.objects.create(query=query, from_tier="core", to_tier="core", reason="looked at")
    DisputeCheck.objects.create(query=query, fingerprint="f", disputed=False)
    GoldItem.objects.create(query=query, document=doc, grade=2, by=reviewer)
    factories.AdjudicationFactory.create(query=query, document=doc, reviewer=reviewer)
    label(judging.judge, query, doc, 1)
    JudgeJobItem.objects.create(
        job=judging.job, index=query.pk, query=query, document=doc, done=True, answer=judging.answer
    )


# ------------------------------------------------------------------------------------- what the undo deletes


def _graded(query: Query, rater: User) -> Grade:
    """A graded assignment of the query, its judgment's event, and a proposal on it."""
    doc = query.candidates.order_by("pk").first().document  # type: ignore[union-attr]
    assignment = factories.AssignmentFactory.create(query=query, rater=rater)
    judgment = factories.grade(assignment, doc, 2)
    JudgmentEvent.objects.create(
        judgment=judgment, assignment=assignment, document=doc, rater=rater, new_grade=2
    )
    LabelProposal.objects.create(
        query=query, document=doc, judgment=judgment, rater=rater, from_grade=3, to_grade=2
    )
    return judgment


@pytest.mark.parametrize("what", ["queries", "candidates"])
def test_the_cascade_deletes_what_djangos_delete_deletes(
    what: str, alice: User, bob: User, rita: User
) -> None:
    """Queries with every kind of row that refers to them (grades, proposals and events among them), or
    their candidates (scoped assignments refer to those): Django's delete, rolled back, and
    `cascade_delete` leave every table the same, and count the same rows deleted per model."""
    golden_set = factories.GoldenSetFactory.create()
    judging = Judging(golden_set)
    queries = [factories.pooled_query(golden_set, 3) for _ in range(3)]
    for query in queries:
        _work_on(query, alice, rita, judging)
    _graded(queries[0], bob)
    _graded(queries[1], bob)
    model: type[Model] = Query if what == "queries" else Candidate
    pks = sorted(
        [q.pk for q in queries[:2]]
        if what == "queries"
        else Candidate.objects.filter(query__in=queries).values_list("pk", flat=True)
    )

    with transaction.atomic():
        _, counted = model._base_manager.filter(pk__in=pks).delete()
        django = _tables()
        transaction.set_rollback(True)
    deleted = services.cascade_delete(model, pks)

    assert _tables() == django
    assert deleted == {label: n for label, n in counted.items() if n}
    assert _orphans() == {}


def test_a_row_that_protects_what_the_cascade_reaches_refuses_it_as_djangos_delete_does(
    alice: User, rita: User
) -> None:
    """A proposal accepted as an adjudication protects it (on_delete PROTECT): Django's delete of the
    query refuses, and so does `cascade_delete`, which leaves it to Django; nothing is deleted."""
    golden_set = factories.GoldenSetFactory.create()
    query = factories.pooled_query(golden_set, 2)
    judgment = _graded(query, alice)
    adjudication = factories.AdjudicationFactory.create(
        query=query, document=judgment.document, reviewer=rita
    )
    LabelProposal.objects.filter(judgment=judgment).update(adjudication=adjudication, status="accepted")
    before = _tables()

    with pytest.raises(ProtectedError):
        services.cascade_delete(Query, [query.pk])

    assert _tables() == before


def test_the_cascade_runs_as_many_statements_for_many_rows_as_for_few(alice: User, rita: User) -> None:
    """Its statements are one per relation, whatever the number of rows."""
    from django.test.utils import CaptureQueriesContext

    golden_set = factories.GoldenSetFactory.create()
    judging = Judging(golden_set)
    counts = []
    for n in (2, 12):
        queries = [factories.pooled_query(golden_set, 3) for _ in range(n)]
        for query in queries:
            _work_on(query, alice, rita, judging)
        with CaptureQueriesContext(connection) as captured:
            services.cascade_delete(Query, [q.pk for q in queries])
        counts.append(len(captured))
    assert counts[0] == counts[1]


def test_an_undo_leaves_every_table_as_before_the_import(alice: User, rita: User) -> None:
    """A file creating queries (their labels and pool candidates), regrading a label and adding one to a
    query the set has; work done since on the created queries (assignments, marks, events, tier moves,
    checks, gold items, adjudications, judges' labels and items, none of it a grade). The undo leaves
    every table of every app as it was before the import (but the import's own record), and no row
    referring to a row that is gone."""
    golden_set = rich_set()
    golden_set.raters.add(alice)
    labeling_services.pool_add_judged(golden_set=golden_set)  # labelled pairs stay pooled after an undo
    judging = Judging(golden_set)
    before = _tables(leave_out=(GoldenImport,))
    rubric = golden_set.rubric
    data = dump_json(
        GoldenFile(
            version="v2",
            queries=(
                GoldenQuery("q-0001", "cancel plan", (Judgment("d1", 1), Judgment("d4", 2))),
                *(
                    GoldenQuery(f"q-{2000 + i}", f"new query {i}", (Judgment("d1", 2), Judgment("d5", 1)))
                    for i in range(4)
                ),
            ),
            k=golden_set.k,
            relevant_min_grade=golden_set.relevant_min_grade,
            scale=Scale(rubric.scale_min, rubric.scale_max),
            rubric=str(rubric),
        )
    )
    record = _confirmed(golden_set, data)
    created = Query.objects.filter(golden_set=golden_set, external_id__startswith="q-2")
    assert created.count() == 4 and Candidate.objects.filter(query__in=created).count() == 8
    for query in created:
        _work_on(query, alice, rita, judging)

    report, plan = services.golden_import_undo(record=record, by=rita)

    assert report.ok, report.problems
    assert (plan.changes.queries_removed, plan.kept) == ([f"q-{2000 + i}" for i in range(4)], [])
    assert _tables(leave_out=(GoldenImport,)) == before
    assert _orphans() == {}


# ------------------------------------------------------------------------------ what runs under the lock


@contextmanager
def _under_the_lock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The statements run from the moment the set's lock is taken (the real function, wrapped) to the end
    of the transaction, of each import or undo in the block, in one list."""
    seen: list[str] = []
    held = {"on": False}
    take = import_writing._set_lock

    def taking(golden_set: GoldenSet) -> None:
        take(golden_set)
        held["on"] = True

    written = import_writing.set_written

    def writing(golden_set: GoldenSet, write: Callable[[Callable[[], None]], Any]) -> Any:
        try:
            return written(golden_set, write)
        finally:
            held["on"] = False

    def recorded(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if held["on"]:
            seen.append(sql)
        return execute(sql, params, many, context)

    monkeypatch.setattr(import_writing, "_set_lock", taking)
    for module in ("imports", "import_undo"):
        monkeypatch.setattr(f"golden_io.services.{module}.set_written", writing)
    with connection.execute_wrapper(recorded):
        yield seen


def _small_set(slug: str) -> tuple[GoldenSet, list[str]]:
    golden_set = factories.GoldenSetFactory.create(slug=slug)
    docs = [factories.DocumentFactory.create(golden_set=golden_set, doc_id=f"d{i}").doc_id for i in range(3)]
    return golden_set, docs


def test_what_runs_under_the_lock_does_not_grow_with_the_import(
    monkeypatch: pytest.MonkeyPatch, rita: User
) -> None:
    """An import of 4 new queries and one of 40 (3 labels and candidates each), each confirmed, then a
    file regrading them all, then both undone: as many statements under the set's lock for either size;
    on PostgreSQL none of them writes a label, a query or a candidate (only reads, the set's own row and
    the transaction's settings given back to the test's transaction)."""
    counts = []
    for n in (4, 40):
        golden_set, docs = _small_set(f"size-{n}")
        with _under_the_lock(monkeypatch) as seen:
            first = _confirmed(golden_set, _file(golden_set, n, docs))
            confirm = len(seen)
            regraded = _confirmed(golden_set, _file(golden_set, n, docs, version="v3", shift=1))
            regrade = len(seen) - confirm
            for record in (regraded, first):
                report, _ = services.golden_import_undo(record=record, by=rita)
                assert report.ok, report.problems
        counts.append((confirm, regrade, len(seen) - confirm - regrade))
        assert not Query.objects.filter(golden_set=golden_set).exists()
        if connection.vendor == "postgresql":
            # Reads, the set's own row, the settings given back to the test's transaction, savepoints.
            writes = [
                sql
                for sql in seen
                if not sql.startswith(
                    ("SELECT", "SET ", 'UPDATE "labeling_goldenset"', "SAVEPOINT", "RELEASE")
                )
            ]
            assert writes == []
    assert counts[0] == counts[1]


# ------------------------------------------------------------------------ a rater meanwhile (PostgreSQL)


def _backend() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _set_lock_free(golden_set: GoldenSet) -> bool:
    """Could another transaction take the set's row lock now (without waiting)?"""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM labeling_goldenset WHERE id = %s FOR NO KEY UPDATE NOWAIT", [golden_set.pk]
            )
        return True
    except OperationalError:
        return False


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("stage", ["rows written, lock not taken", "lock held"])
@pytest.mark.parametrize("step", ["confirm", "undo"])
def test_a_grade_saved_while_an_import_is_written_waits_for_nothing(
    golden_set: GoldenSet,
    assignment: Assignment,
    step: str,
    stage: str,
    monkeypatch: pytest.MonkeyPatch,
    rita: User,
) -> None:
    """On PostgreSQL, two connections: the confirmation's or the undo's (a thread) is held once it has
    written its rows, before it takes the set's lock, or once it holds it (the real lock function,
    wrapped); the test's saves a rater's grade in the same set with a lock timeout of one second, and
    tries the set's lock without waiting. The grade is saved while the import is held; the set's lock is
    free while the rows are written and held only at the end. Then the import goes on and is written."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL (on SQLite the transaction holds the database's write lock)")
    docs = list(Document.objects.filter(golden_set=golden_set).values_list("doc_id", flat=True))
    data = _file(golden_set, 20, docs[:3])
    record = _confirmed(golden_set, data) if step == "undo" else None
    reached, released = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}
    take = import_writing._set_lock

    def paused(locked: GoldenSet) -> None:
        if stage == "lock held":
            take(locked)
        seen["pid"] = _backend()
        reached.set()
        assert released.wait(timeout=60)
        if stage != "lock held":
            take(locked)

    monkeypatch.setattr(import_writing, "_set_lock", paused)
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            if record is None:
                report, changes, preview = services.golden_import_preview(
                    golden_set=GoldenSet.objects.get(pk=golden_set.pk), data=data, source="new.json", by=None
                )
                assert preview is not None and changes is not None, report.problems
                report, _ = services.golden_import_confirm(record=preview, digest=changes.digest())
            else:
                report, _ = services.golden_import_undo(
                    record=GoldenImport.objects.get(pk=record.pk), by=rita
                )
            result["problems"] = report.problems
        except Exception as exc:  # reported below, not lost in the thread
            result["error"] = exc
        finally:
            connection.close()

    candidate = assignment.query.candidates.order_by("best_rank").first()
    assert candidate is not None
    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert reached.wait(timeout=120)
        free = _set_lock_free(golden_set)
        state = backend_state(seen["pid"])
        saved_while_held = grade_saved_while(thread, assignment, candidate)
    finally:
        released.set()
        thread.join(timeout=120)
    assert (state, saved_while_held, free) == ("idle in transaction", True, stage != "lock held")
    assert Grade.objects.get(assignment=assignment, document=candidate.document).grade == 2
    assert "error" not in result, result.get("error")
    assert result["problems"] == []
    created = Query.objects.filter(golden_set=golden_set, external_id__startswith="q-2")
    assert created.count() == (20 if step == "confirm" else 0)


def _confirm_in_thread(record: GoldenImport, digest: str, result: dict[str, Any]) -> threading.Thread:
    """The confirmation of `record` on a thread of its own (its own connection); its problems or its
    error in `result`."""

    def run() -> None:
        try:
            written, _ = services.golden_import_confirm(
                record=GoldenImport.objects.get(pk=record.pk), digest=digest
            )
            result["problems"] = [p.code for p in written.problems]
        except Exception as exc:  # reported by the test, not lost in the thread
            result["error"] = exc
        finally:
            connection.close()

    return threading.Thread(target=run)


@contextmanager
def _lock_tries(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The backend of each try of the set's lock (the real function, wrapped)."""
    tries: list[int] = []
    take = import_writing._set_lock

    def tried(locked: GoldenSet) -> None:
        tries.append(_backend())
        take(locked)

    monkeypatch.setattr(import_writing, "_set_lock", tried)
    yield tries


def _until(condition: Callable[[], bool], thread: threading.Thread) -> bool:
    for _ in range(1200):
        if condition():
            return True
        thread.join(timeout=0.05)
    return False


def _locks_on(pid: int, table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
            " WHERE l.pid = %s AND c.relname = %s",
            [pid, table],
        )
        return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_an_import_that_finds_the_set_locked_tries_again_with_its_rows_written(
    golden_set: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL another transaction holds the set's lock (as a freeze or a baseline's promotion
    does) while a confirmation writes its rows: the confirmation tries the lock again and again, its rows
    written and kept; once the holder commits, it takes the lock and commits."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL")
    docs = [factories.DocumentFactory.create(golden_set=golden_set, doc_id=f"d{i}").doc_id for i in range(3)]
    report, changes, record = services.golden_import_preview(
        golden_set=golden_set, data=_file(golden_set, 10, docs), source="new.json", by=None
    )
    assert record is not None and changes is not None, report.problems
    result: dict[str, Any] = {}
    thread = _confirm_in_thread(record, changes.digest(), result)
    with _lock_tries(monkeypatch) as tries:
        with transaction.atomic():
            GoldenSet.objects.select_for_update(no_key=True).get(pk=golden_set.pk)  # as a freeze does
            thread.start()
            trying = _until(lambda: len(tries) >= 3, thread)
            written = _locks_on(tries[0], "labeling_frozenlabel") if tries else 0
        thread.join(timeout=120)
    assert trying and written  # the same transaction, its labels written, tried the lock three times
    assert "error" not in result, result.get("error")
    assert result["problems"] == []
    assert len(set(tries)) == 1  # one backend: never rolled back to the classic order
    created = Query.objects.filter(golden_set=golden_set, external_id__startswith="q-2")
    assert created.count() == 10 and FrozenLabel.objects.filter(query__in=created).count() == 30


@pytest.mark.django_db(transaction=True)
def test_an_import_gives_way_to_a_holder_of_the_sets_lock_that_waits_for_its_rows(
    golden_set: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a confirmation regrading labels has written them and tries the set's lock, which
    another transaction holds and, like a freeze, then needs one of those labels: the confirmation gives
    way (no deadlock, the holder's write goes through), then takes the lock in the classic order, finds
    the set changed and writes nothing."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL")
    docs = [factories.DocumentFactory.create(golden_set=golden_set, doc_id=f"d{i}").doc_id for i in range(3)]
    _confirmed(golden_set, _file(golden_set, 5, docs))
    report, changes, record = services.golden_import_preview(
        golden_set=golden_set,
        data=_file(golden_set, 5, docs, version="v3", shift=1),
        source="re.json",
        by=None,
    )
    assert record is not None and changes is not None, report.problems
    label = FrozenLabel.objects.filter(query__golden_set=golden_set).order_by("pk").first()
    assert label is not None
    result: dict[str, Any] = {}
    thread = _confirm_in_thread(record, changes.digest(), result)
    with _lock_tries(monkeypatch) as tries:
        with transaction.atomic():
            GoldenSet.objects.select_for_update(no_key=True).get(pk=golden_set.pk)
            thread.start()
            trying = _until(lambda: len(tries) >= 1, thread)
            with connection.cursor() as cursor:
                cursor.execute(
                    "SET LOCAL lock_timeout = '60s'"
                )  # a failure, not a hang, if it never gave way
            FrozenLabel.objects.filter(pk=label.pk).update(grade=(label.grade + 2) % 4)
        thread.join(timeout=120)
    assert trying
    assert "error" not in result, result.get("error")
    assert result["problems"] == ["stale_preview"]
    assert len(set(tries)) == 1 and len(tries) >= 2  # tried, gave way, then waited for the lock first
    assert FrozenLabel.objects.get(pk=label.pk).grade == (label.grade + 2) % 4
    assert GoldenImport.objects.get(pk=record.pk).status == "previewed"
