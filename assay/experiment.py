"""Parameter sweeps with a held-out confirmation (pure, no Django): the core of `assay sweep`.

docs/experiments.md explains the method; in short:

- the grid (`parse_grid`): `{"params": {name: [values, ...]}}` (the cartesian product) or
  `{"configs": [{name: value}, ...]}`, at most MAX_CONFIGS configurations, each sent as extra request
  parameters over the fixed ones; the **baseline** is the fixed parameters alone;
- the split (`split_queries`): the golden file's core queries, stratum by stratum, into a tuning part
  (`fraction` of each stratum, rounded per stratum) and a held-out part, the same for the same seed and
  file;
- the selection: every configuration and the baseline searched on the tuning queries and ranked by the
  metric there; the top M and the baseline searched on the held-out queries; the **winner** is the
  confirmed configuration with the best held-out value, its change against the baseline paired as the
  gate pairs it (`assay.changes`), its p-value Holm-adjusted over the M confirmed configurations (`holm`);
- the **optimism**: the winner's tuning gain over the baseline minus its held-out gain, what choosing
  the best of many on the same queries adds to the gain.

Each configuration's values on a part are those of the report `assay run` would write for a golden file
of that part's queries (`assay.report.build_report`): an errored query counts in the error rate only,
never as empty.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from assay.changes import pair_scope
from assay.golden.columns import GoldenColumns
from assay.golden.model import GoldenFile, GoldenQuery
from assay.harness import HarnessConfig, SharedSearch, params_problem
from assay.report import build_report
from assay.results import QueryResult
from assay.run_meta import redact_url

SWEEP_SPEC = "1"
MAX_CONFIGS = 500
DEFAULT_SPLIT = 0.7
DEFAULT_TOP = 3
DEFAULT_SEED = 0
# The metrics a sweep may rank on: the report's top-level means (docs/metrics.md).
RANKING_METRICS = ("ndcg", "mrr", "precision_at_k")
# What each configuration's part records: the report's core means, and its counts.
_RECORDED = ("ndcg", "mrr", "precision_at_k", "empty_rate", "error_rate")


class SweepError(ValueError):
    """Unusable sweep input (the grid, the split): the message names the problem."""


# ------------------------------------------------------------------------------------------- the grid


def parse_grid(data: object, *, limit: int = MAX_CONFIGS) -> list[dict[str, Any]]:
    """The configurations a grid names, in order: the cartesian product of `params` (the first name
    varies slowest) or the `configs` as given. Raises SweepError naming the problem."""
    if not isinstance(data, dict):
        raise SweepError('expected a JSON object {"params": {...}} or {"configs": [...]}')
    keys = set(data) & {"params", "configs"}
    if len(keys) != 1:
        raise SweepError('expected exactly one of "params" (a grid) and "configs" (a list)')
    unknown = sorted(set(data) - {"params", "configs"})
    if unknown:
        raise SweepError(f"unknown field {', '.join(map(repr, unknown))}")
    if "params" in data:
        grid = data["params"]
        if not isinstance(grid, dict) or not grid:
            raise SweepError('"params": expected an object of parameter names and value lists')
        for name, values in grid.items():
            if not name.strip():
                raise SweepError('"params": a parameter name is empty')
            if not isinstance(values, list):
                raise SweepError(f'"params.{name}": expected a list of values')
            if not values:
                raise SweepError(f'"params.{name}": an empty list of values')
        count = math.prod(len(values) for values in grid.values())
        if count > limit:
            sizes = " x ".join(str(len(values)) for values in grid.values())
            raise SweepError(f"{count:,} configurations ({sizes}); at most {limit} in one sweep")
        names = list(grid)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*grid.values())]
    configs = data["configs"]
    if not isinstance(configs, list) or not configs:
        raise SweepError('"configs": expected a non-empty list of objects')
    if len(configs) > limit:
        raise SweepError(f"{len(configs):,} configurations; at most {limit} in one sweep")
    for i, config in enumerate(configs, start=1):
        if not isinstance(config, dict):
            raise SweepError(f'"configs" item {i}: expected an object of parameter values')
        if any(not name.strip() for name in config):
            raise SweepError(f'"configs" item {i}: a parameter name is empty')
    return [dict(config) for config in configs]


def grid_problems(config: HarnessConfig, configs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each configuration the target's adapter would refuse (a parameter that overwrites the request's own
    fields, a value JSON cannot carry), named by its place in the grid."""
    problems = []
    for i, params in enumerate(configs, start=1):
        if refused := params_problem(config, {**config.params, **params}):
            problems.append(f"configuration {i} {_shown(params)}: {refused}")
    return problems


def _shown(params: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}={v!r}" for k, v in params.items()) + "}"


# ------------------------------------------------------------------------------------------- the split


@dataclass(frozen=True, slots=True)
class Split:
    seed: int
    fraction: float
    tuning: tuple[str, ...]  # query ids, golden order
    holdout: tuple[str, ...]
    strata: Mapping[str, tuple[int, int]]  # stratum ("" for none) -> (tuning, held-out) counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "fraction": self.fraction,
            "tuning": list(self.tuning),
            "holdout": list(self.holdout),
            "strata": {name: {"tuning": t, "holdout": h} for name, (t, h) in self.strata.items()},
        }


def _draw_key(seed: int, stratum: str, query_id: str) -> bytes:
    # A hash rather than a generator's stream: a query's place depends on the seed, its stratum and its
    # own id only, so the same seed and file give the same split whatever order the file lists them in.
    return hashlib.sha256(f"{seed}\0{stratum}\0{query_id}".encode()).digest()


def split_queries(queries: Sequence[GoldenQuery], fraction: float, seed: int) -> Split:
    """The core queries into tuning and held-out parts, stratum by stratum: round(fraction x n) of each
    stratum's n queries (halves rounded up) tune, the rest are held out."""
    if not 0 < fraction < 1:
        raise SweepError(f"split {fraction}: expected a share between 0 and 1, exclusive")
    by_stratum: dict[str, list[str]] = {}
    for query in queries:
        if query.tier == "core":
            by_stratum.setdefault(query.stratum or "", []).append(query.id)
    tuning: set[str] = set()
    counts: dict[str, tuple[int, int]] = {}
    for stratum in sorted(by_stratum):
        ids = sorted(by_stratum[stratum], key=lambda qid: _draw_key(seed, stratum, qid))
        take = math.floor(fraction * len(ids) + 0.5)
        tuning.update(ids[:take])
        counts[stratum] = (take, len(ids) - take)
    core = [q.id for q in queries if q.tier == "core"]
    split = Split(
        seed=seed,
        fraction=fraction,
        tuning=tuple(qid for qid in core if qid in tuning),
        holdout=tuple(qid for qid in core if qid not in tuning),
        strata=counts,
    )
    if not split.tuning or not split.holdout:
        empty = "tuning" if not split.tuning else "held-out"
        raise SweepError(
            f"the {empty} part is empty ({len(core)} core queries, split {fraction}): a sweep needs "
            "queries in both"
        )
    return split


# ------------------------------------------------------------------------------------------- statistics


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment, in the order given: the i-th smallest of m p-values is multiplied by
    m - i + 1, each kept at least as large as the one before it and at most 1. None (no pairs) stays None
    and does not count in m."""
    known = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(known)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(known):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


# ------------------------------------------------------------------------------------------- the sweep


@dataclass(frozen=True, slots=True)
class SweepSettings:
    fraction: float = DEFAULT_SPLIT
    seed: int = DEFAULT_SEED
    top: int = DEFAULT_TOP
    metric: str = "ndcg"


def part_columns(golden: GoldenFile, ids: Sequence[str]) -> GoldenColumns:
    """The golden file restricted to one part's queries (`Split.tuning` or `Split.holdout`)."""
    wanted = set(ids)
    return GoldenColumns.from_file(
        replace(golden, queries=tuple(q for q in golden.queries if q.id in wanted))
    )


def part_report(part: GoldenColumns, results: Mapping[str, QueryResult], seed: int) -> dict[str, Any]:
    """One configuration's report on one part: the report `assay run` would write for it."""
    return build_report(part, results, bootstrap_seed=seed)


def part_summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """A part's values: the means `assay run` reports, and how many queries errored and came back empty."""
    summary: dict[str, Any] = {name: report[name] for name in _RECORDED}
    summary["n"] = report["n"]
    summary["errors"] = len(report["flags"]["errors"])
    summary["empty"] = sum(1 for row in report["per_query"] if row["empty"])
    return summary


def _order(values: Sequence[Mapping[str, Any]], metric: str) -> list[int]:
    """Indices best first: configurations without an errored query before those with one (their mean
    covers fewer queries: an errored query is never a zero), then by the metric, None last, then by
    place in the grid."""

    def key(i: int) -> tuple[bool, bool, float, int]:
        value = values[i][metric]
        return (values[i]["errors"] > 0, value is None, -(value or 0.0), i)

    return sorted(range(len(values)), key=key)


def _gain(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def settings_problem(settings: SweepSettings) -> str | None:
    """What is wrong with the metric or the number confirmed, or None."""
    if settings.metric not in RANKING_METRICS:
        return f"metric {settings.metric!r}: expected one of {', '.join(RANKING_METRICS)}"
    if settings.top < 1:
        return f"top {settings.top}: must be at least 1"
    return None


def rank(
    baseline_tuning: Mapping[str, Any], tuning: Sequence[Mapping[str, Any]], metric: str, url: str
) -> list[int]:
    """The configurations' indices by their tuning values, best first (docs/experiments.md, "The
    selection"). Raises SweepError when no tuning query got an answer in any configuration."""
    if all(part["errors"] == part["n"] for part in (baseline_tuning, *tuning)):
        raise SweepError(
            f"no tuning query got an answer from {redact_url(url)} in any configuration "
            "(a wrong URL, a service that is down, or one that refuses every request); nothing written"
        )
    return _order(tuning, metric)


def conclude(
    *,
    golden: GoldenFile,
    fixed: Mapping[str, Any],
    grid: Sequence[Mapping[str, Any]],
    settings: SweepSettings,
    split: Split,
    baseline_tuning: Mapping[str, Any],
    tuning: Sequence[Mapping[str, Any]],
    ranking: Sequence[int],
    held: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """SWEEP.json's content but `requests` and `run`, from the tuning summaries (grid order), the ranking
    and the held-out reports (the baseline's first, then the confirmed configurations', best tuning rank
    first): the confirmation, Holm's adjustment, the winner and the optimism."""
    metric = settings.metric
    confirmed = list(ranking[: settings.top])
    baseline_report, confirmed_reports = held[0], held[1:]
    changes = [
        pair_scope(r["per_query"], baseline_report["per_query"], lambda _row: True, [metric]).change(
            metric, seed=settings.seed
        )
        for r in confirmed_reports
    ]
    adjusted = holm([c.p_value for c in changes])
    holdout = [part_summary(r) for r in confirmed_reports]
    rank_of = {index: place for place, index in enumerate(ranking, start=1)}
    entries: list[dict[str, Any]] = [
        {
            "grid": dict(params),
            "params": {**fixed, **params},
            "rank": rank_of[i],
            "tuning": dict(tuning[i]),
            "holdout": None,
        }
        for i, params in enumerate(grid)
    ]
    for place, i in enumerate(confirmed):
        entries[i]["holdout"] = {
            **holdout[place],
            "change": changes[place].to_dict(),
            "p_value": changes[place].p_value,
            "p_adjusted": adjusted[place],
        }
    best = _order(holdout, metric)[0]
    index = confirmed[best]
    baseline_holdout = part_summary(baseline_report)
    win_change = {metric: changes[best].to_dict()}
    if metric != "ndcg":
        ndcg_pairs = pair_scope(
            confirmed_reports[best]["per_query"], baseline_report["per_query"], lambda _row: True, ["ndcg"]
        )
        win_change["ndcg"] = ndcg_pairs.change("ndcg", seed=settings.seed).to_dict()
    tuning_gain = _gain(tuning[index][metric], baseline_tuning[metric])
    holdout_gain = _gain(holdout[best][metric], baseline_holdout[metric])
    winner = {
        "grid": dict(grid[index]),
        "params": entries[index]["params"],
        "rank": rank_of[index],
        "tuning": dict(tuning[index]),
        "holdout": holdout[best],
        "change": win_change,
        "p_value": changes[best].p_value,
        "p_adjusted": adjusted[best],
        "tuning_gain": tuning_gain,
        "holdout_gain": holdout_gain,
    }
    return {
        "sweep_spec": SWEEP_SPEC,
        "golden_version": golden.version,
        "k": golden.k,
        "metric": metric,
        "top": settings.top,
        "split": split.to_dict(),
        "fixed_params": dict(fixed),
        "baseline": {"params": dict(fixed), "tuning": dict(baseline_tuning), "holdout": baseline_holdout},
        "configs": entries,
        "confirmed": [entries[i]["params"] for i in confirmed],
        "winner": winner,
        "optimism": _gain(tuning_gain, holdout_gain),
    }


Progress = Callable[[str, int], Callable[[QueryResult], None] | None]


async def sweep(
    golden: GoldenFile,
    config: HarnessConfig,
    configs: Sequence[Mapping[str, Any]],
    settings: SweepSettings = SweepSettings(),
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the sweep (module docstring) and return SWEEP.json's content. `progress(phase, requests)` is
    called before each phase ("tuning", "holdout") with the number of requests it will send, and may
    return a per-request callback."""
    if problem := settings_problem(settings):
        raise SweepError(problem)
    split = split_queries(golden.queries, settings.fraction, settings.seed)
    tuning_golden, holdout_golden = part_columns(golden, split.tuning), part_columns(golden, split.holdout)
    grid = [dict(params) for params in configs]
    started_at = datetime.now(UTC)
    clock = time.perf_counter()
    asked = 0

    async with SharedSearch(config) as shared:

        async def phase(
            name: str, params: Sequence[Mapping[str, Any]], part: GoldenColumns, keep: Callable[[Any], Any]
        ) -> list[Any]:
            """Search `part` with each of `params`; of each configuration's report, what `keep` keeps
            (the tuning phase keeps summaries only, so a large grid holds no report per configuration)."""
            nonlocal asked
            jobs = [(p, part.queries) for p in params]
            asked += len(jobs) * len(part.queries)
            results = await shared.search(
                jobs, progress=None if progress is None else lambda requests: progress(name, requests)
            )
            return [keep(part_report(part, {r.query_id: r for r in rows}, settings.seed)) for rows in results]

        # The baseline is searched first among equals: a configuration equal to it shares its answers.
        baseline_tuning, *tuning = await phase("tuning", [{}, *grid], tuning_golden, part_summary)
        ranking = rank(baseline_tuning, tuning, settings.metric, config.url)
        confirmed = ranking[: settings.top]
        held = await phase("holdout", [{}, *(grid[i] for i in confirmed)], holdout_golden, lambda r: r)
        sent = shared.sent

    result = conclude(
        golden=golden,
        fixed=config.params,
        grid=grid,
        settings=settings,
        split=split,
        baseline_tuning=baseline_tuning,
        tuning=tuning,
        ranking=ranking,
        held=held,
    )
    result["requests"] = {"asked": asked, "sent": sent, "shared": asked - sent}
    result["run"] = {
        "search_url": redact_url(config.url),
        "adapter": config.adapter,
        "concurrency": config.concurrency,
        "started_at": started_at.isoformat(),
        "duration_s": time.perf_counter() - clock,
    }
    return result


def sweep_sync(
    golden: GoldenFile,
    config: HarnessConfig,
    configs: Sequence[Mapping[str, Any]],
    settings: SweepSettings = SweepSettings(),
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """`sweep` for callers without an event loop (the CLI)."""
    return asyncio.run(sweep(golden, config, configs, settings, progress=progress))
