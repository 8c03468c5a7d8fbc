"""How the evaluation pages' long lists are searched, filtered and sorted (`labeling.lists`: the one list
helper, and `templates/_list_controls.html`): runs, targets and the side-by-side's query picker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.db.models import Q

from evaluation.runs.models import EvaluationRun, SearchTarget
from labeling.lists import Filter, ListSpec, Sort, choices_of, contains, equals, ordered, where
from labeling.models import GoldenSet

RUN_PAGE = 50
TARGET_PAGE = 50
PICKER_PAGE = 50
SET_SLUG = "golden_version__golden_set__slug"
TRIGGERS = [
    ("web", "the web page"),
    ("api", "the API"),
    ("ci", "CI"),
    ("schedule", "a nightly schedule"),
    ("demo", "the demo command (manage.py demo_runs)"),
]


def runs_spec(*, sets: Sequence[GoldenSet], targets: Sequence[SearchTarget]) -> ListSpec:
    """The runs list: the filters keep the names `set`, `target` and `status` that links from the report
    and the target page use."""
    return ListSpec(
        noun="runs",
        search=contains(
            "target__name",
            "golden_version__name",
            "golden_version__golden_set__slug",
            "triggered_by__username",
        ),
        search_hint="target, version, set or who",
        filters=[
            Filter(
                "set",
                "Golden set",
                [(s.slug, s.slug) for s in sets],
                equals("golden_version__golden_set__slug"),
            ),
            Filter("target", "Target", [(str(t.pk), t.name) for t in targets], equals("target_id", int)),
            Filter("status", "Status", EvaluationRun.Status.choices, equals("status")),
            Filter("verdict", "Verdict", EvaluationRun.Verdict.choices, equals("verdict")),
            Filter("trigger", "Started from", TRIGGERS, equals("trigger")),
            Filter(
                "overrides",
                "Params",
                [("yes", "with overrides"), ("no", "the target's")],
                where(lookup=lambda v: ~Q(params={}) if v == "yes" else Q(params={})),
            ),
        ],
        sorts=[
            Sort("new", "newest first", ordered("-created", "-pk")),
            Sort("old", "oldest first", ordered("created", "pk")),
            Sort("target", "target", ordered("target__name", "-created", "-pk")),
            Sort("errors", "most errors", ordered("-errors", "-created", "-pk")),
        ],
        per_page=RUN_PAGE,
        anchor="runs",
    )


def targets_spec(*, sets: Sequence[GoldenSet], adapters: Sequence[tuple[str, str]]) -> ListSpec:
    return ListSpec(
        noun="targets",
        search=contains("name", "description", "url"),
        search_hint="name, description or URL",
        filters=[
            Filter("adapter", "Adapter", adapters, equals("adapter")),
            Filter("set", "Golden set", [(s.slug, s.slug) for s in sets], equals("golden_sets__slug")),
        ],
        sorts=[
            Sort("name", "name", ordered("name")),
            Sort("new", "newest first", ordered("-created", "-pk")),
            Sort("updated", "recently changed", ordered("-updated", "-pk")),
        ],
        per_page=TARGET_PAGE,
        anchor="targets",
    )


def _changed(row: dict[str, Any], value: str) -> bool:
    change = row.get("change_value")
    if value == "worse":
        return change is not None and change < 0
    if value == "better":
        return change is not None and change > 0
    if value == "same":
        return change == 0
    return change is None  # "missing": no nDCG on one side


def _report_queries(
    rows: Sequence[dict[str, Any]], *, filters: list[Filter], sorts: list[Sort], prefix: str, anchor: str
) -> ListSpec:
    """A list of a report's queries (rows with `id`, `text` and `stratum`): searched by id or text, filtered
    by stratum and then by `filters`."""
    return ListSpec(
        noun="queries",
        search=contains("id", "text"),
        search_hint="query id or text",
        filters=[
            Filter(
                f"{prefix}stratum",
                "Stratum",
                choices_of((r["stratum"] for r in rows), "(none)"),
                equals("stratum"),
            ),
            *filters,
        ],
        sorts=sorts,
        per_page=PICKER_PAGE,
        prefix=prefix,
        anchor=anchor,
    )


def picker_spec(choices: Sequence[dict[str, Any]]) -> ListSpec:
    """The side-by-side's query picker (`report_page.compare_choices` rows)."""
    return _report_queries(
        choices,
        filters=[
            Filter(
                "change",
                "nDCG from A to B",
                [("worse", "lost"), ("better", "gained"), ("same", "unchanged"), ("missing", "not in both")],
                where(_changed),
            )
        ],
        sorts=[
            Sort("loss", "largest loss first", ordered("change_value", "id")),
            Sort("gain", "largest gain first", ordered("-change_value", "id")),
            Sort("id", "query id", ordered("id")),
            Sort("b", "lowest nDCG in B", ordered("b_value", "id")),
            Sort("overlap", "least overlap (RBO) first", ordered("rbo_value", "id")),
        ],
        prefix="",
        anchor="choices",
    )


# The run report's list of every query: its parameters' prefix and its section's id.
PER_QUERY_PREFIX = "pq-"
PER_QUERY_ANCHOR = "per-query"


def per_query_spec(rows: Sequence[dict[str, Any]]) -> ListSpec:
    """The report's list of every query (`report_page.report_context`'s `per_query_rows`)."""
    return _report_queries(
        rows,
        filters=[
            Filter(f"{PER_QUERY_PREFIX}tier", "Tier", choices_of(r["tier"] for r in rows), equals("tier")),
            Filter(
                f"{PER_QUERY_PREFIX}errors",
                "Errors",
                [("yes", "errored"), ("no", "answered")],
                where(lambda row, v: bool(row["error"]) == (v == "yes")),
            ),
        ],
        sorts=[
            Sort("id", "query id", ordered("id")),
            Sort("ndcg", "lowest nDCG first", ordered("ndcg_value", "id")),
            Sort("ndcg-high", "highest nDCG first", ordered("-ndcg_value", "id")),
            Sort("mrr", "lowest RR first", ordered("mrr_value", "id")),
        ],
        prefix=PER_QUERY_PREFIX,
        anchor=PER_QUERY_ANCHOR,
    )


def per_query_found(query_id: str) -> str:
    """The run report's list of every query searched for one query, open on the page with its row: the
    way back from that query's evidence page (`?pq-q=q-0471#per-query`)."""
    return f"?{urlencode({f'{PER_QUERY_PREFIX}q': query_id})}#{PER_QUERY_ANCHOR}"
