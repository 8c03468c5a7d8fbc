"""Diffing two golden files like tests: what a new golden version adds, retires, relabels and moves."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from assay.golden.diff import (
    FieldChange,
    GoldenDiff,
    JudgmentChange,
    KeyChange,
    QueryEntry,
    SourceChange,
    TierMove,
    diff,
)
from assay.golden.format import from_dict, load, to_dict
from assay.golden.model import GoldenFile
from tests.assay.golden.test_format import GOLDEN
from tests.assay.golden.test_format_properties import GENERATED, golden_dicts


def golden(queries: list[dict[str, Any]], **fields: Any) -> GoldenFile:
    return from_dict({"version": "v1", **fields, "queries": queries})


def q(qid: str, grades: dict[str, int] | None = None, **fields: Any) -> dict[str, Any]:
    judgments = [{"doc_id": doc, "grade": grade} for doc, grade in (grades or {}).items()]
    return {"id": qid, "text": f"text of {qid}", **fields, "judgments": judgments}


def test_a_file_against_itself_is_an_empty_diff() -> None:
    full = load(GOLDEN / "full.json")

    result = diff(full, full)

    assert result.is_empty
    assert all(
        value == 0 for key, value in result.counts.items() if key not in ("old_queries", "new_queries")
    )
    assert result.summary() == "Golden 2026-09-01 -> 2026-09-01 (7 queries): no changes."


def test_a_new_version_label_alone_is_not_a_change() -> None:
    old = golden([q("q-1", {"d": 3})])
    new = from_dict(to_dict(old) | {"version": "v2"})

    result = diff(old, new)

    assert result.is_empty
    assert (result.old_version, result.new_version) == ("v1", "v2")
    assert result.summary() == "Golden v1 -> v2 (1 query): no changes."


def test_it_lists_queries_added_and_retired_in_natural_order() -> None:
    old = golden([q("q-1", {"d": 1}), q("q-2"), q("q-30", {"a": 2, "b": 3})])
    new = golden([q("q-1", {"d": 1}), q("q-10", {"x": 3}), q("q-9"), q("q-100", tier="shadow")])

    result = diff(old, new)

    assert result.queries_added == (
        QueryEntry("q-9", "text of q-9", "core", 0),
        QueryEntry("q-10", "text of q-10", "core", 1),
        QueryEntry("q-100", "text of q-100", "shadow", 0),
    )
    assert result.queries_retired == (
        QueryEntry("q-2", "text of q-2", "core", 0),
        QueryEntry("q-30", "text of q-30", "core", 2),
    )
    # The judgments of added and retired queries are part of those entries, not judgment changes.
    assert result.judgments_added == result.judgments_removed == ()
    assert (result.counts["old_queries"], result.counts["new_queries"]) == (3, 4)


def test_it_lists_each_judgment_added_removed_and_regraded() -> None:
    old = golden([q("q-2", {"d-1": 3, "d-2": 2, "d-10": 0}), q("q-10", {"a": 1})])
    new = golden([q("q-2", {"d-1": 1, "d-2": 2, "d-9": 3}), q("q-10", {"a": 3, "b": 0})])

    result = diff(old, new)

    assert result.judgments_regraded == (
        JudgmentChange("q-2", "d-1", 3, 1),
        JudgmentChange("q-10", "a", 1, 3),
    )
    assert result.judgments_added == (
        JudgmentChange("q-2", "d-9", None, 3),
        JudgmentChange("q-10", "b", None, 0),
    )
    assert result.judgments_removed == (JudgmentChange("q-2", "d-10", 0, None),)
    counts = result.counts
    assert (counts["regraded_up"], counts["regraded_down"], counts["queries_relabeled"]) == (1, 1, 2)


def test_it_lists_tier_moves_apart_from_other_metadata() -> None:
    old = golden([q("q-1", {"d": 1}), q("q-2", {"d": 1}, tier="shadow"), q("q-3", {"d": 1})])
    new = golden(
        [q("q-1", {"d": 1}, tier="shadow"), q("q-2", {"d": 1}), q("q-3", {"d": 1}, tier="challenge")]
    )

    result = diff(old, new)

    assert result.tier_moves == (
        TierMove("q-1", "core", "shadow"),
        TierMove("q-2", "shadow", "core"),
        TierMove("q-3", "core", "challenge"),
    )
    assert result.query_changes == ()


def test_it_lists_each_metadata_change_with_values_as_the_file_writes_them() -> None:
    before = q(
        "q-1", {"d": 2}, locale="en-US", filters={"product": "billing"}, stratum="billing", tags=["head"]
    )
    after = q(
        "q-1",
        {"d": 2},
        locale="en-GB",
        filters={"product": "billing", "region": ["eu"]},
        stratum="account",
        weight=2.0,
        expect_empty=True,
        tags=["head", "tail"],
    )
    after["text"] = "new text"
    old, new = golden([before]), golden([after])

    result = diff(old, new)

    assert result.query_changes == (
        FieldChange("q-1", "text", "text of q-1", "new text"),
        FieldChange("q-1", "locale", "en-US", "en-GB"),
        FieldChange("q-1", "filters", {"product": "billing"}, {"product": "billing", "region": ["eu"]}),
        FieldChange("q-1", "stratum", "billing", "account"),
        FieldChange("q-1", "weight", 1, 2),
        FieldChange("q-1", "expect_empty", False, True),
        FieldChange("q-1", "tags", ["head"], ["head", "tail"]),
    )
    critical = diff(golden([q("q-1", {"d": 2})]), golden([q("q-1", {"d": 2}, critical=True)]))
    assert critical.query_changes == (FieldChange("q-1", "critical", False, True),)
    assert critical.counts["queries_changed"] == 1


def test_it_lists_a_change_of_traffic_band_or_failure_mode_like_any_other_query_field() -> None:
    old = golden([q("q-1", {"d": 2}, stratum="billing", traffic_band="torso"), q("q-2", {"d": 1})])
    new = golden(
        [
            q("q-1", {"d": 2}, stratum="billing", traffic_band="head"),
            q("q-2", {"d": 1}, traffic_band="tail", failure_mode="zero-results"),
        ]
    )

    result = diff(old, new)

    assert result.query_changes == (
        FieldChange("q-1", "traffic_band", "torso", "head"),
        FieldChange("q-2", "traffic_band", None, "tail"),
        FieldChange("q-2", "failure_mode", None, "zero-results"),
    )
    assert result.summary().endswith("3 metadata changes in 2 queries (traffic_band, failure_mode).")
    assert "| q-2 | failure_mode | — | zero-results |" in result.to_markdown()
    assert diff(new, new).is_empty


def test_it_lists_file_level_changes() -> None:
    old = golden([q("q-1", {"d": 1})])
    new = golden([q("q-1", {"d": 1})], k=20, scale={"min": 0, "max": 4}, relevant_min_grade=3, rubric="hc@2")

    result = diff(old, new)

    assert result.file_changes == (
        FieldChange(None, "k", 10, 20),
        FieldChange(None, "relevant_min_grade", 2, 3),
        FieldChange(None, "scale", {"min": 0, "max": 3}, {"min": 0, "max": 4}),
        FieldChange(None, "rubric", None, "hc@2"),
    )
    assert (
        "file: k 10 -> 20, relevant_min_grade 2 -> 3, scale 0..3 -> 0..4, rubric none -> hc@2."
        in result.summary()
    )


def test_it_lists_durable_key_changes_even_when_the_grade_stays() -> None:
    old = golden([{"id": "q-1", "text": "t", "judgments": [{"doc_id": "d", "grade": 2, "key": "https://a"}]}])
    new = golden([{"id": "q-1", "text": "t", "judgments": [{"doc_id": "d", "grade": 2, "key": "https://b"}]}])
    unkeyed = golden([{"id": "q-1", "text": "t", "judgments": [{"doc_id": "d", "grade": 2}]}])

    assert diff(old, new).keys_changed == (KeyChange("q-1", "d", "https://a", "https://b"),)
    assert diff(old, unkeyed).keys_changed == (KeyChange("q-1", "d", "https://a", None),)
    assert not diff(old, new).is_empty and diff(old, new).judgments_regraded == ()


def test_it_lists_who_decided_a_label_when_only_that_changed() -> None:
    def one(grade: int, **source: str) -> GoldenFile:
        return golden([{"id": "q-1", "text": "t", "judgments": [{"doc_id": "d", "grade": grade, **source}]}])

    filled, confirmed, regraded = one(2, source="judge"), one(2), one(3)
    result = diff(filled, confirmed)
    assert result.sources_changed == (SourceChange("q-1", "d", "judge", None),)
    assert not result.is_empty and result.judgments_regraded == ()
    assert result.counts["sources_changed"] == 1
    assert "1 label source changed (judge -> humans: 1)." in result.summary()
    assert "| q-1 | d | judge | humans |" in result.to_markdown()
    assert result.to_dict()["sources_changed"] == [
        {"query_id": "q-1", "doc_id": "d", "old": "judge", "new": None}
    ]
    # A regrade by humans of a judge's label is both: the grade and who decided it.
    both = diff(filled, regraded)
    assert both.sources_changed == (SourceChange("q-1", "d", "judge", None),)
    assert both.judgments_regraded == (JudgmentChange("q-1", "d", 2, 3),)
    assert diff(confirmed, regraded).sources_changed == ()


def _two_versions() -> tuple[GoldenFile, GoldenFile]:
    old = load(GOLDEN / "full.json")
    data = to_dict(old)
    data["version"] = "2026-10-01"
    data["k"] = 10
    queries = {query["id"]: query for query in data["queries"]}
    queries["q-2"]["judgments"][0]["grade"] = 3  # doc-1199 1 -> 3
    queries["q-2"]["judgments"][2]["grade"] = 2  # doc-8821 4 -> 2
    queries["q-1"]["judgments"].append({"doc_id": "doc-7", "grade": 1})
    queries["q-10"]["judgments"].pop()  # doc-100 removed
    queries["q-3"].pop("tier")  # shadow -> core
    queries["q-4"]["tier"] = "core"  # challenge -> core
    queries["q-1"]["text"] = "export my data | csv\nplease"
    del queries["q-6"]
    data["queries"] = [*queries.values(), {"id": "q-11", "text": "change billing email", "judgments": []}]
    return old, from_dict(data)


def test_the_summary_is_one_paragraph_with_the_counts() -> None:
    result = diff(*_two_versions())

    assert result.summary() == (
        "Golden 2026-09-01 -> 2026-10-01 (7 queries): 1 query added, 1 retired; "
        "judgments changed in 3 queries: 2 regraded (1 up, 1 down), 1 added, 1 removed; "
        "2 tier moves (challenge -> core: 1, shadow -> core: 1); 1 metadata change in 1 query (text); "
        "file: k 20 -> 10."
    )
    assert "\n" not in result.summary()


def test_the_markdown_has_a_table_per_kind_of_change_with_cells_escaped() -> None:
    markdown = diff(*_two_versions()).to_markdown()

    assert markdown.startswith(
        "## Golden 2026-09-01 -> 2026-10-01\n\nGolden 2026-09-01 -> 2026-10-01 (7 queries)"
    )
    for heading in (
        "File (1)",
        "Queries added (1)",
        "Queries retired (1)",
        "Tier moves (2)",
        "Query changes (1)",
    ):
        assert f"\n### {heading}\n\n|" in markdown
    assert "### Judgments (4)" in markdown and "### Durable keys" not in markdown
    assert "| q-1 | text | how do i export my data | export my data \\| csv please |" in markdown
    judgments = markdown.split("### Judgments (4)\n\n")[1].splitlines()
    assert judgments[:6] == [
        "| query | document | old grade | new grade |",
        "| --- | --- | --- | --- |",
        "| q-1 | doc-7 | — | 1 |",
        "| q-2 | doc-1199 | 1 | 3 |",
        "| q-2 | doc-8821 | 4 | 2 |",
        "| q-10 | doc-100 | 0 | — |",
    ]


def test_to_dict_is_plain_json_with_the_counts() -> None:
    result = diff(*_two_versions())

    data = json.loads(json.dumps(result.to_dict()))

    assert data["counts"] == result.counts
    assert data["is_empty"] is False
    assert data["judgments_regraded"] == [
        {"query_id": "q-2", "doc_id": "doc-1199", "old": 1, "new": 3},
        {"query_id": "q-2", "doc_id": "doc-8821", "old": 4, "new": 2},
    ]
    assert data["tier_moves"][0] == {"query_id": "q-3", "old": "shadow", "new": "core"}
    assert data["queries_added"] == [
        {"id": "q-11", "text": "change billing email", "tier": "core", "judgments": 0}
    ]


def test_the_diff_is_deterministic_whatever_order_the_files_came_in() -> None:
    old, new = _two_versions()
    data = to_dict(new)
    data["queries"].reverse()
    for query in data["queries"]:
        query["judgments"].reverse()
    reordered = GoldenFile(
        version=new.version,
        queries=tuple(reversed(new.queries)),
        k=new.k,
        relevant_min_grade=new.relevant_min_grade,
        scale=new.scale,
        rubric=new.rubric,
    )

    assert diff(old, from_dict(data)) == diff(old, new) == diff(old, reordered)
    assert diff(old, reordered).to_markdown() == diff(old, new).to_markdown()


def test_an_empty_diff_renders_markdown_without_tables() -> None:
    full = load(GOLDEN / "full.json")

    assert diff(full, full).to_markdown() == (
        "## Golden 2026-09-01 -> 2026-09-01\n\nGolden 2026-09-01 -> 2026-09-01 (7 queries): no changes.\n"
    )


def test_the_diff_is_a_value_object() -> None:
    result = diff(*_two_versions())

    assert isinstance(result, GoldenDiff)
    assert result == copy.deepcopy(result)


@GENERATED
@given(golden_dicts(), golden_dicts())
def test_a_diff_is_empty_exactly_when_the_content_is_the_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    old, new = from_dict(a), from_dict(b)

    result = diff(old, new)

    same_content = to_dict(old) | {"version": ""} == to_dict(new) | {"version": ""}
    assert result.is_empty == same_content
    assert diff(old, old).is_empty
    # Swapping the sides swaps added and retired, and regrades run the other way.
    back = diff(new, old)
    assert [e.id for e in back.queries_added] == [e.id for e in result.queries_retired]
    assert [(c.doc_id, c.old, c.new) for c in back.judgments_regraded] == [
        (c.doc_id, c.new, c.old) for c in result.judgments_regraded
    ]


@GENERATED
@given(golden_dicts(), st.data())
def test_each_kind_of_edit_shows_up_in_its_own_list(data: dict[str, Any], draw: Any) -> None:
    old = from_dict(data)
    edited = to_dict(old)
    query = draw.draw(st.sampled_from(edited["queries"]))
    edit = draw.draw(st.sampled_from(["retire", "tier", "text", "judgment"]))
    if edit == "retire" and len(edited["queries"]) > 1:
        edited["queries"].remove(query)
        assert [e.id for e in diff(old, from_dict(edited)).queries_retired] == [query["id"]]
    elif edit == "tier":
        query["tier"] = "challenge" if query.get("tier") != "challenge" else "shadow"
        query.pop("critical", None)
        assert [m.query_id for m in diff(old, from_dict(edited)).tier_moves] == [query["id"]]
    elif edit == "text":
        query["text"] += " (edited)"
        assert [c.field for c in diff(old, from_dict(edited)).query_changes] == ["text"]
    else:
        lowest = old.scale.min
        query["judgments"].append({"doc_id": "fresh-doc", "grade": lowest})
        added = diff(old, from_dict(edited)).judgments_added
        assert added == (JudgmentChange(query["id"], "fresh-doc", None, lowest),)
