"""The golden file format: what it accepts, every rule it enforces, and the canonical dump."""

# Expected messages are compared whole, as users read them; splitting them to fit 110 columns hides that.
# ruff: noqa: E501

from __future__ import annotations

import copy
import difflib
import json
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from assay.golden.fields import Format
from assay.golden.format import (
    GoldenFormatError,
    Problem,
    dump,
    dump_json,
    dump_jsonl,
    from_dict,
    golden_warnings,
    load,
    natural_key,
    parse,
    parse_json,
    parse_jsonl,
    to_dict,
)
from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale, default_relevant_min_grade

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
INVALID = GOLDEN / "invalid"


def base() -> dict[str, Any]:
    """A small valid file; each bad-input case below breaks exactly one thing in it."""
    return {
        "version": "v1",
        "k": 10,
        "queries": [
            {
                "id": "q-1",
                "text": "refund policy",
                "judgments": [{"doc_id": "d-1", "grade": 3}, {"doc_id": "d-2", "grade": 1}],
            },
            {"id": "q-2", "text": "cancel plan", "judgments": [{"doc_id": "d-3", "grade": 2}]},
        ],
    }


def problems_of(data: object) -> list[str]:
    with pytest.raises(GoldenFormatError) as info:
        from_dict(data)
    return [str(p) for p in info.value.problems]


def text_problems(text: str | bytes, **kwargs: Any) -> list[str]:
    with pytest.raises(GoldenFormatError) as info:
        parse(text, **kwargs)
    return [str(p) for p in info.value.problems]


# ------------------------------------------------------------------------------------------ accepted input


def test_it_accepts_the_seed_sample_as_is() -> None:
    golden = load(GOLDEN / "seed_sample.json")

    assert golden.version == "2026-08-01"
    assert golden.k == 10
    assert golden.scale == Scale(0, 3)
    assert golden.relevant_min_grade == 2
    assert golden.rubric is None
    (query,) = golden.queries
    assert query.id == "q-0471"
    assert query.text == "refund policy for annual plan"
    assert query.locale == "en-US"
    assert query.filters == {"product": "billing", "status": "published"}
    assert query.grades == {"doc-8821": 3, "doc-4410": 2, "doc-1199": 1}
    assert (query.tier, query.weight, query.expect_empty, query.critical, query.tags) == (
        "core",
        1.0,
        False,
        False,
        (),
    )


def test_it_reads_every_field_of_the_full_fixture() -> None:
    golden = load(GOLDEN / "full.json")

    assert (golden.version, golden.k, golden.relevant_min_grade) == ("2026-09-01", 20, 3)
    assert golden.scale == Scale(0, 4)
    assert golden.rubric == "help-center@3"
    assert [q.id for q in golden.queries] == ["q-1", "q-2", "q-3", "q-4", "q-5", "q-6", "q-10"]
    q2, q3, q5, q10 = (golden.query(i) for i in ("q-2", "q-3", "q-5", "q-10"))
    assert q2.filters == {"product": "billing", "region": ["eu", "us"], "status": "published"}
    assert q2.weight == 2.5
    assert q3.filters == {
        "beta": False,
        "min_version": 3,
        "product": "billing",
        "score_floor": 0.5,
        "team": None,
    }
    assert (q3.tier, q3.locale, q3.tags) == ("shadow", "fr-FR", ("disputed",))
    assert golden.query("q-4").tier == "challenge"
    assert q5.expect_empty and q5.judgments == ()
    assert q10.critical and q10.weight == 120 and q10.tags == ("head", "navigational")
    assert q10.judgments[1] == Judgment("doc-12", 4, "https://help.example.com/billing/cancel")
    assert q10.judgments[2].key is None


def test_it_reads_the_jsonl_twin_as_the_same_golden_file() -> None:
    assert load(GOLDEN / "full.jsonl") == load(GOLDEN / "full.json")


@pytest.mark.parametrize("name", ["full.json", "full.jsonl", "binary.json"])
def test_it_dumps_a_canonical_file_back_byte_for_byte(name: str) -> None:
    raw = (GOLDEN / name).read_bytes()
    golden = parse(raw)

    assert dump(golden, "jsonl" if name.endswith(".jsonl") else "json") == raw


@pytest.mark.parametrize("name", ["full.json", "full.jsonl"])
def test_a_judges_labels_carry_their_source_through_both_forms(name: str) -> None:
    """docs/golden-format.md, "Judgment sources": `"source": "judge"` after the key; absent for humans,
    so a file with no judge label is written byte for byte as before."""
    form: Format = "jsonl" if name.endswith(".jsonl") else "json"
    raw = (GOLDEN / name).read_bytes()
    golden = parse(raw)
    q10 = golden.query("q-10")
    marked = replace(
        golden,
        queries=tuple(
            replace(q, judgments=(replace(q.judgments[0], source="judge"), *q.judgments[1:]))
            if q is q10
            else q
            for q in golden.queries
        ),
    )
    written = dump(marked, form)
    first = q10.judgments[0]
    fields = {"doc_id": first.doc_id, "grade": first.grade} | ({"key": first.key} if first.key else {})
    assert json.dumps(fields | {"source": "judge"}, ensure_ascii=False) in written.decode()
    back = parse(written)
    assert back == marked
    assert back.query("q-10").judgments[0].source == "judge"
    assert back.sources == {"human": golden.sources["human"] - 1, "judge": 1}
    without = back.without_source("judge")
    assert without.query("q-10").judgments == q10.judgments[1:]
    assert dump(replace(back, queries=golden.queries), form) == raw  # sources gone: the bytes as before


def test_it_converts_between_the_two_forms_exactly() -> None:
    assert dump_jsonl(load(GOLDEN / "full.json")) == (GOLDEN / "full.jsonl").read_bytes()
    assert dump_json(load(GOLDEN / "full.jsonl")) == (GOLDEN / "full.json").read_bytes()


def test_it_detects_the_form_when_not_told() -> None:
    jsonl = (GOLDEN / "full.jsonl").read_text(encoding="utf-8")

    assert parse(jsonl) == parse(jsonl, fmt="jsonl") == parse_jsonl(jsonl)
    assert parse(jsonl.encode()) == load(GOLDEN / "full.json")
    # A one-line JSON document is the JSON form, not a JSONL header.
    assert parse(json.dumps(base())) == parse_json(json.dumps(base()))


def test_load_detects_jsonl_content_in_a_json_named_file(tmp_path: Path) -> None:
    path = tmp_path / "golden.json"
    path.write_bytes((GOLDEN / "full.jsonl").read_bytes())

    assert load(path) == load(GOLDEN / "full.json")


def test_load_reads_a_jsonl_named_file_as_jsonl_only(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_bytes((GOLDEN / "full.json").read_bytes())

    with pytest.raises(GoldenFormatError) as info:
        load(path)
    assert (
        str(info.value.problems[0])
        == "line 1, column 2: invalid JSON: Expecting property name enclosed in double quotes"
    )


@pytest.mark.parametrize("prefix", [b"\xef\xbb\xbf", "\ufeff"])
def test_it_accepts_a_utf8_byte_order_mark(prefix: bytes | str) -> None:
    raw = (GOLDEN / "seed_sample.json").read_bytes()
    data = prefix + raw if isinstance(prefix, bytes) else prefix + raw.decode()

    assert parse(data) == load(GOLDEN / "seed_sample.json")


def test_it_accepts_crlf_line_ends_and_blank_lines_in_jsonl() -> None:
    lines = (GOLDEN / "full.jsonl").read_text(encoding="utf-8").splitlines()
    text = "\r\n\r\n".join(lines) + "\r\n  \r\n"

    assert parse(text) == load(GOLDEN / "full.json")


def test_it_keeps_a_line_separator_inside_a_jsonl_string_on_its_line() -> None:
    golden = from_dict(base() | {"rubric": "r\u2028x"})
    golden = GoldenFile(
        version=golden.version,
        queries=(GoldenQuery("q-1", "a\u2028b\x85c\u2029d", (Judgment("d", 1),)),),
        rubric="r\u2028x",
    )
    raw = dump_jsonl(golden)

    assert raw.count(b"\n") == 2
    assert parse(raw) == golden


def test_it_treats_null_as_absent_for_optional_text_fields() -> None:
    data = base()
    data["rubric"] = None
    data["queries"][0] |= {"locale": None, "stratum": None}
    data["queries"][0]["judgments"][0]["key"] = None

    golden = from_dict(data)

    assert golden.rubric is None and golden.queries[0].locale is None and golden.queries[0].stratum is None
    assert golden == from_dict(base())


def test_from_dict_accepts_tuples_and_any_mapping() -> None:
    data = base()
    data["queries"] = tuple(data["queries"])
    data["queries"][0]["judgments"] = tuple(data["queries"][0]["judgments"])
    data["queries"][0]["tags"] = ("b", "a")

    assert from_dict(data).queries[0].tags == ("a", "b")


@pytest.mark.parametrize(
    ("scale", "expected"),
    [
        ({"min": 0, "max": 3}, 2),
        ({"min": 0, "max": 1}, 1),
        ({"min": 0, "max": 4}, 2),
        ({"min": 2, "max": 5}, 3),
    ],
)
def test_it_defaults_the_relevance_cutoff_to_2_within_the_scale(scale: dict[str, int], expected: int) -> None:
    data = base() | {"scale": scale}
    for query in data["queries"]:
        for judgment in query["judgments"]:
            judgment["grade"] = scale["max"]

    golden = from_dict(data)

    assert golden.relevant_min_grade == expected == default_relevant_min_grade(Scale(**scale))


def test_a_parsed_file_is_canonical_whatever_the_input_order() -> None:
    data = base()
    data["queries"] = [
        {"id": "q-10", "text": "x", "tags": ["z", "a"], "filters": {"b": 1, "a": 2}, "judgments": []},
        {
            "id": "q-2",
            "text": "y",
            "judgments": [{"doc_id": "doc-10", "grade": 1}, {"doc_id": "doc-9", "grade": 2}],
        },
    ]

    golden = from_dict(data)

    assert [q.id for q in golden.queries] == ["q-2", "q-10"]
    assert [j.doc_id for j in golden.queries[0].judgments] == ["doc-9", "doc-10"]
    assert golden.queries[1].tags == ("a", "z")
    assert list(golden.queries[1].filters) == ["a", "b"]


def test_natural_key_orders_numbers_by_value_and_is_total() -> None:
    ids = ["q-10", "q-2", "q-02", "q-1b", "q-1", "Q-3", "doc", "", "q-²", "10", "9"]

    ordered = sorted(ids, key=natural_key)

    assert ordered == ["", "9", "10", "Q-3", "doc", "q-1", "q-1b", "q-02", "q-2", "q-10", "q-²"]
    assert sorted(reversed(ids), key=natural_key) == ordered


def test_natural_key_handles_digit_runs_longer_than_python_converts() -> None:
    long_id = "q-" + "9" * 5000

    padded_eight = "q-" + "0" * 4999 + "8"

    assert sorted([long_id, "q-10", padded_eight, "q-9"], key=natural_key) == [
        "q-" + "0" * 4999 + "8",
        "q-9",
        "q-10",
        long_id,
    ]
    # An id that long is refused (at most 200 characters are stored), with its length, not a crash.
    data = base()
    data["queries"][1]["id"] = long_id
    assert problems_of(data) == ["queries[1].id: is 5,002 characters long; at most 200 can be stored"]


# ------------------------------------------------------------------------------------------ every rule


def _set(path: str, value: object) -> Any:
    """A mutation of base(): set (or with value DELETE, remove) the dotted path."""

    def mutate(data: dict[str, Any]) -> dict[str, Any]:
        *parents, last = path.split(".")
        node: Any = data
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        if value is DELETE:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value
        return data

    return mutate


DELETE = object()

# (mutation of base(), the one problem it must give, exactly as printed)
RULES: list[tuple[str, Any, str]] = [
    ("version missing", _set("version", DELETE), "version: missing required field"),
    ("version not a string", _set("version", 3), 'version: must be a string, got integer 3 (write "3")'),
    ("version blank", _set("version", " "), "version: must not be empty"),
    (
        "version with a space",
        _set("version", "v 1"),
        "version: \"v 1\" contains whitespace or a control character (' '), not allowed in an id",
    ),
    (
        "queries missing",
        _set("queries", DELETE),
        "queries: missing required field: the list of queries (in JSONL, one query per line after the header)",
    ),
    ("queries not an array", _set("queries", {}), "queries: must be an array of queries, got an object"),
    ("no queries", _set("queries", []), "queries: no queries: a golden file needs at least one"),
    ("k zero", _set("k", 0), "k: must be at least 1, got 0"),
    ("k negative", _set("k", -5), "k: must be at least 1, got -5"),
    ("k a string", _set("k", "10"), 'k: must be an integer, got string "10"'),
    (
        "k a float",
        _set("k", 10.0),
        "k: must be an integer, got 10.0 (a number with a decimal point: write 10)",
    ),
    ("k fractional", _set("k", 2.5), "k: must be an integer, got number 2.5"),
    ("k a boolean", _set("k", True), "k: must be an integer, got boolean true"),
    (
        "relevant_min_grade at the scale minimum",
        _set("relevant_min_grade", 0),
        "relevant_min_grade: 0 must be above the scale minimum and at most its maximum (1..3 on the scale 0..3)",
    ),
    (
        "relevant_min_grade above the scale",
        _set("relevant_min_grade", 4),
        "relevant_min_grade: 4 must be above the scale minimum and at most its maximum (1..3 on the scale 0..3)",
    ),
    (
        "relevant_min_grade a float",
        _set("relevant_min_grade", 2.0),
        "relevant_min_grade: must be an integer, got 2.0 (a number with a decimal point: write 2)",
    ),
    ("scale not an object", _set("scale", [0, 3]), "scale: the scale must be an object, got an array"),
    ("scale min above max", _set("scale", {"min": 3, "max": 1}), "scale: min must be below max, got 3..1"),
    ("scale min equal to max", _set("scale", {"min": 2, "max": 2}), "scale: min must be below max, got 2..2"),
    (
        "scale negative",
        _set("scale", {"min": -1, "max": 3}),
        "scale.min: must be at least 0, got -1 (grades are gains: 2^grade - 1)",
    ),
    ("scale without max", _set("scale", {"min": 0}), "scale.max: missing required field"),
    (
        "scale max a boolean",
        _set("scale", {"min": 0, "max": True}),
        "scale.max: must be an integer, got boolean true",
    ),
    (
        "scale with an unknown field",
        _set("scale", {"min": 0, "max": 3, "step": 1}),
        'scale.step: unknown field "step" (allowed: min, max)',
    ),
    ("rubric blank", _set("rubric", ""), "rubric: must not be empty"),
    ("rubric a number", _set("rubric", 3), 'rubric: must be a string, got integer 3 (write "3")'),
    (
        "a typo in a file field",
        _set("querys", []),
        'querys: unknown field "querys" (did you mean "queries"?)',
    ),
    (
        "a query field at the top",
        _set("text", "x"),
        'text: unknown field "text": text is a query field; queries go in the "queries" array',
    ),
    (
        "query not an object",
        _set("queries.1", "q-2"),
        'queries[1]: a query must be an object, got string "q-2"',
    ),
    ("query id missing", _set("queries.1.id", DELETE), "queries[1].id: missing required field"),
    (
        "query id a number",
        _set("queries.1.id", 2),
        'queries[1].id: must be a string, got integer 2 (write "2")',
    ),
    ("query id empty", _set("queries.1.id", ""), "queries[1].id: must not be empty"),
    (
        "query id with a tab",
        _set("queries.1.id", "q\t2"),
        "queries[1].id: \"q\\t2\" contains whitespace or a control character ('\\t'), not allowed in an id",
    ),
    (
        "duplicate query id",
        _set("queries.1.id", "q-1"),
        'queries[1].id: duplicate query id "q-1" (also queries[0])',
    ),
    ("text missing", _set("queries.1.text", DELETE), 'queries[1].text: missing required field (query "q-2")'),
    ("text blank", _set("queries.1.text", "  "), 'queries[1].text: must not be empty (query "q-2")'),
    ("text null", _set("queries.1.text", None), 'queries[1].text: must be a string, got null (query "q-2")'),
    (
        "locale a number",
        _set("queries.1.locale", 5),
        'queries[1].locale: must be a string, got integer 5 (write "5") (query "q-2")',
    ),
    ("stratum blank", _set("queries.1.stratum", ""), 'queries[1].stratum: must not be empty (query "q-2")'),
    (
        "traffic band unknown",
        _set("queries.1.traffic_band", "middle"),
        'queries[1].traffic_band: "middle" is not a traffic band: use one of head, torso, tail, or leave it out (query "q-2")',
    ),
    (
        "traffic band capitalised",
        _set("queries.1.traffic_band", "Head"),
        'queries[1].traffic_band: "Head" is not a traffic band: use one of head, torso, tail, or leave it out (query "q-2")',
    ),
    (
        "traffic band a number",
        _set("queries.1.traffic_band", 1),
        'queries[1].traffic_band: integer 1 is not a traffic band: use one of head, torso, tail, or leave it out (query "q-2")',
    ),
    (
        "failure mode blank",
        _set("queries.1.failure_mode", " "),
        'queries[1].failure_mode: must not be empty (query "q-2")',
    ),
    (
        "failure mode a list",
        _set("queries.1.failure_mode", ["typo"]),
        'queries[1].failure_mode: must be a string, got an array (query "q-2")',
    ),
    (
        "filters an array",
        _set("queries.1.filters", ["billing"]),
        'queries[1].filters: filters must be an object, got an array (query "q-2")',
    ),
    (
        "a filter value an object",
        _set("queries.1.filters", {"product": {"in": ["a"]}}),
        "queries[1].filters.product: a filter value must be a string, number, boolean, null or a list of those, "
        'got an object (query "q-2")',
    ),
    (
        "a filter list nested",
        _set("queries.1.filters", {"region": ["eu", ["us"]]}),
        'queries[1].filters.region[1]: a filter value must be a string, number, boolean or null, got an array (query "q-2")',
    ),
    (
        "a filter value not finite",
        _set("queries.1.filters", {"score": float("inf")}),
        'queries[1].filters.score: must be a finite number, got inf (query "q-2")',
    ),
    (
        "a filter name empty",
        _set("queries.1.filters", {"": 1}),
        'queries[1].filters[""]: must not be empty (query "q-2")',
    ),
    (
        "weight zero",
        _set("queries.1.weight", 0),
        'queries[1].weight: must be greater than 0, got 0 (query "q-2")',
    ),
    (
        "weight negative",
        _set("queries.1.weight", -0.5),
        'queries[1].weight: must be greater than 0, got -0.5 (query "q-2")',
    ),
    (
        "weight NaN",
        _set("queries.1.weight", float("nan")),
        'queries[1].weight: must be a finite number, got number nan (query "q-2")',
    ),
    (
        "weight infinite",
        _set("queries.1.weight", float("inf")),
        'queries[1].weight: must be a finite number, got number inf (query "q-2")',
    ),
    (
        "weight too large for a float",
        _set("queries.1.weight", 10**400),
        'queries[1].weight: must be a finite number, got a very large integer (query "q-2")',
    ),
    (
        "weight a string",
        _set("queries.1.weight", "2"),
        'queries[1].weight: must be a number, got string "2" (query "q-2")',
    ),
    (
        "weight a boolean",
        _set("queries.1.weight", True),
        'queries[1].weight: must be a number, got boolean true (query "q-2")',
    ),
    (
        "tier unknown",
        _set("queries.1.tier", "gold"),
        'queries[1].tier: "gold" is not a tier: use one of core, shadow, challenge (query "q-2")',
    ),
    (
        "tier a number",
        _set("queries.1.tier", 1),
        'queries[1].tier: must be a string, got integer 1 (write "1") (query "q-2")',
    ),
    (
        "expect_empty a string",
        _set("queries.1.expect_empty", "yes"),
        'queries[1].expect_empty: must be true or false, got string "yes" (query "q-2")',
    ),
    (
        "critical a number",
        _set("queries.1.critical", 1),
        'queries[1].critical: must be true or false, got integer 1 (query "q-2")',
    ),
    (
        "tags a string",
        _set("queries.1.tags", "head"),
        'queries[1].tags: tags must be an array of strings, got string "head" (query "q-2")',
    ),
    (
        "tags repeated",
        _set("queries.1.tags", ["head", "billing", "head"]),
        'queries[1].tags[2]: duplicate tag "head" (also queries[1].tags[0]) (query "q-2")',
    ),
    ("a tag empty", _set("queries.1.tags", [""]), 'queries[1].tags[0]: must not be empty (query "q-2")'),
    (
        "a tag a number",
        _set("queries.1.tags", [7]),
        'queries[1].tags[0]: must be a string, got integer 7 (write "7") (query "q-2")',
    ),
    (
        "a typo in a query field",
        _set("queries.1.judgements", []),
        'queries[1].judgements: unknown field "judgements" (did you mean "judgments"?) (query "q-2")',
    ),
    (
        "a file field in a query",
        _set("queries.1.k", 5),
        'queries[1].k: unknown field "k": k is a file-level field, not a query field (query "q-2")',
    ),
    (
        "judgments an object",
        _set("queries.1.judgments", {"d-3": 2}),
        'queries[1].judgments: judgments must be an array, got an object (query "q-2")',
    ),
    (
        "judgment not an object",
        _set("queries.1.judgments.0", ["d-3", 2]),
        'queries[1].judgments[0]: a judgment must be an object, got an array (query "q-2")',
    ),
    (
        "doc_id missing",
        _set("queries.1.judgments.0.doc_id", DELETE),
        'queries[1].judgments[0].doc_id: missing required field (query "q-2")',
    ),
    (
        "doc_id a number",
        _set("queries.1.judgments.0.doc_id", 8821),
        'queries[1].judgments[0].doc_id: must be a string, got integer 8821 (write "8821") (query "q-2")',
    ),
    (
        "doc_id with a space",
        _set("queries.1.judgments.0.doc_id", "d 3"),
        'queries[1].judgments[0].doc_id: "d 3" contains whitespace or a control character (\' \'), not allowed in an id (query "q-2")',
    ),
    (
        "grade missing",
        _set("queries.1.judgments.0.grade", DELETE),
        'queries[1].judgments[0].grade: missing required field (query "q-2")',
    ),
    (
        "grade above the scale",
        _set("queries.1.judgments.0.grade", 4),
        'queries[1].judgments[0].grade: 4 is outside the scale 0..3 (query "q-2")',
    ),
    (
        "grade below the scale",
        _set("queries.1.judgments.0.grade", -1),
        'queries[1].judgments[0].grade: -1 is outside the scale 0..3 (query "q-2")',
    ),
    (
        "grade with a decimal point",
        _set("queries.1.judgments.0.grade", 2.0),
        'queries[1].judgments[0].grade: must be an integer, got 2.0 (a number with a decimal point: write 2) (query "q-2")',
    ),
    (
        "grade fractional",
        _set("queries.1.judgments.0.grade", 2.5),
        'queries[1].judgments[0].grade: must be an integer, got number 2.5 (query "q-2")',
    ),
    (
        "grade a boolean",
        _set("queries.1.judgments.0.grade", True),
        'queries[1].judgments[0].grade: must be an integer, got boolean true (query "q-2")',
    ),
    (
        "grade a string",
        _set("queries.1.judgments.0.grade", "2"),
        'queries[1].judgments[0].grade: must be an integer, got string "2" (query "q-2")',
    ),
    (
        "key blank",
        _set("queries.1.judgments.0.key", ""),
        'queries[1].judgments[0].key: must not be empty (query "q-2")',
    ),
    (
        "a typo in a judgment field",
        _set("queries.1.judgments.0.grades", 2),
        'queries[1].judgments[0].grades: unknown field "grades" (did you mean "grade"?) (query "q-2")',
    ),
    (
        "duplicate judgment for a document",
        _set("queries.0.judgments.1.doc_id", "d-1"),
        'queries[0].judgments[1].doc_id: duplicate judgment for document "d-1" (also queries[0].judgments[0]) (query "q-1")',
    ),
    (
        "critical and expect_empty",
        _set(
            "queries.1",
            {
                "id": "q-2",
                "text": "t",
                "critical": True,
                "expect_empty": True,
                "judgments": [{"doc_id": "d", "grade": 3}],
            },
        ),
        "queries[1]: critical and expect_empty cannot both be true: a critical query must find its best document, "
        'an expect_empty query must find nothing (query "q-2")',
    ),
    (
        "critical without a positive judgment",
        _set(
            "queries.1",
            {"id": "q-2", "text": "t", "critical": True, "judgments": [{"doc_id": "d", "grade": 0}]},
        ),
        "queries[1].critical: a critical query needs a judgment at grade >= 1 (the gate checks where its best "
        'document ranks) (query "q-2")',
    ),
    (
        "critical without judgments",
        _set("queries.1", {"id": "q-2", "text": "t", "critical": True}),
        "queries[1].critical: a critical query needs a judgment at grade >= 1 (the gate checks where its best "
        'document ranks) (query "q-2")',
    ),
    ("top level an array", lambda data: [data], "the golden file must be an object, got an array"),
    (
        "a lone surrogate",
        _set("queries.1.text", "caf\ud800"),
        'queries[1].text: contains a lone surrogate \\ud800 (not valid Unicode) (query "q-2")',
    ),
    (
        "a non-string field name",
        _set("queries.1.judgments.0", {"doc_id": "d", "grade": 1, 7: 1}),
        'queries[1].judgments[0]: field names must be strings, got integer 7 (query "q-2")',
    ),
    (
        "a Python object",
        _set("queries.1.weight", {1, 2}),
        'queries[1].weight: must be a number, got a Python set (query "q-2")',
    ),
]


@pytest.mark.parametrize(("case", "mutate", "expected"), RULES, ids=[case for case, _, _ in RULES])
def test_it_rejects_each_bad_input_with_one_problem_naming_its_place(
    case: str, mutate: Any, expected: str
) -> None:
    assert problems_of(mutate(base())) == [expected]


@pytest.mark.parametrize(
    ("value", "described"),
    [
        (2**31, "integer 2147483648"),
        (2**63, "integer 9223372036854775808"),
        (-(10**5000), "a very large integer"),
    ],
    ids=["2^31", "2^63", "-10^5000"],
)
def test_integers_beyond_what_the_database_holds_are_rejected_without_crashing(
    value: int, described: str
) -> None:
    # The integer columns (k, relevant_min_grade, the scale, grades) hold 32 bits, signed.
    data = base() | {"k": value, "relevant_min_grade": value, "version": value}
    data["queries"][0]["judgments"][0]["grade"] = value

    assert problems_of(data) == [
        f"version: must be a string, got {described}",
        "k: must be an integer between -2147483647 and 2147483647",
        "relevant_min_grade: must be an integer between -2147483647 and 2147483647",
        'queries[0].judgments[0].grade: must be an integer between -2147483647 and 2147483647 (query "q-1")',
    ]


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (
            "queries.0.text",
            "x" * 1001,
            'queries[0].text: is 1,001 characters long; at most 1,000 can be stored (query "q-1")',
        ),
        ("queries.0.id", "q" * 201, "queries[0].id: is 201 characters long; at most 200 can be stored"),
        (
            "queries.0.judgments.0.doc_id",
            "d" * 201,
            'queries[0].judgments[0].doc_id: is 201 characters long; at most 200 can be stored (query "q-1")',
        ),
        ("version", "v" * 101, "version: is 101 characters long; at most 100 can be stored"),
        (
            "queries.0.stratum",
            "s" * 101,
            'queries[0].stratum: is 101 characters long; at most 100 can be stored (query "q-1")',
        ),
        (
            "queries.0.locale",
            "l" * 36,
            'queries[0].locale: is 36 characters long; at most 35 can be stored (query "q-1")',
        ),
        (
            "queries.0.text",
            "nul\x00here",
            'queries[0].text: contains the control character \\u0000, which cannot be stored (query "q-1")',
        ),
    ],
)
def test_what_the_database_cannot_store_is_refused_by_the_validator(
    path: str, value: str, expected: str
) -> None:
    # Each of these passed `assay validate` and then gave a 500 on upload to PostgreSQL.
    assert problems_of(_set(path, value)(base())) == [expected]


def test_duplicate_keys_in_one_judgment_are_reported() -> None:
    data = base()
    data["queries"][0]["judgments"][1]["key"] = data["queries"][0]["judgments"][0]["key"] = "https://x/a"

    assert problems_of(data) == [
        'queries[0].judgments[1].key: duplicate key "https://x/a" (also queries[0].judgments[0]) (query "q-1")'
    ]


def test_binary_scale_grades_and_cutoff_are_checked_against_the_scale() -> None:
    assert [str(p) for p in _errors(INVALID / "binary_off_scale.json")] == [
        'queries[0].judgments[0].grade: 2 is outside the scale 0..1 (query "q-1")'
    ]
    assert problems_of(base() | {"scale": {"min": 0, "max": 1}, "relevant_min_grade": 2})[0] == (
        "relevant_min_grade: 2 must be above the scale minimum and at most its maximum (1..1 on the scale 0..1)"
    )


def test_an_invalid_scale_does_not_add_grade_errors_that_may_be_wrong() -> None:
    data = base() | {"scale": {"min": 5, "max": 1}, "relevant_min_grade": 9}

    assert problems_of(data) == ["scale: min must be below max, got 5..1"]


def test_an_off_scale_grade_does_not_also_claim_a_critical_query_has_no_positive() -> None:
    data = base()
    data["queries"][1] |= {"critical": True, "judgments": [{"doc_id": "d", "grade": 9}]}

    assert problems_of(data) == ['queries[1].judgments[0].grade: 9 is outside the scale 0..3 (query "q-2")']


# ------------------------------------------------------------------------------------------ text input


def _errors(path: Path) -> list[Problem]:
    with pytest.raises(GoldenFormatError) as info:
        load(path)
    return info.value.problems


@pytest.mark.parametrize(
    "path", sorted(p for p in INVALID.iterdir() if p.suffix in (".json", ".jsonl")), ids=lambda p: p.name
)
def test_each_invalid_fixture_gives_exactly_its_recorded_problems(path: Path) -> None:
    expected = path.with_name(path.name + ".errors.txt").read_text(encoding="utf-8")

    with pytest.raises(GoldenFormatError) as info:
        load(path)

    assert str(info.value) + "\n" == expected


def test_it_reports_every_problem_at_once() -> None:
    problems = _errors(INVALID / "many_problems.json")

    assert len(problems) == 13
    assert {p.code for p in problems} >= {
        "range",
        "enum",
        "off_scale",
        "type",
        "duplicate_judgment",
        "duplicate_query",
        "conflict",
        "duplicate_tag",
        "duplicate_key",
        "critical_without_positive",
    }
    assert [p.query_id for p in problems if p.where.startswith("queries[2]")] == ["q-3", "q-3", "q-3"]


def test_it_reports_every_bad_jsonl_line_not_just_the_first() -> None:
    problems = _errors(INVALID / "bad_lines.jsonl")

    assert [p.where.split(":")[0].split(",")[0] for p in problems] == [
        "line 3",
        "line 5",
        "line 6",
        "line 7",
        "line 8",
    ]


def test_malformed_json_names_line_and_column() -> None:
    assert text_problems('{\n  "version": "v1",\n  "k": 10,,\n}') == [
        "line 3, column 11: invalid JSON: Expecting property name enclosed in double quotes"
    ]


def test_it_says_not_utf8_with_the_byte_offset() -> None:
    assert text_problems(b'{"version": "v1",\n "queries": [\xff]}') == [
        "byte 31: not UTF-8: byte 0xff on line 2 cannot be decoded (invalid start byte)"
    ]
    assert text_problems("{}".encode("utf-16")) == [
        "byte 0: not UTF-8: byte 0xff on line 1 cannot be decoded (invalid start byte) "
        "(it looks like UTF-16: save it as UTF-8)"
    ]


@pytest.mark.parametrize("data", [b"", "   \n\t\n", b"\xef\xbb\xbf", "\n\n"])
def test_an_empty_file_is_reported_as_empty(data: bytes | str) -> None:
    for fmt in (None, "json", "jsonl"):
        assert text_problems(data, fmt=fmt) == ["the file is empty"]


def test_a_jsonl_line_of_non_json_whitespace_is_not_skipped_as_blank() -> None:
    text = '{"version": "v1"}\n\x0c\n{"id": "q", "text": "t"}\n'

    assert text_problems(text) == ["line 2, column 1: invalid JSON: Expecting value"]
    assert text_problems("\x0c") == ["line 1, column 1: invalid JSON: Expecting value"]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_standard_json_numbers_are_rejected_where_they_stand(literal: str) -> None:
    text = json.dumps(base()).replace('"grade": 3', f'"grade": {literal}')

    assert text_problems(text) == [
        f'queries[0].judgments[0].grade: must be an integer, got {literal} (not allowed in JSON) (query "q-1")'
    ]


def test_a_repeated_json_key_is_an_error_not_a_silent_overwrite() -> None:
    text = '{"version": "v1", "k": 5, "k": 10, "queries": [{"id": "q", "text": "t", "text": "u"}]}'

    assert text_problems(text) == [
        "k: appears more than once in the same object (JSON would keep only the last)",
        'queries[0].text: appears more than once in the same object (JSON would keep only the last) (query "q")',
    ]


def test_a_lone_surrogate_escape_is_rejected() -> None:
    text = json.dumps(base()).replace("refund policy", "refund \\udc00")

    assert text_problems(text) == [
        'queries[0].text: contains a lone surrogate \\udc00 (not valid Unicode) (query "q-1")'
    ]


def test_absurd_nesting_and_numbers_are_reported_not_crashed_on() -> None:
    assert text_problems("[" * 100_000) == ["invalid JSON: nested too deeply to read"]
    # Deep inside a query, the fast decoder (msgspec) raised RecursionError itself: a traceback before.
    deep = "[" * 100_000 + "]" * 100_000
    query = '{"id": "q", "text": "t", "filters": {"x": ' + deep + "}}"
    assert text_problems('{"version": "v1", "k": 5, "queries": [' + query + "]}") == [
        "invalid JSON: nested too deeply to read"
    ]
    huge = '{"version": "v1", "k": ' + "9" * 5000 + ', "queries": []}'
    assert text_problems(huge) == ["invalid JSON: a number is too long to read"]
    assert text_problems(huge + "\n" + huge, fmt="jsonl") == [
        "line 1: invalid JSON: a number is too long to read",
        "line 2: invalid JSON: a number is too long to read",
    ]


def test_a_broken_one_line_document_is_reported_as_json_not_as_jsonl() -> None:
    assert text_problems('{"version": "v1", "queries": [}') == [
        "line 1, column 31: invalid JSON: Expecting value"
    ]


def test_jsonl_problems_name_the_line_and_the_path_inside_it() -> None:
    text = '{"version": "v1"}\n{"id": "q-1", "text": "t", "judgments": [{"doc_id": "d", "grade": 4}]}\n'

    assert text_problems(text) == ['line 2: judgments[0].grade: 4 is outside the scale 0..3 (query "q-1")']


def test_jsonl_header_problems_name_the_header_line() -> None:
    text = '\n{"version": "v1", "k": 0, "scale": {"min": 0, "max": 1}}\n{"id": "q", "text": "t"}\n'

    assert text_problems(text, fmt="jsonl") == ["line 2: k: must be at least 1, got 0"]


def test_jsonl_header_must_not_hold_queries() -> None:
    text = '{"version": "v1", "queries": []}\n{"id": "q", "text": "t"}\n'

    assert text_problems(text) == [
        'line 1: queries: "queries" does not belong in a JSONL header: write one query object per line after it'
    ]


def test_jsonl_without_a_header_says_so() -> None:
    text = '{"id": "q-1", "text": "t"}\n{"id": "q-2", "text": "u"}\n'

    assert text_problems(text) == [
        "line 1: the first line must be the header with the file-level fields (version, k, ...); "
        "this line looks like a query"
    ]


def test_jsonl_with_only_a_header_has_no_queries() -> None:
    assert text_problems('{"version": "v1"}\n', fmt="jsonl") == [
        "queries: no queries: write one query object per line after the header"
    ]


def test_a_query_field_in_the_jsonl_header_is_named_as_such() -> None:
    text = '{"version": "v1", "text": "x"}\n{"id": "q", "text": "t"}\n'

    assert text_problems(text) == [
        'line 1: text: unknown field "text": text is a query field, not a header field'
    ]


# ------------------------------------------------------------------------------------------ the error object


def test_the_error_is_a_value_error_listing_one_problem_per_line() -> None:
    with pytest.raises(ValueError, match="k: must be at least 1") as info:
        from_dict(base() | {"k": 0, "version": 1})
    error = info.value
    assert isinstance(error, GoldenFormatError)
    assert str(error).splitlines() == [str(p) for p in error.problems]
    assert len(error.problems) == 2


def test_the_error_survives_pickling_with_its_problems() -> None:
    with pytest.raises(GoldenFormatError) as info:
        from_dict(base() | {"k": 0})

    copy_ = pickle.loads(pickle.dumps(info.value))  # noqa: S301 (our own bytes, in process)

    assert copy_.problems == info.value.problems and str(copy_) == str(info.value)


def test_a_problem_prints_where_then_message() -> None:
    assert str(Problem("queries[3].judgments[1].grade", "4 is outside the scale 0..3")) == (
        "queries[3].judgments[1].grade: 4 is outside the scale 0..3"
    )
    assert str(Problem("", "the file is empty")) == "the file is empty"


def test_misuse_by_the_caller_is_not_a_format_error() -> None:
    with pytest.raises(ValueError, match="unknown golden file format 'xml'") as info:
        parse("{}", fmt="xml")  # type: ignore[arg-type]
    assert not isinstance(info.value, GoldenFormatError)
    with pytest.raises(TypeError):
        parse(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown golden file format"):
        dump(load(GOLDEN / "seed_sample.json"), "yaml")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ warnings


def test_it_warns_about_queries_that_cannot_score_above_zero() -> None:
    warnings = golden_warnings(load(GOLDEN / "full.json"))

    # q-5 has no judgments either, but it is expect_empty: nothing to score.
    assert warnings == [
        Problem(
            'query "q-6"',
            "no judgment at grade >= 1, so it cannot score above 0 (no_positive_judgments)",
            "no_positive_judgments",
            "q-6",
        )
    ]


def test_a_query_with_no_judgments_at_all_is_warned_about_not_rejected() -> None:
    data = base()
    data["queries"][1]["judgments"] = []

    golden = from_dict(data)

    assert [w.query_id for w in golden_warnings(golden)] == ["q-2"]
    assert golden_warnings(from_dict(base())) == []


# ------------------------------------------------------------------------------------------ dumping


SEED_CANONICAL = """{
  "version": "2026-08-01",
  "k": 10,
  "queries": [
    {
      "id": "q-0471",
      "text": "refund policy for annual plan",
      "locale": "en-US",
      "filters": {
        "product": "billing",
        "status": "published"
      },
      "judgments": [
        {"doc_id": "doc-1199", "grade": 1},
        {"doc_id": "doc-4410", "grade": 2},
        {"doc_id": "doc-8821", "grade": 3}
      ]
    }
  ]
}
"""


def test_it_dumps_the_seed_sample_in_canonical_form() -> None:
    golden = load(GOLDEN / "seed_sample.json")

    assert dump_json(golden).decode("utf-8") == SEED_CANONICAL
    assert dump_jsonl(golden).decode("utf-8") == (
        '{"version": "2026-08-01", "k": 10}\n'
        '{"id": "q-0471", "text": "refund policy for annual plan", "locale": "en-US", '
        '"filters": {"product": "billing", "status": "published"}, "judgments": '
        '[{"doc_id": "doc-1199", "grade": 1}, {"doc_id": "doc-4410", "grade": 2}, {"doc_id": "doc-8821", "grade": 3}]}\n'
    )


def test_to_dict_writes_fields_in_the_fixed_order_and_omits_defaults() -> None:
    data = to_dict(load(GOLDEN / "full.json"))

    assert list(data) == ["version", "k", "relevant_min_grade", "scale", "rubric", "queries"]
    q10 = data["queries"][-1]
    assert list(q10) == [
        "id",
        "text",
        "locale",
        "filters",
        "stratum",
        "traffic_band",
        "weight",
        "critical",
        "tags",
        "judgments",
    ]
    assert list(data["queries"][5]) == [
        "id",
        "text",
        "stratum",
        "traffic_band",
        "failure_mode",
        "tags",
        "judgments",
    ]
    assert list(data["queries"][2]) == [
        "id",
        "text",
        "locale",
        "filters",
        "stratum",
        "tier",
        "tags",
        "judgments",
    ]
    assert list(data["queries"][4]) == [
        "id",
        "text",
        "filters",
        "stratum",
        "expect_empty",
        "tags",
        "judgments",
    ]
    assert list(q10["judgments"][0]) == ["doc_id", "grade", "key"]
    minimal = to_dict(from_dict({"version": "v", "queries": [{"id": "q", "text": "t"}]}))
    assert minimal == {"version": "v", "k": 10, "queries": [{"id": "q", "text": "t", "judgments": []}]}


def test_the_cutoff_and_scale_are_written_only_when_not_default() -> None:
    binary = to_dict(load(GOLDEN / "binary.json"))
    assert "relevant_min_grade" not in binary and binary["scale"] == {"min": 0, "max": 1}
    explicit_default = to_dict(from_dict(base() | {"scale": {"min": 0, "max": 3}, "relevant_min_grade": 2}))
    assert list(explicit_default) == ["version", "k", "queries"]


@pytest.mark.parametrize(
    ("weight", "written"), [(2, "2"), (2.0, "2"), (0.1, "0.1"), (1e-7, "1e-07"), (1e20, "1e+20")]
)
def test_an_integral_weight_is_written_as_an_integer(weight: float, written: str) -> None:
    data = base()
    data["queries"][0]["weight"] = weight

    raw = dump_jsonl(from_dict(data)).decode()

    assert f'"weight": {written},' in raw
    assert parse(raw).queries[0].weight == weight


def test_a_weight_of_one_is_the_default_and_not_written() -> None:
    data = base()
    data["queries"][0]["weight"] = 1.0

    assert b"weight" not in dump_json(from_dict(data))


def test_a_regrade_is_a_one_line_diff() -> None:
    golden = load(GOLDEN / "full.json")
    data = to_dict(golden)
    data["queries"][1]["judgments"][1]["grade"] = 3
    before = dump_json(golden).decode().splitlines()
    after = dump_json(from_dict(data)).decode().splitlines()

    changed = [line for line in difflib.unified_diff(before, after, lineterm="", n=0) if line[:1] in "+-"]

    assert changed == [
        "--- ",
        "+++ ",
        '-        {"doc_id": "doc-4410", "grade": 2},',
        '+        {"doc_id": "doc-4410", "grade": 3},',
    ]


def test_the_dump_does_not_depend_on_input_order() -> None:
    data = to_dict(load(GOLDEN / "full.json"))
    shuffled = copy.deepcopy(data)
    shuffled["queries"].reverse()
    for query in shuffled["queries"]:
        query["judgments"].reverse()
        if "filters" in query:
            query["filters"] = dict(reversed(list(query["filters"].items())))
        if "tags" in query:
            query["tags"].reverse()

    assert dump_json(from_dict(shuffled)) == dump_json(from_dict(data))
    assert dump_jsonl(from_dict(shuffled)) == dump_jsonl(from_dict(data))


def test_it_writes_utf8_text_unescaped_with_a_trailing_newline() -> None:
    raw = (GOLDEN / "full.json").read_bytes()

    assert "webhook signature «invalid» café".encode() in raw
    assert raw.endswith(b"}\n") and not raw.endswith(b"\n\n")


def test_it_refuses_to_dump_what_it_could_not_read_back() -> None:
    off_scale = GoldenFile(version="v1", queries=(GoldenQuery("q-1", "t", (Judgment("d", 7),)),))
    # The dataclass default cutoff (2) is outside a binary scale: written out, the file would not parse.
    binary_default = GoldenFile(
        version="v1", queries=(GoldenQuery("q-1", "t", (Judgment("d", 1),)),), scale=Scale(0, 1)
    )
    duplicate = GoldenFile(version="v1", queries=(GoldenQuery("q-1", "t"), GoldenQuery("q-1", "u")))

    for golden, expected in [
        (off_scale, 'queries[0].judgments[0].grade: 7 is outside the scale 0..3 (query "q-1")'),
        (
            binary_default,
            "relevant_min_grade: 2 must be above the scale minimum and at most its maximum (1..1 on the scale 0..1)",
        ),
        (duplicate, 'queries[1].id: duplicate query id "q-1" (also queries[0])'),
    ]:
        for fmt in ("json", "jsonl"):
            with pytest.raises(GoldenFormatError) as info:
                dump(golden, fmt)
            assert str(info.value) == expected


def test_a_hand_built_golden_file_dumps_in_canonical_order() -> None:
    golden = GoldenFile(
        version="v1",
        queries=(
            GoldenQuery("q-10", "b", (Judgment("d-10", 1), Judgment("d-9", 2)), tags=("z", "a")),
            GoldenQuery("q-9", "a", filters={"b": 1, "a": [True, None]}, weight=3),
        ),
    )

    raw = dump_jsonl(golden).decode()

    assert raw.splitlines()[1:] == [
        '{"id": "q-9", "text": "a", "filters": {"a": [true, null], "b": 1}, "weight": 3, "judgments": []}',
        '{"id": "q-10", "text": "b", "tags": ["a", "z"], "judgments": [{"doc_id": "d-9", "grade": 2}, '
        '{"doc_id": "d-10", "grade": 1}]}',
    ]
    assert dump_jsonl(parse(raw)) == raw.encode()
