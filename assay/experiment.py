"""Parameter sweeps with a held-out confirmation (pure, no Django): the core of `assay sweep`.

docs/experiments.md explains the method; in short:

- the grid (`parse_grid`): `{"params": {name: [values, ...]}}` (the cartesian product) or
  `{"configs": [{name: value}, ...]}`, at most MAX_CONFIGS configurations, each sent as extra request
  parameters over the fixed ones; the **baseline** is the fixed parameters alone;
- the split (`split_queries`): the golden file's core queries, stratum by stratum, into a tuning part
  (`fraction` of each stratum, rounded per stratum) and a held-out part, the same for the same seed and
  file;
- the selection: every configuration and the baseline searched on the tuning queries and ranked by the
  metric there; the top M and the baseline searched on the held-out queries, each one's change against
  the baseline paired as the gate pairs it (`assay.changes`), its p-value Holm-adjusted over the M
  confirmed configurations (`holm`); the **winner** is the best held-out value among the confirmed
  configurations that beat the baseline there (a gain above 0 with its adjusted p-value below `alpha`),
  and there is none when none did; the **best** is the winner, or else the best held-out value;
- the configurations that returned the baseline's results on every query they searched (`echoes`): a
  parameter the target does not read;
- the **optimism**: the best configuration's tuning gain over the baseline minus its held-out gain,
  what choosing the best of many on the same queries adds to the gain;
- each configuration's **overlap** with the baseline's lists (`assay.overlap`: Jaccard@k and RBO, means
  with intervals) on the tuning queries both answered (`tuning_summaries`) and, for the confirmed ones,
  on the held-out queries (`conclude`).

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from assay.changes import pair_scope
from assay.display import counted
from assay.golden.columns import GoldenColumns
from assay.golden.model import GoldenFile, GoldenQuery
from assay.harness import SharedSearch
from assay.harness_config import HarnessConfig, params_problem
from assay.overlap import report_overlap, summarize
from assay.report import build_report
from assay.resampling import holm
from assay.results import QueryResult
from assay.run_meta import redact_url

SWEEP_SPEC = "1"
MAX_CONFIGS = 500
DEFAULT_SPLIT = 0.7
DEFAULT_TOP = 3
DEFAULT_SEED = 0
DEFAULT_ALPHA = 0.05
DEFAULT_COVERAGE_MARGIN = 0.05
# The metrics a sweep may rank on: the report's top-level means (docs/metrics.md).
RANKING_METRICS = ("ndcg", "mrr", "precision_at_k")
# What each configuration's part records: the report's core means, and its counts.
_RECORDED = ("ndcg", "mrr", "precision_at_k", "empty_rate", "error_rate", "judged_at_k")


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


# ------------------------------------------------------------------------------------------- the sweep


@dataclass(frozen=True, slots=True)
class SweepSettings:
    fraction: float = DEFAULT_SPLIT
    seed: int = DEFAULT_SEED
    top: int = DEFAULT_TOP
    metric: str = "ndcg"
    alpha: float = DEFAULT_ALPHA
    coverage_margin: float = DEFAULT_COVERAGE_MARGIN


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


def answers_overlap(
    baseline: Mapping[str, QueryResult], rows: Mapping[str, QueryResult], *, k: int, seed: int
) -> dict[str, Any] | None:
    """A configuration's answers against the baseline's on the queries both answered, in query id order
    (`assay.overlap`, docs/metrics.md "Overlap"); None when no query was answered by both."""
    pairs = []
    for qid in sorted(rows):
        row, base = rows[qid], baseline.get(qid)
        if base is not None and base.error is None and row.error is None:
            pairs.append((qid, base.ids, row.ids))
    return summarize(pairs, k=k, seed=seed).to_dict() if pairs else None


def tuning_summaries(
    part: GoldenColumns, answers: Iterable[Mapping[str, QueryResult]], *, k: int, seed: int
) -> list[dict[str, Any]]:
    """The tuning part's values of the baseline (the first answers) and each configuration
    (`part_summary`), each configuration's with its `overlap` with the baseline's answers. The answers are
    read one configuration at a time (the app's come from the database so: only the baseline's are kept)."""
    summaries = []
    baseline: Mapping[str, QueryResult] | None = None
    for rows in answers:
        summary = part_summary(part_report(part, rows, seed))
        if baseline is None:
            baseline = rows
        else:
            summary["overlap"] = answers_overlap(baseline, rows, k=k, seed=seed)
        summaries.append(summary)
    return summaries


def _order(values: Sequence[Mapping[str, Any]], metric: str) -> list[int]:
    """Indices best first: configurations without an errored query before those with one (their mean
    covers fewer queries: an errored query is never a zero), then by the metric, None last, then by
    place in the grid."""

    def key(i: int) -> tuple[bool, bool, float, int]:
        value = values[i][metric]
        return (values[i]["errors"] > 0, value is None, -(value or 0.0), i)

    return sorted(range(len(values)), key=key)


def beat(delta: float | None, p_adjusted: float | None, alpha: float) -> bool:
    """Whether a confirmed configuration beat the baseline on the held-out queries: a paired gain above
    0 whose Holm-adjusted p-value is below `alpha` (docs/experiments.md, "The winner")."""
    return delta is not None and delta > 0 and p_adjusted is not None and p_adjusted < alpha


def beat_baseline(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The confirmed configurations of a result (SWEEP.json's content) that beat the baseline on the
    held-out queries (`beat`, under the result's alpha), best tuning rank first: the winner and any other
    a reviewer may use (docs/experiments.md, "Use this configuration")."""
    alpha = result.get("alpha", DEFAULT_ALPHA)
    won = [
        config
        for config in result["configs"]
        if config["holdout"] is not None
        and beat(config["holdout"]["change"].get("delta"), config["holdout"].get("p_adjusted"), alpha)
    ]
    return sorted(won, key=lambda config: config["rank"])


def _gain(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def settings_problem(settings: SweepSettings) -> str | None:
    """What is wrong with the metric or the number confirmed, or None."""
    if settings.metric not in RANKING_METRICS:
        return f"metric {settings.metric!r}: expected one of {', '.join(RANKING_METRICS)}"
    if settings.top < 1:
        return f"top {settings.top}: must be at least 1"
    if not 0 < settings.alpha < 1:
        return f"alpha {settings.alpha}: expected a probability between 0 and 1, exclusive"
    if not 0 <= settings.coverage_margin <= 1:
        return f"coverage margin {settings.coverage_margin}: expected a share from 0 to 1"
    return None


def rank(baseline_tuning: Mapping[str, Any], tuning: Sequence[Mapping[str, Any]], metric: str) -> list[int]:
    """The configurations' indices by their tuning values, best first (docs/experiments.md, "The
    selection"). Raises SweepError when no tuning query got an answer in any configuration."""
    if all(part["errors"] == part["n"] for part in (baseline_tuning, *tuning)):
        raise SweepError(
            "no tuning query got an answer from the search URL in any configuration "
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
        overlap = report_overlap(confirmed_reports[place], baseline_report, seed=settings.seed)
        entries[i]["holdout"] = {
            **holdout[place],
            "change": changes[place].to_dict(),
            "p_value": changes[place].p_value,
            "p_adjusted": adjusted[place],
            "overlap": overlap.to_dict() if overlap is not None else None,
        }
    won = [place for place, c in enumerate(changes) if beat(c.delta, adjusted[place], settings.alpha)]
    order = _order(holdout, metric)
    best = next((place for place in order if place in won), order[0])
    index = confirmed[best]
    baseline_holdout = part_summary(baseline_report)
    best_change = {metric: changes[best].to_dict()}
    if metric != "ndcg":
        ndcg_pairs = pair_scope(
            confirmed_reports[best]["per_query"], baseline_report["per_query"], lambda _row: True, ["ndcg"]
        )
        best_change["ndcg"] = ndcg_pairs.change("ndcg", seed=settings.seed).to_dict()
    tuning_gain = _gain(tuning[index][metric], baseline_tuning[metric])
    holdout_gain = _gain(holdout[best][metric], baseline_holdout[metric])
    best_entry = {
        "grid": dict(grid[index]),
        "params": entries[index]["params"],
        "rank": rank_of[index],
        "tuning": dict(tuning[index]),
        "holdout": holdout[best],
        "change": best_change,
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
        "alpha": settings.alpha,
        "split": split.to_dict(),
        "fixed_params": dict(fixed),
        "baseline": {"params": dict(fixed), "tuning": dict(baseline_tuning), "holdout": baseline_holdout},
        "configs": entries,
        "confirmed": [entries[i]["params"] for i in confirmed],
        "best": best_entry,
        "winner": best_entry if best in won else None,
        "optimism": _gain(tuning_gain, holdout_gain),
        "coverage": coverage(
            {"tuning": baseline_tuning, "holdout": baseline_holdout},
            {"tuning": tuning[index], "holdout": holdout[best]},
            settings.coverage_margin,
        ),
    }


def coverage(
    baseline: Mapping[str, Mapping[str, Any]], best: Mapping[str, Mapping[str, Any]], margin: float
) -> dict[str, Any]:
    """judged@k of the best configuration beside the baseline's on each part, and a warning when it is
    below the baseline's by more than `margin` on either (docs/experiments.md, "Coverage")."""
    found: dict[str, Any] = {"margin": margin}
    short = []
    for part, words in (("tuning", "tuning"), ("holdout", "held-out")):
        base, mine = baseline[part].get("judged_at_k"), best[part].get("judged_at_k")
        drop = _gain(base, mine)
        found[part] = {"baseline": base, "best": mine, "drop": drop}
        if drop is not None and drop > margin:
            short.append(f"{mine:.4f} on the {words} queries against the baseline's {base:.4f}")
    found["warning"] = (
        f"judged@k {' and '.join(short)}, more than {margin:g} below: part of its gain may be documents "
        "nobody rated (nDCG counts them as irrelevant); judge the gaps and re-score"
        if short
        else None
    )
    return found


# ------------------------------------------------------------------------------------------- echoes


def same_answers(baseline: Mapping[str, QueryResult], rows: Mapping[str, QueryResult]) -> tuple[int, int]:
    """(compared, same): the queries both answered (no error), and of those the ones answered with the
    same ids in the same order. The app reads the same rule in SQL from its stored answers
    (evaluation/experiments/services/experiments.py, `_echo_counts`)."""
    compared = same = 0
    for qid, row in rows.items():
        base = baseline.get(qid)
        if base is None or base.error is not None or row.error is not None:
            continue
        compared += 1
        same += base.ids == row.ids
    return compared, same


def _changed(fixed: Mapping[str, Any], params: Mapping[str, Any]) -> list[str]:
    """The names of a configuration whose value differs from the baseline's (the fixed parameters)."""
    return [name for name, value in params.items() if name not in fixed or fixed[name] != value]


def echoes(
    fixed: Mapping[str, Any], grid: Sequence[Mapping[str, Any]], counts: Mapping[int, tuple[int, int]]
) -> list[dict[str, Any]]:
    """The configurations that returned the baseline's results on every query both answered (at least
    one) although they send a parameter the baseline does not (`counts`: grid index -> `same_answers`),
    grouped by the parameters that differ: each group's `params` (names), `configs` (grid places, from
    1), `queries` (the fewest compared), `read` (whether another configuration that changes the same
    parameters changed the results: then the target reads them, and these values may be what it does
    without them) and `message` (docs/experiments.md, "Parameters that change nothing"). A configuration
    equal to the baseline is not one: it was meant to return the same."""
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    read: set[tuple[str, ...]] = set()
    for i, params in enumerate(grid):
        compared, same = counts.get(i, (0, 0))
        names = tuple(_changed(fixed, params))
        if not compared or not names:
            continue
        if same != compared:
            read.add(names)
            continue
        group = groups.setdefault(names, {"params": list(names), "configs": [], "queries": compared})
        group["configs"].append(i + 1)
        group["queries"] = min(group["queries"], compared)
    for names, group in groups.items():
        shown = " and ".join(f"`{name}`" for name in names)
        group["read"] = names in read
        why = (
            f"other values of {shown} changed them, so these may be what the target does without them"
            if group["read"]
            else f"does the target read {shown}?"
        )
        group["message"] = (
            f"{counted(len(group['configs']), 'configuration')} ({_places(group['configs'])}) returned the "
            f"baseline's results on every query: {why}"
        )
    return list(groups.values())


def _places(places: Sequence[int]) -> str:
    more = f" and {len(places) - 10} more" if len(places) > 10 else ""
    return ", ".join(str(p) for p in places[:10]) + more


def echoes_record(result: dict[str, Any], counts: Mapping[int, tuple[int, int]]) -> None:
    """Write the echoes into a concluded sweep: `configs[].same_as_baseline` and `echoes`."""
    found = echoes(result["fixed_params"], [c["grid"] for c in result["configs"]], counts)
    flagged = {place for group in found for place in group["configs"]}
    for place, config in enumerate(result["configs"], start=1):
        config["same_as_baseline"] = place in flagged
    result["echoes"] = found


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
    echo_counts: dict[int, tuple[int, int]] = {}

    async with SharedSearch(config) as shared:

        async def phase(
            name: str, indices: Sequence[int], part: GoldenColumns, keep: Callable[[Any], Any]
        ) -> list[Any]:
            """Search `part` with the baseline and the configurations at `indices`; of their answers, what
            `keep` makes (the tuning phase keeps summaries only, so a large grid holds no report per
            configuration). Each configuration's answers are compared with the baseline's (`echoes`)."""
            nonlocal asked
            jobs = [(p, part.queries) for p in [{}, *(grid[i] for i in indices)]]
            asked += len(jobs) * len(part.queries)
            results = await shared.search(
                jobs, progress=None if progress is None else lambda requests: progress(name, requests)
            )
            answers = [{r.query_id: r for r in rows} for rows in results]
            for index, rows in zip(indices, answers[1:], strict=True):
                compared, same = same_answers(answers[0], rows)
                before = echo_counts.get(index, (0, 0))
                echo_counts[index] = (before[0] + compared, before[1] + same)
            return keep(answers)

        # The baseline is searched first among equals: a configuration equal to it shares its answers.
        baseline_tuning, *tuning = await phase(
            "tuning",
            range(len(grid)),
            tuning_golden,
            lambda answers: tuning_summaries(tuning_golden, answers, k=golden.k, seed=settings.seed),
        )
        ranking = rank(baseline_tuning, tuning, settings.metric)
        confirmed = ranking[: settings.top]
        held = await phase(
            "holdout",
            confirmed,
            holdout_golden,
            lambda answers: [part_report(holdout_golden, rows, settings.seed) for rows in answers],
        )
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
    echoes_record(result, echo_counts)
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
