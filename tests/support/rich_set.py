"""A golden set as months of raters' work leave it: four queries with every field set (a critical one, a
shadow one, one expecting no results) and eleven frozen labels; and `dump`, the whole of a set as one
text, to compare a set before and after an import, its preview or its undo."""

from __future__ import annotations

import json
from typing import Any

from labeling.models import Document, FrozenLabel, GoldenSet, Query
from tests import factories


def rich_set() -> GoldenSet:
    """Four queries with every field set, eleven labels: what months of raters' work look like."""
    golden_set = factories.GoldenSetFactory.create(slug="hc", locales=["en-US", "de-DE"])
    for i in range(1, 9):
        factories.DocumentFactory.create(golden_set=golden_set, doc_id=f"d{i}", key=f"https://kb/{i}")
    rich: dict[str, Any] = {
        "locale": "en-US",
        "filters": {"product": "billing"},
        "traffic_band": "head",
        "weight": 12.0,
    }
    queries: list[dict[str, Any]] = [
        dict(text="cancel plan", stratum="billing", failure_mode="typo", tags=["money"], **rich),
        dict(text="refund guarantee", stratum="billing", critical=True, **rich),
        dict(text="api keys", stratum="developer", tier="shadow", locale="de-DE"),
        dict(text="nothing here", stratum="blog", expect_empty=True),
    ]
    for n, fields in enumerate(queries, start=1):
        factories.QueryFactory.create(golden_set=golden_set, external_id=f"q-{n:04d}", **fields)
    labels = {
        1: [("d1", 3), ("d2", 1), ("d3", 0)],
        2: [("d1", 2), ("d4", 3), ("d5", 0)],
        3: [("d6", 2), ("d7", 1)],
    }
    labels[4] = [("d8", 0), ("d2", 0), ("d3", 0)]
    for n, pairs in labels.items():
        query = Query.objects.get(golden_set=golden_set, external_id=f"q-{n:04d}")
        for doc_id, grade in pairs:
            FrozenLabel.objects.create(
                query=query,
                document=Document.objects.get(golden_set=golden_set, doc_id=doc_id),
                grade=grade,
                version="v1",
            )
    golden_set.frozen_version = "v1"
    golden_set.save()
    return golden_set


def dump(golden_set: GoldenSet) -> str:
    """Every label and query field of the set, its documents' keys and its own settings, as one text."""
    labels = sorted(
        FrozenLabel.objects.filter(query__golden_set=golden_set).values_list(
            "query__external_id", "document__doc_id", "grade", "version", "source", "judge_id", "judge_name"
        )
    )
    queries = sorted(
        Query.objects.filter(golden_set=golden_set).values_list(
            "external_id",
            "text",
            "locale",
            "filters",
            "stratum",
            "traffic_band",
            "failure_mode",
            "weight",
            "tier",
            "status",
            "quarantine_reason",
            "expect_empty",
            "critical",
            "tags",
        )
    )
    keys = sorted(Document.objects.filter(golden_set=golden_set).values_list("doc_id", "key"))
    golden_set.refresh_from_db()
    own = [golden_set.k, golden_set.relevant_min_grade, golden_set.frozen_version]
    return json.dumps({"labels": labels, "queries": queries, "keys": keys, "set": own}, indent=1)
