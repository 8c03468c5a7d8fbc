"""An import changes only what its file names (docs/labeling.md, "Imports"): for every format a partial file
into a set with labels and rich query fields, merged and replaced, checked against a full dump of the set;
every format's export of a version imports back as "nothing would change"; a preview writes nothing; an
undo gives back the set exactly; no import leaves the set in a state the next freeze refuses."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from assay.convert.formats import FORMATS, GOLDEN_FORMATS, upload_formats
from assay.convert.options import Options
from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale
from golden_io import services
from golden_io.foreign import JudgmentsFormat
from golden_io.models import GoldenImport
from golden_io.services import imports
from labeling.models import Candidate, Document, FrozenLabel, GoldenSet, Query
from tests.support.rich_set import dump, rich_set

pytestmark = pytest.mark.django_db

READ = [f.name for f in upload_formats()]
MODES = ["merge", "replace"]


# --------------------------------------------------------------------------------------------- the set


@pytest.fixture
def gset() -> GoldenSet:
    return rich_set()


def _labels(golden_set: GoldenSet) -> dict[tuple[str, str], int]:
    return {
        (q, d): g
        for q, d, g in FrozenLabel.objects.filter(query__golden_set=golden_set).values_list(
            "query__external_id", "document__doc_id", "grade"
        )
    }


def _fields(golden_set: GoldenSet) -> dict[str, dict[str, Any]]:
    return {row["external_id"]: dict(row) for row in Query.objects.filter(golden_set=golden_set).values()}


# --------------------------------------------------------------------------------------------- files


def as_file(golden: GoldenFile, name: str, tmp_path: Path) -> tuple[bytes, JudgmentsFormat, str]:
    """The golden file written in format `name` by assay.convert's writer (the command's code): the
    upload's bytes, how to read it, and its file name. BEIR is zipped; TREC qrels come with topics."""
    out = tmp_path / name
    topics = tmp_path / "topics.tsv" if name == "trec-qrels" else None
    files = FORMATS[name].write(
        golden, out / "judgments" if FORMATS[name].folder else out, Options(topics=topics)
    )
    if FORMATS[name].folder:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for path, body in files.items():
                archive.writestr(str(path.relative_to(out)), body)
        return buffer.getvalue(), JudgmentsFormat(name=name), f"{name}.zip"
    fmt = JudgmentsFormat(name=name, topics=("topics.tsv", files[topics]) if topics else None)
    return files[out], fmt, name


def partial(golden_set: GoldenSet) -> GoldenFile:
    """Six rows, as the file that once wiped 477 labels: a regrade and two new documents for the
    critical "refund guarantee" (q-0002), and a query the set does not have."""
    rubric = golden_set.rubric
    refund = GoldenQuery(
        id="q-0002",
        text="refund guarantee",
        judgments=(
            Judgment("d1", 3),
            Judgment("d4", 3),
            Judgment("d5", 0),
            Judgment("d6", 1),
            Judgment("d7", 2),
        ),
    )
    new = GoldenQuery(id="q-0100", text="gift cards", judgments=(Judgment("d8", 2),))
    return GoldenFile(
        version="v2",
        queries=(refund, new),
        k=golden_set.k,
        relevant_min_grade=golden_set.relevant_min_grade,
        scale=Scale(rubric.scale_min, rubric.scale_max),
        rubric=str(rubric),
    )


def _import(golden_set: GoldenSet, golden: GoldenFile, name: str, tmp_path: Path, mode: str) -> Any:
    data, fmt, source = as_file(golden, name, tmp_path)
    return services.golden_import(golden_set=golden_set, data=data, source=source, fmt=fmt, mode=mode)


# --------------------------------------------------------------------------------------------- merge


@pytest.mark.parametrize("name", READ)
def test_a_merge_changes_only_the_pairs_the_file_names(gset: GoldenSet, name: str, tmp_path: Path) -> None:
    before_labels, before_fields = _labels(gset), _fields(gset)
    report = _import(gset, partial(gset), name, tmp_path, "merge")
    assert report.ok, report.problems

    new_id = Query.objects.get(golden_set=gset, text="gift cards").external_id
    expected = dict(before_labels)
    expected |= {("q-0002", "d1"): 3, ("q-0002", "d6"): 1, ("q-0002", "d7"): 2, (new_id, "d8"): 2}
    assert _labels(gset) == expected
    assert (report.counts["labels added"], report.counts["labels changed"]) == (3, 1)
    assert (report.counts["labels removed"], report.counts["queries created"]) == (0, 1)
    # No query the set had changes a single field: what the file leaves out (or cannot carry) is kept.
    after = _fields(gset)
    assert {q: after[q] for q in before_fields} == before_fields
    assert report.counts["query fields changed"] == 0


@pytest.mark.parametrize("name", READ)
def test_a_replace_makes_the_sets_labels_the_files_and_counts_what_it_removes(
    gset: GoldenSet, name: str, tmp_path: Path
) -> None:
    before_fields = _fields(gset)
    golden = partial(gset)
    data, fmt, source = as_file(golden, name, tmp_path)
    _, changes, record = services.golden_import_preview(
        golden_set=gset, data=data, source=source, by=None, fmt=fmt, mode="replace"
    )
    assert changes is not None and record is not None
    # Said before it runs: the eleven labels less the three pairs the file names again.
    assert changes.counts()["labels removed"] == 8
    report, _ = services.golden_import_confirm(record=record, digest=changes.digest())
    assert report.ok, report.problems
    new_id = Query.objects.get(golden_set=gset, text="gift cards").external_id
    assert _labels(gset) == {
        ("q-0002", "d1"): 3,
        ("q-0002", "d4"): 3,
        ("q-0002", "d5"): 0,
        ("q-0002", "d6"): 1,
        ("q-0002", "d7"): 2,
        (new_id, "d8"): 2,
    }
    after = _fields(gset)
    carried = set(FORMATS[name].carries)
    for query_id, fields in before_fields.items():
        for field, value in fields.items():
            if query_id != "q-0002" or field not in carried:
                assert after[query_id][field] == value, (query_id, field)
    if name in GOLDEN_FORMATS:  # it carries every field: what the file leaves empty is emptied
        assert (after["q-0002"]["stratum"], after["q-0002"]["critical"]) == ("", False)


# --------------------------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", READ)
def test_a_versions_export_in_every_format_imports_back_as_nothing_to_change(
    gset: GoldenSet, name: str, mode: str, rita: User, tmp_path: Path
) -> None:
    Query.objects.filter(golden_set=gset, external_id="q-0004").update(expect_empty=False)
    version = services.golden_version_freeze(golden_set=gset, by=rita, name="v1.1")
    before = dump(gset)
    data, fmt, source = as_file(version.golden(), name, tmp_path)

    report, changes, record = services.golden_import_preview(
        golden_set=gset, data=data, source=source, by=rita, fmt=fmt, mode=mode
    )

    assert report.ok, report.problems
    assert changes is not None and changes.empty, changes
    assert "The file would change nothing: nothing was written." in report.notes
    assert record is None and not GoldenImport.objects.exists()
    assert dump(gset) == before


# --------------------------------------------------------------------------------------------- preview, undo


def test_a_preview_writes_nothing_and_a_stale_one_is_not_written(gset: GoldenSet, tmp_path: Path) -> None:
    before = dump(gset)
    data, fmt, source = as_file(partial(gset), "quepid-csv", tmp_path)
    _, changes, record = services.golden_import_preview(
        golden_set=gset, data=data, source=source, by=None, fmt=fmt
    )
    assert changes is not None and record is not None
    assert dump(gset) == before
    # The set changes before the confirmation: the file would now do something else; nothing is written.
    FrozenLabel.objects.filter(query__external_id="q-0002", document__doc_id="d1").update(grade=3)
    changed = dump(gset)
    report, _ = services.golden_import_confirm(record=record, digest=changes.digest())
    assert [p.code for p in report.problems] == ["stale_preview"]
    assert dump(gset) == changed


CHANGES: dict[str, Any] = {
    "a label": lambda: FrozenLabel.objects.filter(query__external_id="q-0003", document__doc_id="d6").update(
        grade=0
    ),
    "a query's field": lambda: Query.objects.filter(external_id="q-0004").update(tier="challenge"),
    "a document's key": lambda: Document.objects.filter(doc_id="d3").update(key="https://kb/three"),
    "a pool": lambda: Candidate.objects.create(
        query=Query.objects.get(external_id="q-0001"), document=Document.objects.get(doc_id="d4")
    ),
    "the set's k": lambda: GoldenSet.objects.filter(slug="hc").update(k=7),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_set_changed_just_before_the_confirmations_transaction_is_not_written(
    gset: GoldenSet, change: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The confirmation plans the file, checks it and builds its rows outside any transaction; the set
    changes after that, before the transaction (anywhere in the set, not only where the file writes).
    Under the lock it reads the set again, finds it is not as planned, writes nothing and says to
    preview again. The rows are built by the real function; the change is made after it."""
    data, fmt, source = as_file(partial(gset), "golden", tmp_path)
    _, changes, record = services.golden_import_preview(
        golden_set=gset, data=data, source=source, by=None, fmt=fmt
    )
    assert changes is not None and record is not None
    build = imports.import_rows

    def then_changed(golden_set: GoldenSet, plan: Any) -> Any:
        rows = build(golden_set, plan)
        CHANGES[change]()
        return rows

    monkeypatch.setattr(imports, "import_rows", then_changed)
    report, _ = services.golden_import_confirm(record=record, digest=changes.digest())

    assert [p.code for p in report.problems] == ["stale_preview"]
    record.refresh_from_db()
    assert record.status == "previewed"
    assert _labels(gset)[("q-0002", "d1")] == 2  # the file's 3 not written


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["golden", "quepid-csv", "trec-qrels"])
def test_an_undo_gives_the_set_back_exactly(
    gset: GoldenSet, name: str, mode: str, rita: User, tmp_path: Path
) -> None:
    before = dump(gset)
    golden = partial(gset)
    if name == "golden":  # fields too: a tier, a stratum, a key on a document without one
        Document.objects.filter(golden_set=gset, doc_id="d6").update(key=None)
        refund = replace(golden.queries[0], stratum="account", tier="shadow")
        judged = tuple(replace(j, key="https://kb/new") if j.doc_id == "d6" else j for j in refund.judgments)
        golden = replace(golden, queries=(replace(refund, judgments=judged), golden.queries[1]), k=5)
        before = dump(gset)
    report = _import(gset, golden, name, tmp_path, mode)
    assert report.ok, report.problems
    assert dump(gset) != before
    record = services.import_undoable(golden_set=gset)
    assert record is not None and record.status == "applied"

    plan = services.import_undo_plan(record=record)
    assert not plan.changes.empty
    undone, _ = services.golden_import_undo(record=record, by=rita)

    assert undone.ok, undone.problems
    assert dump(gset) == before
    assert services.import_undoable(golden_set=gset) is None
    record.refresh_from_db()
    assert (record.status, record.undone_by) == ("undone", rita)


def test_the_undo_of_a_sets_first_import_leaves_it_as_empty_as_it_was(rita: User, tmp_path: Path) -> None:
    """A set with documents and no query yet: its first import can be undone (a set of no query is not a
    reason the undo brings: the set had none before), and the set is as it was."""
    golden_set = rich_set()
    Query.objects.filter(golden_set=golden_set).delete()
    before = dump(golden_set)
    assert _import(golden_set, partial(golden_set), "golden", tmp_path, "merge").ok
    record = services.import_undoable(golden_set=golden_set)
    assert record is not None

    report, _ = services.golden_import_undo(record=record, by=rita)

    assert report.ok, report.problems
    assert dump(golden_set) == before


def test_an_undo_after_a_freeze_says_the_version_keeps_the_labels(
    gset: GoldenSet, rita: User, tmp_path: Path
) -> None:
    Query.objects.filter(golden_set=gset, external_id="q-0004").update(expect_empty=False)
    _import(gset, partial(gset), "golden", tmp_path, "merge")
    version = services.golden_version_freeze(golden_set=gset, by=rita, name="v2")
    content = version.content_bytes
    record = services.import_undoable(golden_set=gset)
    assert record is not None
    report, plan = services.golden_import_undo(record=record, by=rita)
    assert report.ok, report.problems
    assert plan.versions_since == ["v2"]
    assert any("frozen since the import (v2) keep its labels" in note for note in report.notes)
    version.refresh_from_db()
    assert version.content_bytes == content


def test_only_the_latest_import_is_undone_and_in_order(gset: GoldenSet, rita: User, tmp_path: Path) -> None:
    before = dump(gset)
    _import(gset, partial(gset), "golden", tmp_path, "merge")
    middle = dump(gset)
    first = services.import_undoable(golden_set=gset)
    second_file = replace(
        partial(gset), queries=(GoldenQuery("q-0001", "cancel plan", (Judgment("d1", 0),)),)
    )
    _import(gset, second_file, "golden", tmp_path, "merge")
    assert first is not None
    refused, _ = services.golden_import_undo(record=first, by=rita)
    assert [p.code for p in refused.problems] == ["not_latest"]
    latest = services.import_undoable(golden_set=gset)
    assert latest is not None and latest.pk != first.pk
    assert services.golden_import_undo(record=latest, by=rita)[0].ok
    assert dump(gset) == middle
    assert services.golden_import_undo(record=first, by=rita)[0].ok
    assert dump(gset) == before


# --------------------------------------------------------------------------------------------- integrity


def test_a_replace_that_leaves_a_critical_query_without_a_relevant_label_is_refused_up_front(
    gset: GoldenSet, tmp_path: Path
) -> None:
    before = dump(gset)
    others = replace(partial(gset), queries=(GoldenQuery("q-0001", "cancel plan", (Judgment("d1", 3),)),))
    data, fmt, source = as_file(others, "quepid-csv", tmp_path)
    report, changes, record = services.golden_import_preview(
        golden_set=gset, data=data, source=source, by=None, fmt=fmt, mode="replace"
    )
    assert record is None and changes is not None
    assert [p.code for p in report.problems] == ["freeze_refused"]
    assert "q-0002" in report.problems[0].message
    assert "a critical query needs a judgment at grade >= 1" in report.problems[0].message
    assert dump(gset) == before


def test_a_merge_that_makes_a_critical_querys_only_relevant_label_irrelevant_is_refused(
    gset: GoldenSet, tmp_path: Path
) -> None:
    before = dump(gset)
    zeroes = GoldenQuery("q-0002", "refund guarantee", (Judgment("d1", 0), Judgment("d4", 0)))
    report = _import(gset, replace(partial(gset), queries=(zeroes,)), "golden", tmp_path, "merge")
    assert [p.code for p in report.problems] == ["freeze_refused"]
    assert dump(gset) == before


def test_quepids_rre_export_with_its_queries_at_the_top_level_merges_by_text(gset: GoldenSet) -> None:
    """Quepid's RRE export holds its queries directly (`queries`, each with `placeholders` and its own
    `relevant_documents`): read, and merged onto the set's query of that text."""
    before = _labels(gset)
    rre = {
        "index": "help",
        "id_field": "id",
        "query_placeholder": "$query",
        "queries": [
            {
                "template": "only_q.json",
                "placeholders": {"$query": "refund guarantee"},
                "relevant_documents": {"d1": {"gain": 3}, "d6": {"gain": 1}},
            }
        ],
    }
    data = json.dumps(rre).encode()
    report = services.golden_import(golden_set=gset, data=data, source="rre.json", fmt=JudgmentsFormat("rre"))
    assert report.ok, report.problems
    assert _labels(gset) == before | {("q-0002", "d1"): 3, ("q-0002", "d6"): 1}


@pytest.mark.django_db(transaction=True)
def test_two_confirmations_at_once_write_the_import_once(tmp_path: Path) -> None:
    """A double click or two tabs: two threads confirm one preview on PostgreSQL; one writes, the other is
    told it was confirmed already, and the labels are written once."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    golden_set = rich_set()
    data, fmt, source = as_file(partial(golden_set), "golden", tmp_path)
    _, changes, record = services.golden_import_preview(
        golden_set=golden_set, data=data, source=source, by=None, fmt=fmt
    )
    assert changes is not None and record is not None

    def confirm(_n: int) -> list[str]:
        try:
            report, _ = services.golden_import_confirm(
                record=GoldenImport.objects.get(pk=record.pk), digest=changes.digest()
            )
            return [p.code for p in report.problems]
        finally:
            connection.close()

    with ThreadPoolExecutor(2) as pool:
        outcomes = sorted(pool.map(confirm, range(2)))
    # The other is refused: confirmed already, or (when it read the set after the first wrote) the file
    # would now change other things.
    assert outcomes[0] == [] and outcomes[1] in (["stale"], ["stale_preview"])
    assert GoldenImport.objects.get().status == "applied"
    assert _labels(golden_set)[("q-0002", "d6")] == 1
