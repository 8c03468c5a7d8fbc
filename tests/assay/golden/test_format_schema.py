"""The JSON Schema agrees with the parser on valid files and on the invalid ones it can express."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from jsonschema import Draft202012Validator

from assay.golden.format import GoldenFormatError, from_dict, load, parse
from assay.golden.schema import SCHEMA_PATH, line_schema, load_schema
from tests.assay.golden.test_format import DELETE, GOLDEN, _set, base
from tests.assay.golden.test_format_properties import GENERATED, golden_dicts

VALIDATOR = Draft202012Validator(load_schema())


def schema_errors(data: object) -> list[str]:
    return [error.message for error in VALIDATOR.iter_errors(data)]


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))

    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {"header", "queryLine", "query", "judgment"} <= schema["$defs"].keys()


@pytest.mark.parametrize("name", ["seed_sample.json", "full.json", "binary.json"])
def test_it_accepts_the_valid_fixtures(name: str) -> None:
    data = json.loads((GOLDEN / name).read_text(encoding="utf-8"))

    assert schema_errors(data) == []
    load(GOLDEN / name)  # and so does the parser


def test_its_line_schemas_accept_each_line_of_the_jsonl_fixture() -> None:
    header, *queries = (GOLDEN / "full.jsonl").read_text(encoding="utf-8").splitlines()
    header_validator = Draft202012Validator(line_schema("header"))
    query_validator = Draft202012Validator(line_schema("queryLine"))

    assert list(header_validator.iter_errors(json.loads(header))) == []
    assert all(list(query_validator.iter_errors(json.loads(line))) == [] for line in queries)
    assert [e.message for e in header_validator.iter_errors({"version": "v", "queries": []})] == [
        "Unevaluated properties are not allowed ('queries' was unexpected)"
    ]
    assert list(query_validator.iter_errors(json.loads(header)))  # a header is not a query line
    with pytest.raises(ValueError, match="unknown JSONL line kind"):
        line_schema("footer")


# Invalid files both must reject: (case, mutation of base()).
BOTH_REJECT: list[tuple[str, Any]] = [
    ("version missing", _set("version", DELETE)),
    ("version with a space", _set("version", "v 1")),
    ("queries missing", _set("queries", DELETE)),
    ("no queries", _set("queries", [])),
    ("k zero", _set("k", 0)),
    ("k a string", _set("k", "10")),
    ("k a boolean", _set("k", True)),
    ("relevant_min_grade above the default scale", _set("relevant_min_grade", 4)),
    ("relevant_min_grade zero", _set("relevant_min_grade", 0)),
    ("scale with an unknown field", _set("scale", {"min": 0, "max": 3, "step": 1})),
    ("scale negative", _set("scale", {"min": -1, "max": 3})),
    ("scale without max", _set("scale", {"min": 0})),
    ("rubric blank", _set("rubric", " ")),
    ("a typo in a file field", _set("querys", [])),
    ("query not an object", _set("queries.1", "q-2")),
    ("query id missing", _set("queries.1.id", DELETE)),
    ("query id with a tab", _set("queries.1.id", "q\t2")),
    ("text missing", _set("queries.1.text", DELETE)),
    ("text blank", _set("queries.1.text", "  ")),
    ("a filter value an object", _set("queries.1.filters", {"product": {"in": ["a"]}})),
    ("a filter list nested", _set("queries.1.filters", {"region": ["eu", ["us"]]})),
    ("weight zero", _set("queries.1.weight", 0)),
    ("weight a string", _set("queries.1.weight", "2")),
    ("tier unknown", _set("queries.1.tier", "gold")),
    ("traffic band unknown", _set("queries.1.traffic_band", "middle")),
    ("traffic band a number", _set("queries.1.traffic_band", 1)),
    ("failure mode blank", _set("queries.1.failure_mode", " ")),
    ("failure mode a number", _set("queries.1.failure_mode", 3)),
    ("expect_empty a string", _set("queries.1.expect_empty", "yes")),
    ("tags repeated", _set("queries.1.tags", ["head", "head"])),
    ("a typo in a query field", _set("queries.1.judgements", [])),
    ("judgment not an object", _set("queries.1.judgments.0", ["d-3", 2])),
    ("doc_id a number", _set("queries.1.judgments.0.doc_id", 8821)),
    ("grade missing", _set("queries.1.judgments.0.grade", DELETE)),
    ("grade above the default scale", _set("queries.1.judgments.0.grade", 4)),
    ("grade negative", _set("queries.1.judgments.0.grade", -1)),
    ("grade fractional", _set("queries.1.judgments.0.grade", 2.5)),
    ("grade a boolean", _set("queries.1.judgments.0.grade", True)),
    ("a typo in a judgment field", _set("queries.1.judgments.0.grades", 2)),
    (
        "critical and expect_empty",
        _set(
            "queries.1",
            {
                "id": "q",
                "text": "t",
                "critical": True,
                "expect_empty": True,
                "judgments": [{"doc_id": "d", "grade": 3}],
            },
        ),
    ),
    (
        "critical without a positive judgment",
        _set(
            "queries.1",
            {"id": "q", "text": "t", "critical": True, "judgments": [{"doc_id": "d", "grade": 0}]},
        ),
    ),
    ("critical without judgments", _set("queries.1", {"id": "q", "text": "t", "critical": True})),
    ("top level an array", lambda data: [data]),
]


@pytest.mark.parametrize(("case", "mutate"), BOTH_REJECT, ids=[case for case, _ in BOTH_REJECT])
def test_the_schema_rejects_what_the_parser_rejects(case: str, mutate: Any) -> None:
    data = mutate(base())

    with pytest.raises(GoldenFormatError):
        from_dict(data)
    assert schema_errors(data), f"the schema accepted: {case}"


@pytest.mark.parametrize("name", ["typo_judgements.json", "many_problems.json", "empty_queries.json"])
def test_the_schema_rejects_the_invalid_fixtures_it_can_express(name: str) -> None:
    raw = (GOLDEN / "invalid" / name).read_text(encoding="utf-8")

    with pytest.raises(GoldenFormatError):
        parse(raw)
    assert schema_errors(json.loads(raw))


# What a schema cannot say: the parser alone catches these (docs/golden-format.md says so).
PARSER_ONLY: list[tuple[str, Any]] = [
    ("duplicate query id", _set("queries.1.id", "q-1")),
    ("duplicate judgment for a document", _set("queries.0.judgments.1.doc_id", "d-1")),
    ("grade off an explicit scale", _set("scale", {"min": 0, "max": 1})),
    ("scale min above max", _set("scale", {"min": 3, "max": 1})),
    ("grade with a decimal point", _set("queries.1.judgments.0.grade", 2.0)),
]


@pytest.mark.parametrize(("case", "mutate"), PARSER_ONLY, ids=[case for case, _ in PARSER_ONLY])
def test_the_parser_also_catches_what_the_schema_cannot_express(case: str, mutate: Any) -> None:
    data = mutate(base())

    assert schema_errors(data) == []
    with pytest.raises(GoldenFormatError):
        from_dict(data)


@GENERATED
@given(golden_dicts())
def test_the_schema_accepts_every_file_the_parser_accepts(data: dict[str, Any]) -> None:
    from_dict(data)

    assert schema_errors(data) == []
