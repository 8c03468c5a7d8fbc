"""Revision 2 of the golden file format (docs/golden-format.md, "Revisions"): a query's traffic band and
failure mode, apart from its stratum. Every revision-1 file reads, validates and dumps exactly as before."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from assay.golden.format import (
    FORMAT_REVISION,
    QUERY_FIELDS,
    GoldenFormatError,
    dump,
    dump_json,
    dump_jsonl,
    from_dict,
    load,
    parse,
    to_dict,
)
from assay.golden.model import TRAFFIC_BANDS, GoldenFile, GoldenQuery, Judgment
from assay.golden.schema import line_schema, load_schema
from tests.assay.golden.test_format import GOLDEN, base

REVISION_1 = GOLDEN / "revision-1"
DEMO_GOLDEN = Path(__file__).resolve().parents[3] / "demo" / "golden.json"
# Canonical revision-1 files: each must dump back to its very bytes.
REVISION_1_FILES = [REVISION_1 / "full.json", REVISION_1 / "full.jsonl", GOLDEN / "binary.json", DEMO_GOLDEN]
SCHEMA = Draft202012Validator(load_schema())


def _banded() -> GoldenFile:
    return GoldenFile(
        version="v2",
        queries=(
            GoldenQuery(
                "q-1",
                "refund",
                (Judgment("d-1", 3),),
                stratum="billing",
                traffic_band="head",
                failure_mode="synonym",
            ),
            GoldenQuery("q-2", "rfund", (Judgment("d-1", 2),), traffic_band="tail", failure_mode="typo"),
            GoldenQuery("q-3", "api keys", (Judgment("d-2", 1),), stratum="developer"),
        ),
    )


@pytest.mark.parametrize("path", REVISION_1_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_revision_1_file_reads_and_dumps_back_to_its_bytes(path: Path) -> None:
    golden = load(path)

    assert all(q.traffic_band is None and q.failure_mode is None for q in golden.queries)
    assert dump(golden, "jsonl" if path.suffix == ".jsonl" else "json") == path.read_bytes()


@pytest.mark.parametrize("path", [p for p in REVISION_1_FILES if p.suffix == ".json"], ids=lambda p: p.name)
def test_the_schema_still_accepts_a_revision_1_file(path: Path) -> None:
    assert list(SCHEMA.iter_errors(json.loads(path.read_text(encoding="utf-8")))) == []


def test_the_full_fixture_is_its_revision_1_twin_plus_a_band_and_a_failure_mode() -> None:
    new, old = load(GOLDEN / "full.json"), load(REVISION_1 / "full.json")

    stripped = replace(
        new, queries=tuple(replace(q, traffic_band=None, failure_mode=None) for q in new.queries)
    )
    assert stripped == old
    assert [(q.id, q.traffic_band, q.failure_mode) for q in new.queries if q.traffic_band] == [
        ("q-6", "tail", "zero-results"),
        ("q-10", "head", None),
    ]


def test_the_band_and_the_failure_mode_round_trip_in_both_forms() -> None:
    golden = _banded()

    for raw in (dump_json(golden), dump_jsonl(golden)):
        assert parse(raw) == golden
        assert dump_json(parse(raw)) == dump_json(golden)
    q1 = to_dict(golden)["queries"][0]
    assert list(q1) == ["id", "text", "stratum", "traffic_band", "failure_mode", "judgments"]
    assert (q1["stratum"], q1["traffic_band"], q1["failure_mode"]) == ("billing", "head", "synonym")
    assert "traffic_band" not in to_dict(golden)["queries"][2]


@pytest.mark.parametrize("band", TRAFFIC_BANDS)
def test_every_band_is_accepted_and_kept_apart_from_the_stratum(band: str) -> None:
    data = base()
    data["queries"][0] |= {"stratum": "billing", "traffic_band": band, "failure_mode": "zero-results"}

    query = from_dict(data).queries[0]

    assert (query.stratum, query.traffic_band, query.failure_mode) == ("billing", band, "zero-results")


def test_null_means_the_same_as_leaving_the_fields_out() -> None:
    data = base()
    data["queries"][0] |= {"traffic_band": None, "failure_mode": None}

    assert from_dict(data) == from_dict(base())
    assert dump_json(from_dict(data)) == dump_json(from_dict(base()))


def test_an_unknown_field_lists_the_new_fields_among_the_allowed_ones() -> None:
    data = base()
    data["queries"][0]["vertical_slice_name"] = "billing"

    with pytest.raises(GoldenFormatError) as info:
        from_dict(data)

    assert "traffic_band, failure_mode" in str(info.value)
    assert QUERY_FIELDS.index("traffic_band") == QUERY_FIELDS.index("stratum") + 1


def test_the_schema_says_the_revision_and_accepts_the_new_fields() -> None:
    assert FORMAT_REVISION >= 2
    assert load_schema()["$comment"].startswith(f"Format revision {FORMAT_REVISION} ")
    query_line = Draft202012Validator(line_schema("queryLine"))
    data: dict[str, Any] = to_dict(_banded())

    assert list(SCHEMA.iter_errors(data)) == []
    for query in data["queries"]:
        assert list(query_line.iter_errors(query)) == []
    assert (
        list(query_line.iter_errors({"id": "q", "text": "t", "traffic_band": None, "failure_mode": None}))
        == []
    )
    errors = [e.message for e in query_line.iter_errors({"id": "q", "text": "t", "traffic_band": "middle"})]
    assert errors == ["'middle' is not one of ['head', 'torso', 'tail', None]"]


def test_revision_3_adds_the_judgment_source_to_the_schema_as_the_parser_reads_it() -> None:
    """docs/golden-format.md, "Judgment sources": `source` is "judge", or absent or null (humans)."""
    assert FORMAT_REVISION == 3
    assert load_schema()["$comment"].startswith("Format revision 3 ")
    data = base()
    for source, valid in (("judge", True), (None, True), ("human", False), ("Judge", False), (1, False)):
        data["queries"][0]["judgments"][0]["source"] = source
        schema_ok = list(SCHEMA.iter_errors(data)) == []
        try:
            from_dict(data)
            parsed_ok = True
        except GoldenFormatError:
            parsed_ok = False
        assert schema_ok == parsed_ok == valid, source
