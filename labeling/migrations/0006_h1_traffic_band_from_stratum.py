"""Queries sampled from a query log before 0005 hold their traffic band in `stratum` (head, torso, tail),
mixed with the product verticals: the band moves to `traffic_band`, the stratum is left empty (the log
gave no vertical), and a known-failure reserve query records its failure mode, zero results (the reserve
held only queries that returned nothing). Only the query-log import's queries (tag `from-log`) move."""

from __future__ import annotations

from typing import Any

from django.db import migrations

BANDS = ("head", "torso", "tail")  # frozen here: a migration does not follow later code
ZERO_RESULTS = "zero-results"


def _logged(apps: Any, **filters: Any) -> list[Any]:
    # Tags are a JSON list; the filter runs in Python because SQLite (`make run`) has no JSON contains.
    Query = apps.get_model("labeling", "Query")
    return [q for q in Query.objects.filter(**filters) if "from-log" in (q.tags or [])]


def bands_apart(apps: Any, schema_editor: Any) -> None:
    moved = _logged(apps, stratum__in=BANDS, traffic_band="")
    for query in moved:
        query.traffic_band, query.stratum = query.stratum, ""
        if "known-failure" in query.tags and not query.failure_mode:
            query.failure_mode = ZERO_RESULTS
    apps.get_model("labeling", "Query").objects.bulk_update(
        moved, ["stratum", "traffic_band", "failure_mode"], batch_size=500
    )


def bands_back(apps: Any, schema_editor: Any) -> None:
    moved = _logged(apps, stratum="", traffic_band__in=BANDS)
    for query in moved:
        query.stratum, query.traffic_band = query.traffic_band, ""
        if query.failure_mode == ZERO_RESULTS:
            query.failure_mode = ""
    apps.get_model("labeling", "Query").objects.bulk_update(
        moved, ["stratum", "traffic_band", "failure_mode"], batch_size=500
    )


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0005_set_readings_query_bands"),
    ]

    operations = [
        migrations.RunPython(bands_apart, bands_back),
    ]
