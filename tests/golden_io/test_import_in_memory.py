"""An import is checked against the next freeze on the set as its changes would leave it, built in memory
and never written (`ImportPlan.unwritten`, `import_undo_unwritten`: docs/labeling.md, "Integrity holds
across imports"). These tests hold that file to the one the set makes once the changes are written, for
every format and both modes, and for the undo, on a set with people's work of every kind the freeze
reads: two raters who agree, one rater's overturn held as a proposal, a reviewer's adjudication, grades
on work not marked done, a qualified judge's label filling a pool pair, and a retired query the file
brings back, whose closed work reopens."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from assay.convert.formats import upload_formats
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.golden.refusals import checked
from golden_io import selectors, services
from labeling import services as labeling_services
from labeling.models import Assignment, Document, GoldenSet, Query
from labeling.selectors import Unwritten
from tests import factories
from tests.golden_io.test_import_merge import as_file, partial
from tests.support.judge_labels import label, make_judge, qualify
from tests.support.rich_set import rich_set

pytestmark = pytest.mark.django_db

READ = [f.name for f in upload_formats()]
MODES = ["merge", "replace"]


def _working(golden_set: GoldenSet, unwritten: Unwritten | None = None) -> GoldenFile | list[str]:
    """The golden file the next freeze would write (or every reason it would refuse the set)."""
    golden, problems = checked(selectors.working_golden_raw(golden_set=golden_set, unwritten=unwritten))
    return golden if golden is not None else problems


@pytest.fixture
def worked(rita: User, alice: User, bob: User) -> GoldenSet:
    """rich_set with people's work on the pairs the file below names."""
    golden_set = rich_set()
    docs = {d.doc_id: d for d in Document.objects.filter(golden_set=golden_set)}
    cancel, refund = (Query.objects.get(golden_set=golden_set, external_id=q) for q in ("q-0001", "q-0002"))
    # q-0001: two raters agree on d2 (frozen 1) at 2, which no frozen label overrides.
    for kind, rater in (("primary", alice), ("second", bob)):
        work = factories.AssignmentFactory.create(query=cancel, rater=rater, kind=kind, status="done")
        factories.grade(work, docs["d2"], 2)
    # q-0002: one rater's 0 on d1 (frozen 2) is held as a proposal; a reviewer adjudicated d4 at 1; a
    # re-judgment not marked done graded d7, which has no label yet.
    single = factories.AssignmentFactory.create(query=refund, rater=alice, status="done")
    factories.grade(single, docs["d1"], 0)
    factories.AdjudicationFactory.create(query=refund, document=docs["d4"], reviewer=rita, grade=1)
    rejudge = factories.AssignmentFactory.create(query=refund, rater=bob, kind="rejudge", status="open")
    factories.grade(rejudge, docs["d7"], 1)
    # A qualified judge's 2 fills the pool pair (q-0002, d6), which no person labeled.
    factories.CandidateFactory.create(query=refund, document=docs["d6"], provenance=[], best_rank=None)
    judge = make_judge(golden_set, "m1")
    label(judge, refund, docs["d6"], 2)
    qualify(judge, rita)
    # q-0005 was retired while two raters' work on it was open, both grading d3 at 3: it comes back
    # with the file, and their agreed 3 counts again over the file's 2.
    returning = factories.QueryFactory.create(golden_set=golden_set, external_id="q-0005", text="seat limits")
    for kind, rater in (("primary", bob), ("second", alice)):
        open_work = factories.AssignmentFactory.create(query=returning, rater=rater, kind=kind, status="open")
        factories.grade(open_work, docs["d3"], 3)
    factories.FrozenLabelFactory.create(query=returning, document=docs["d5"], grade=1, version="v1")
    labeling_services.query_retire(query=returning, by=rita, reason="out of scope")
    return golden_set


def _file(golden_set: GoldenSet) -> GoldenFile:
    """partial() (q-0002 regraded and new documents, a new query), q-0001's d2 regraded, and the retired
    q-0005 named again."""
    golden = partial(golden_set)
    cancel = GoldenQuery("q-0001", "cancel plan", (Judgment("d2", 3),))
    returning = GoldenQuery("q-0005", "seat limits", (Judgment("d3", 2),))
    return replace(golden, queries=(cancel, *golden.queries, returning))


def _plan(golden_set: GoldenSet, golden: GoldenFile, name: str, mode: str, tmp_path: Path) -> Unwritten:
    data, fmt, source = as_file(golden, name, tmp_path)
    report, parsed = services.file_read(
        golden_set=golden_set, data=data, source=source, web_limits=False, fmt=fmt
    )
    assert parsed is not None, report.problems
    plan = services.import_plan(golden_set=golden_set, golden=parsed, fmt=fmt, mode=mode, report=report)
    assert plan is not None and not plan.changes.empty, report.problems
    return plan.unwritten(golden_set)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", READ)
def test_the_set_built_in_memory_is_the_set_the_import_writes(
    worked: GoldenSet, name: str, mode: str, tmp_path: Path
) -> None:
    golden = _file(worked)
    before = _working(worked)
    expected = _working(worked, _plan(worked, golden, name, mode, tmp_path))
    assert expected != before

    data, fmt, source = as_file(golden, name, tmp_path)
    report = services.golden_import(golden_set=worked, data=data, source=source, fmt=fmt, mode=mode)

    assert report.ok, report.problems
    assert _working(worked) == expected
    assert Assignment.objects.filter(query__external_id="q-0005", status="open").count() == 2
    assert isinstance(expected, GoldenFile)
    assert expected.query("q-0005").judgments[0].grade == 3


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["golden", "quepid-csv"])
def test_the_set_built_in_memory_is_the_set_the_undo_writes(
    worked: GoldenSet, name: str, mode: str, rita: User, tmp_path: Path
) -> None:
    before = _working(worked)
    data, fmt, source = as_file(_file(worked), name, tmp_path)
    assert services.golden_import(golden_set=worked, data=data, source=source, fmt=fmt, mode=mode).ok
    record = services.import_undoable(golden_set=worked)
    assert record is not None
    expected = _working(worked, services.import_undo_unwritten(record))

    report, _ = services.golden_import_undo(record=record, by=rita)

    assert report.ok, report.problems
    assert _working(worked) == expected
    # The undo restores the labels and fields; q-0005 is retired again (its returning is undone).
    assert isinstance(before, GoldenFile) and isinstance(expected, GoldenFile)
    assert [q.id for q in expected.queries] == [q.id for q in before.queries]


def test_a_refusal_is_read_off_the_set_as_the_changes_would_leave_it(
    worked: GoldenSet, tmp_path: Path
) -> None:
    """The file grades 0 every label of the critical q-0002 it names. Replacing drops the frozen 3 of d4,
    which it does not name; people's work still keeps q-0002 relevant (the adjudicated d4 at 1, the
    judge's d6 at 2), so it is not refused: what decides is the set as the changes leave it, not the
    file. Without that work, replacing leaves q-0002 nothing relevant and is refused in words naming it;
    merging keeps d4's 3 and is not."""
    zeroes = GoldenQuery("q-0002", "refund guarantee", (Judgment("d1", 0), Judgment("d5", 0)))
    golden = replace(partial(worked), queries=(zeroes,))
    data, fmt, source = as_file(golden, "quepid-csv", tmp_path)  # the text only: q-0002 stays critical

    def preview(mode: str) -> list[str]:
        report, _, record = services.golden_import_preview(
            golden_set=worked, data=data, source=source, by=None, fmt=fmt, mode=mode
        )
        assert (record is None) == (not report.ok)
        if record is not None:
            services.golden_import_discard(record=record)
        return [p.message for p in report.problems]

    assert preview("merge") == preview("replace") == []
    refund = worked.queries.get(external_id="q-0002")
    refund.adjudications.all().delete()
    refund.judge_labels.all().delete()
    assert preview("merge") == []
    assert preview("replace") == [
        "the next freeze would refuse the set afterwards: critical: a critical query needs a "
        'judgment at grade >= 1 (the gate checks where its best document ranks) (query "q-0002")'
    ]
