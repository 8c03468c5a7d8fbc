"""Migration 0006_h1 moves the traffic band that query-log imports wrote into `stratum` to `traffic_band`:
the strata are verticals again. Queries not sampled from a log keep their stratum, whatever it says."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("labeling", "0005_set_readings_query_bands")]
AFTER = [("labeling", "0006_h1_traffic_band_from_stratum")]


def _apps_at(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


def _rows(apps: Any) -> list[tuple[str, str, str, str]]:
    Query = apps.get_model("labeling", "Query")
    return sorted(Query.objects.values_list("external_id", "stratum", "traffic_band", "failure_mode"))


def test_a_log_queries_band_leaves_its_stratum_and_comes_back_on_reverse() -> None:
    old = _apps_at(BEFORE)
    rubric = old.get_model("labeling", "Rubric").objects.create(name="r", version=1)
    golden_set = old.get_model("labeling", "GoldenSet").objects.create(
        slug="s", name="S", surface="help", rubric=rubric
    )
    Query = old.get_model("labeling", "Query")
    for external_id, stratum, tags in [
        ("log-1", "head", ["from-log"]),
        ("log-2", "tail", ["from-log", "known-failure"]),
        ("log-3", "billing", ["from-log"]),  # a vertical a reviewer gave it: not a band
        ("q-1", "torso", []),  # not from a log: whatever its stratum means, it stays
    ]:
        Query.objects.create(
            golden_set=golden_set, external_id=external_id, text=external_id, stratum=stratum, tags=tags
        )
    try:
        new = _apps_at(AFTER)
        assert _rows(new) == [
            ("log-1", "", "head", ""),
            ("log-2", "", "tail", "zero-results"),
            ("log-3", "billing", "", ""),
            ("q-1", "torso", "", ""),
        ]
        back = _apps_at(BEFORE)
        assert _rows(back) == [
            ("log-1", "head", "", ""),
            ("log-2", "tail", "", ""),
            ("log-3", "billing", "", ""),
            ("q-1", "torso", "", ""),
        ]
    finally:
        _apps_at(MigrationExecutor(connection).loader.graph.leaf_nodes())
