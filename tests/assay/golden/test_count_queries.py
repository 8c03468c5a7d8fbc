"""`count_queries`: how many queries a golden file holds, counted without checking them (what lets the
web upload refuse a file too large for one request before reading it, golden_io.services)."""

from __future__ import annotations

import json

import pytest

from assay.golden.format import count_queries, parse

HEADER = {"version": "2026-08-01", "k": 10}


def _query(i: int) -> dict[str, object]:
    return {"id": f"q-{i}", "text": f"query {i}", "judgments": [{"doc_id": "d1", "grade": 2}]}


@pytest.mark.parametrize("n", [1, 7, 250])
def test_it_counts_what_parse_reads_in_both_forms(n: int) -> None:
    queries = [_query(i) for i in range(n)]
    as_json = json.dumps({**HEADER, "queries": queries}).encode()
    as_jsonl = "\n\n".join(json.dumps(row) for row in [HEADER, *queries]).encode() + b"\n"

    assert count_queries(as_json) == count_queries(as_jsonl) == len(parse(as_json).queries) == n


@pytest.mark.parametrize(
    ("data", "count"),
    [
        (json.dumps({**HEADER, "queries": [{"id": 5}, {"judgments": "none"}]}).encode(), 2),  # unchecked
        (b"[1, 2]", None),  # one JSON document, not a golden file
        (json.dumps({**HEADER, "queries": [1, 2]}).encode(), None),
        (json.dumps(HEADER).encode(), None),
        (b'{"queries": [{"x": ' + b"[" * 100_000 + b"}]}", None),  # too deep to skip: parse says why
        (b"", 0),
    ],
    ids=["unchecked", "list", "not-objects", "no-queries", "deep", "empty"],
)
def test_it_counts_without_checking_and_gives_up_only_on_what_is_no_golden_file(
    data: bytes, count: int | None
) -> None:
    assert count_queries(data) == count
