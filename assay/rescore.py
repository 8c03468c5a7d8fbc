"""A baseline re-scored under a new golden version: its stored result lists against the new labels (pure).

After a new golden version the gate refuses to compare a run with a baseline scored under the old labels
(docs/metrics.md, "The drift gate"). The baseline's result lists do not depend on the labels, though:
scoring them again against the new version gives the baseline as the new version sees it, like with like,
without calling the old system again. The re-scored artifact:

- is `assay.report.build_report` of the stored lists against the new golden file, so its numbers are the
  ones `assay score` gives for the same lists, to the last digit;
- holds the queries both sides have: a baseline query the new version retired is dropped (the gate shows
  it as retired), a query new to the version is absent (the gate shows it as new), never counted as a
  query that returned nothing;
- keeps the baseline's `run` block and bootstrap seed, and records what was done in `rescored`:
  `{"from_version", "golden_version", "at", "by", "source"}`.

Refused with `RescoreError`, every reason at once: a k other than the baseline's (a depth change changes
the metrics, not the labels), an artifact without its per-query `ids`, and lists shallower than the top
min(n, k) they should hold.

From an artifact only the top k of each list (`per_query[].ids`) and its length `n` are known. Every metric
looks at the top k only, so they are exact; `ranks` of documents past k are unknown (null), and the
near-duplicate groups are the baseline's own (titles are not in the artifact). The app re-scores from its
stored rows, which hold whole lists and titles (`rescore_results`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from assay.changes import report_seed
from assay.golden.model import GoldenFile
from assay.report import build_report
from assay.results import QueryResult

# Stands for a stored list's results past k, which an artifact does not keep. Never a golden document id
# (ids hold no whitespace), so never judged: it only gives the list its length `n` (empty and lt3 read it).
_PAST_K = " "
# Per-query problems named in a refusal before "and N more".
_NAMED = 5


class RescoreError(ValueError):
    """A baseline whose stored lists cannot be re-scored against the golden file (every reason)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def rescored_at(when: datetime) -> str:
    """The `at` of a re-score: ISO 8601 UTC, like the artifact's `run.started_at`."""
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _identity_problems(baseline: Mapping[str, Any], golden: GoldenFile) -> list[str]:
    problems = []
    if not isinstance(baseline.get("golden_version"), str):
        problems.append("baseline: golden_version: expected the version it was scored on (a string)")
    k = baseline.get("k")
    if not isinstance(k, int) or isinstance(k, bool):
        problems.append("baseline: k: expected an integer")
    elif k != golden.k:
        problems.append(
            f"baseline was scored at k={k} and golden version {golden.version} scores at k={golden.k}: "
            f"its stored top-{k} lists cannot be re-scored at another depth (run the baseline again)"
        )
    return problems


def rescore_results(
    results: Mapping[str, QueryResult],
    golden: GoldenFile,
    *,
    baseline: Mapping[str, Any],
    by: str | None,
    at: str,
    source: str | None = None,
) -> dict[str, Any]:
    """The baseline (`baseline`: its artifact, for its version, k, `run` and seed) re-scored from its
    result lists `results` (query id -> what the engine returned) against `golden`, the new version.

    Raises RescoreError when k differs. `by` is who asked (None: an automatic re-score), `at` when
    (`rescored_at`), `source` where the lists came from (an artifact path, a run).
    """
    problems = _identity_problems(baseline, golden)
    if problems:
        raise RescoreError(problems)
    kept = tuple(q for q in golden.queries if q.id in results)
    run = baseline.get("run")
    report = build_report(
        replace(golden, queries=kept),
        {q.id: results[q.id] for q in kept},
        run=run if isinstance(run, Mapping) else {},
        bootstrap_seed=report_seed(baseline),
    )
    report["rescored"] = {
        "from_version": baseline["golden_version"],
        "golden_version": golden.version,
        "at": at,
        "by": by,
        "source": source,
    }
    return report


def _named(items: list[str]) -> str:
    more = f" and {len(items) - _NAMED} more" if len(items) > _NAMED else ""
    return ", ".join(items[:_NAMED]) + more


def _stored_lists(baseline: Mapping[str, Any], k: int) -> tuple[dict[str, QueryResult], list[str]]:
    """The artifact's per-query lists as results (padded to their length `n`), and every problem."""
    rows = baseline.get("per_query")
    if not isinstance(rows, list):
        return {}, ["baseline: per_query: expected the list of per-query rows"]
    results: dict[str, QueryResult] = {}
    problems: list[str] = []
    without_ids: list[str] = []
    shallow: list[str] = []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping) or not isinstance(row.get("id"), str):
            problems.append(f"baseline: per_query[{i}]: expected an object with a string id")
            continue
        qid = row["id"]
        if qid in results:
            problems.append(f"baseline: per_query[{i}]: query {qid} appears twice")
            continue
        if "ids" not in row:
            without_ids.append(qid)
            continue
        ids, n, error = row["ids"], row.get("n"), row.get("error")
        if not isinstance(ids, list) or not all(isinstance(d, str) for d in ids):
            problems.append(f"baseline: query {qid}: ids: expected a list of document ids")
            continue
        if not isinstance(n, int) or isinstance(n, bool) or n < len(ids):
            problems.append(f"baseline: query {qid}: n: expected the list's length (at least {len(ids)})")
            continue
        if error is not None and not isinstance(error, str):
            problems.append(f"baseline: query {qid}: error: expected a string or null")
            continue
        if error is None and len(ids) < min(n, k):
            shallow.append(f"{qid} keeps {len(ids)} of {min(n, k)}")
            continue
        results[qid] = QueryResult(
            query_id=qid, ids=() if error else (*ids, *[_PAST_K] * (n - len(ids))), error=error
        )
    if without_ids:
        problems.append(
            f"baseline: per_query has no ids for {_named(without_ids)}: the artifact does not keep its "
            "result lists, so it cannot be re-scored (run the baseline again with this version of assay)"
        )
    if shallow:
        problems.append(
            f"baseline: stored lists shallower than the top min(n, {k}) a re-score needs: {_named(shallow)}"
        )
    return results, problems


def rescore_report(
    baseline_report: Mapping[str, Any],
    golden: GoldenFile,
    *,
    by: str | None,
    at: str,
    source: str | None = None,
) -> dict[str, Any]:
    """A baseline artifact re-scored from its per-query lists (`per_query[].ids`, `n`, `error`) against
    `golden`, the new version (see the module docstring). Raises RescoreError naming every problem."""
    if not isinstance(baseline_report, Mapping):
        raise RescoreError([f"baseline: expected a report object, got {type(baseline_report).__name__}"])
    problems = _identity_problems(baseline_report, golden)
    k = baseline_report.get("k")
    depth = k if isinstance(k, int) and not isinstance(k, bool) else golden.k
    results, list_problems = _stored_lists(baseline_report, depth)
    if problems or list_problems:
        raise RescoreError([*problems, *list_problems])
    report = rescore_results(results, golden, baseline=baseline_report, by=by, at=at, source=source)
    kept = {row["id"] for row in report["per_query"]}
    report["near_duplicates"] = [
        row
        for row in baseline_report.get("near_duplicates") or []
        if isinstance(row, Mapping) and row.get("id") in kept
    ]
    return report
