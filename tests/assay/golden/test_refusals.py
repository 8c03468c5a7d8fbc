"""What a freeze would refuse in the working labels, read off the golden file they make
(`assay.golden.refusals`): every problem names its query, places are dropped so that a reason reads the
same before and after a query is added ahead of it, and a change is charged only with the reasons it
brings."""

from __future__ import annotations

from dataclasses import replace

from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.golden.refusals import checked, freeze_problems, problems_added

CRITICAL = (
    "critical: a critical query needs a judgment at grade >= 1 (the gate checks where its best "
    'document ranks) (query "q-2")'
)


def _file(*queries: GoldenQuery) -> GoldenFile:
    return GoldenFile(version="working", queries=queries)


def _q(query_id: str, *grades: int, critical: bool = False, expect_empty: bool = False) -> GoldenQuery:
    judgments = tuple(Judgment(f"d{i}", grade) for i, grade in enumerate(grades))
    return GoldenQuery(query_id, f"text {query_id}", judgments, critical=critical, expect_empty=expect_empty)


def test_a_valid_file_comes_back_canonical() -> None:
    golden, problems = checked(_file(_q("q-10", 1), _q("q-2", 0, 3)))
    assert problems == []
    assert golden is not None and [q.id for q in golden.queries] == ["q-2", "q-10"]


def test_each_problem_names_its_query_in_any_order_of_the_queries() -> None:
    spaced = GoldenQuery("q 2", "text", (Judgment("d1", 1),))
    golden, problems = checked(_file(_q("q-10", 1), spaced))
    assert golden is None
    # queries[0] is "q 2" in the file's (natural) order, though the raw file lists it second.
    assert problems == [
        "query q 2: queries[0].id: \"q 2\" contains whitespace or a control character (' '), not allowed "
        "in an id"
    ]


def test_places_are_dropped_so_a_reason_reads_the_same_wherever_its_query_is() -> None:
    lost = _q("q-2", 0, critical=True)
    assert freeze_problems(_file(lost)) == [CRITICAL]
    assert freeze_problems(_file(_q("q-1", 1), lost)) == [CRITICAL]


def test_a_change_is_charged_only_with_the_reasons_it_brings() -> None:
    before = _file(_q("q-1", 1), _q("q-2", 2, critical=True))
    after = replace(before, queries=(before.queries[0], _q("q-2", 0, critical=True)))
    assert problems_added(before, after) == [CRITICAL]
    assert problems_added(after, after) == []  # the set had it already: not the change's
    assert problems_added(after, before) == []
    empty = replace(before, queries=())
    assert freeze_problems(empty) == ["queries: no queries: a golden file needs at least one"]
    assert problems_added(empty, before) == []
    # Emptying a set is a reason of its own, unless allowed (an undo of the set's first import).
    assert problems_added(before, empty) == ["queries: no queries: a golden file needs at least one"]
    assert problems_added(before, empty, empty_allowed=True) == []
