"""Re-scoring a baseline on a new golden version (`assay.rescore`): the baseline's stored lists against the
new labels give exactly what scoring those lists against the new version gives, queries retired or new to
the version are dropped or absent, and every artifact that cannot be re-scored is refused with its reason.

`relabel_case` is the generated case the command-line tests (tests/assay/test_cli_rescore.py) use too."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.report import build_report
from assay.rescore import RescoreError, rescore_report, rescore_results
from assay.results import QueryResult

AT = "2026-09-02T03:04:05Z"
TITLES = ("Refund policy", "Refund policy", "Reset your password", "API keys", "Billing FAQ")


@dataclass(frozen=True)
class Case:
    old: GoldenFile
    new: GoldenFile
    results: dict[str, QueryResult]


def relabel_case(seed: int, *, k: int = 5, queries: int = 12, depth: int | None = None) -> Case:
    """An old golden version, the new one (grades changed, judgments added and retired, the same queries)
    and result lists of up to `depth` (default k + 3) documents, some repeated, some errored, with titles."""
    rng = random.Random(seed)
    depth = k + 3 if depth is None else depth
    pool = [f"d{i}" for i in range(12)]
    old_queries: list[GoldenQuery] = []
    new_queries: list[GoldenQuery] = []
    results: dict[str, QueryResult] = {}
    for i in range(queries):
        qid = f"q-{i}"
        expect_empty = i % 7 == 6
        grades = {} if expect_empty else {d: rng.randint(0, 3) for d in rng.sample(pool, rng.randint(1, 6))}
        new_grades = dict(grades)
        if not expect_empty:
            for doc in list(new_grades):
                roll = rng.random()
                if roll < 0.25:
                    new_grades[doc] = rng.randint(0, 3)  # changed
                elif roll < 0.4 and len(new_grades) > 1:
                    del new_grades[doc]  # retired
            for doc in rng.sample(pool, 2):
                new_grades.setdefault(doc, rng.randint(0, 3))  # added
        fields: dict[str, Any] = {
            "text": f"query {i}",
            "stratum": rng.choice(("billing", "account", None)),
            "tier": "shadow" if i % 5 == 4 else "core",
            "weight": rng.choice((1.0, 2.5)),
            "expect_empty": expect_empty,
        }
        for queries_of, graded in ((old_queries, grades), (new_queries, new_grades)):
            judged = tuple(Judgment(d, g) for d, g in sorted(graded.items()))
            critical = i % 4 == 1 and any(g >= 1 for g in graded.values())
            queries_of.append(GoldenQuery(id=qid, judgments=judged, critical=critical, **fields))
        if i % 9 == 8:
            results[qid] = QueryResult(query_id=qid, error="HTTP 503 after 4 attempts")
        else:
            ids = tuple(rng.choice(pool) for _ in range(rng.randint(0, depth)))
            titles = tuple(rng.choice(TITLES) for _ in ids)
            results[qid] = QueryResult(query_id=qid, ids=ids, titles=titles)
    old = GoldenFile(version="2026-08-01", queries=tuple(old_queries), k=k)
    new = GoldenFile(version="2026-09-01", queries=tuple(new_queries), k=k)
    return Case(old, new, results)


def artifact(golden: GoldenFile, results: dict[str, QueryResult], **run: Any) -> dict[str, Any]:
    """A report as a file holds it (through JSON, as `assay gate` reads it)."""
    report = build_report(golden, results, run=run or {"source": "score"})
    return json.loads(json.dumps(report))


def without_rescore(report: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in report.items() if key not in ("rescored", "run")}


def past_k_unknown(report: dict[str, Any], k: int) -> dict[str, Any]:
    """`report` as an artifact can know it: ranks past k are not stored, so they read as not returned."""
    out = json.loads(json.dumps(report))
    for row in out["per_query"]:
        row["ranks"] = {d: r if r is not None and r <= k else None for d, r in row["ranks"].items()}
    for entry in out["critical"]:
        if entry["rank"] is not None and entry["rank"] > k:
            entry["rank"], entry["ok"] = None, False
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 6))
def test_a_rescored_baseline_equals_scoring_its_lists_against_the_new_version(seed: int, k: int) -> None:
    case = relabel_case(seed, k=k)
    baseline = artifact(case.old, case.results, adapter="http_json", started_at="2026-08-02T01:00:00Z")

    rescored = rescore_report(baseline, case.new, by="rita", at=AT, source="baseline/relevance.json")

    expected = artifact(case.new, case.results)
    assert without_rescore(rescored) == past_k_unknown(without_rescore(expected), k)
    assert rescored["run"] == baseline["run"]
    assert rescored["rescored"] == {
        "from_version": "2026-08-01",
        "golden_version": "2026-09-01",
        "at": AT,
        "by": "rita",
        "source": "baseline/relevance.json",
    }


def test_lists_no_deeper_than_k_rescore_to_the_identical_report() -> None:
    case = relabel_case(7, k=5, depth=5)
    rescored = rescore_report(artifact(case.old, case.results), case.new, by=None, at=AT)

    expected = artifact(case.new, case.results)
    assert without_rescore(rescored) == without_rescore(expected)
    assert rescored["golden_version"] == "2026-09-01" and rescored["rescored"]["by"] is None
    # The new labels are read: some query's nDCG moved (the case changes grades on purpose).
    old_ndcg = {r["id"]: r["ndcg"] for r in artifact(case.old, case.results)["per_query"]}
    assert any(r["ndcg"] != old_ndcg[r["id"]] for r in rescored["per_query"])


def test_a_retired_query_is_dropped_and_a_new_one_is_absent() -> None:
    case = relabel_case(3, k=4, queries=8)
    retired, added = case.new.queries[-1].id, "q-new"
    new = replace(
        case.new,
        queries=(
            *case.new.queries[:-1],
            GoldenQuery(id=added, text="a new query", judgments=(Judgment("d1", 3),)),
        ),
    )

    rescored = rescore_report(artifact(case.old, case.results), new, by="rita", at=AT)

    ids = [row["id"] for row in rescored["per_query"]]
    assert retired not in ids and added not in ids
    assert ids == [q.id for q in new.queries if q.id != added]
    # Not a query that returned nothing: it is not counted at all.
    assert rescored["all"]["n_queries"] == len(case.new.queries) - 1
    assert rescored["flags"]["unknown_queries"] == []
    # Exactly the new version's scores of the queries both versions have.
    common = replace(new, queries=tuple(q for q in new.queries if q.id in ids))
    expected = artifact(common, {qid: r for qid, r in case.results.items() if qid in ids})
    assert without_rescore(rescored) == past_k_unknown(without_rescore(expected), 4)


def test_the_app_path_rescores_result_rows_with_titles_and_whole_lists() -> None:
    case = relabel_case(11, k=3)
    baseline = artifact(case.old, case.results)

    rescored = rescore_results(case.results, case.new, baseline=baseline, by="rita", at=AT, source="run 4")

    # Whole lists: even the ranks past k are known.
    assert without_rescore(rescored) == without_rescore(artifact(case.new, case.results))
    assert rescored["rescored"]["source"] == "run 4"


def test_it_keeps_the_baselines_bootstrap_seed() -> None:
    case = relabel_case(5)
    baseline = json.loads(json.dumps(build_report(case.old, case.results, bootstrap_seed=99)))

    rescored = rescore_report(baseline, case.new, by=None, at=AT)

    assert rescored["ci"]["ndcg"]["seed"] == 99
    expected = build_report(case.new, case.results, bootstrap_seed=99)
    assert rescored["ci"] == json.loads(json.dumps(expected["ci"]))


def test_a_different_k_is_refused() -> None:
    case = relabel_case(1, k=5)

    with pytest.raises(RescoreError) as error:
        rescore_report(artifact(case.old, case.results), replace(case.new, k=10), by=None, at=AT)

    assert error.value.problems == [
        "baseline was scored at k=5 and golden version 2026-09-01 scores at k=10: its stored top-5 lists "
        "cannot be re-scored at another depth (run the baseline again)"
    ]


def test_an_artifact_without_ids_is_refused_naming_the_queries() -> None:
    case = relabel_case(2, queries=8)
    baseline = artifact(case.old, case.results)
    for row in baseline["per_query"]:
        del row["ids"]

    with pytest.raises(RescoreError) as error:
        rescore_report(baseline, case.new, by=None, at=AT)

    assert error.value.problems == [
        "baseline: per_query has no ids for q-0, q-1, q-2, q-3, q-4 and 3 more: the artifact does not keep "
        "its result lists, so it cannot be re-scored (run the baseline again with this version of assay)"
    ]


def test_lists_shallower_than_they_should_be_are_refused() -> None:
    case = relabel_case(4, k=5, depth=9)
    baseline = artifact(case.old, case.results)
    deep = next(row for row in baseline["per_query"] if row["n"] >= 5 and row["error"] is None)
    deep["ids"] = deep["ids"][:2]

    with pytest.raises(RescoreError) as error:
        rescore_report(baseline, case.new, by=None, at=AT)

    assert error.value.problems == [
        f"baseline: stored lists shallower than the top min(n, 5) a re-score needs: {deep['id']} keeps 2 of 5"
    ]


@pytest.mark.parametrize(
    ("baseline", "problems"),
    [
        ([], ["baseline: expected a report object, got list"]),
        (
            {"k": 5, "per_query": {}},
            [
                "baseline: golden_version: expected the version it was scored on (a string)",
                "baseline: per_query: expected the list of per-query rows",
            ],
        ),
        (
            {
                "golden_version": "v1",
                "k": True,
                "per_query": [
                    "q-1",
                    {"id": "q-2", "ids": ["d1", 2], "n": 2, "error": None},
                    {"id": "q-3", "ids": ["d1"], "n": 0, "error": None},
                    {"id": "q-4", "ids": [], "n": 0, "error": 503},
                    {"id": "q-5", "ids": [], "n": 0, "error": None},
                    {"id": "q-5", "ids": [], "n": 0, "error": None},
                ],
            },
            [
                "baseline: k: expected an integer",
                "baseline: per_query[0]: expected an object with a string id",
                "baseline: query q-2: ids: expected a list of document ids",
                "baseline: query q-3: n: expected the list's length (at least 1)",
                "baseline: query q-4: error: expected a string or null",
                "baseline: per_query[5]: query q-5 appears twice",
            ],
        ),
    ],
)
def test_a_malformed_artifact_names_every_problem(baseline: Any, problems: list[str]) -> None:
    with pytest.raises(RescoreError) as error:
        rescore_report(baseline, relabel_case(0).new, by=None, at=AT)

    assert error.value.problems == problems
