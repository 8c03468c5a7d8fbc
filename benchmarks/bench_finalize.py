"""Finalize at 100,000 queries: the step that turns a run's result rows into its report, gate and verdict
(evaluation/runs/services/finalize.py `run_finalize_process`), timed on its own, without searching.

The run is made up: a seeded random golden version of 100,000 queries (tests/assay/finalize_fixture.py:
errors, expected-empty, critical, shadow and core tiers, weights, strata, bands, failure modes) and a
random result row per query, written straight into the database. Two cases, 5 times each (the run put back
to running between times): no baseline (what a first run of a set pays: the gate checks the report against
itself) and against a baseline (another such run promoted: every change with its bootstrap interval and
randomization p-value). Finalize's steps are then timed one by one, each as finalize runs it (the
collector paused). The golden version is parsed once before timing, as in a worker that ran one of the
run's chunks. Runs in a scratch database (`bench_runs.scratch_database`); the broker is REDIS_URL's
database, flushed before and after.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

QUERIES = int(os.environ.get("ASSAY_BENCH_FINALIZE_QUERIES", "100000"))
REPEATS = 5


def main() -> None:
    from benchmarks.bench_runs import REPO, scratch_database

    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url.startswith("redis://"):
        raise SystemExit("bench_finalize: set REDIS_URL to a Redis database the benchmark may flush")
    with scratch_database(os.environ.get("DATABASE_URL", "")) as database_url:
        env = {**os.environ, "DATABASE_URL": database_url, "CELERY_BROKER_URL": redis_url}
        env["CELERY_RESULT_BACKEND"] = redis_url
        env["ASSAY_LOG_LEVEL"] = "WARNING"
        env["ASSAY_TARGET_ALLOW_PRIVATE"] = "true"  # the loopback target below (never contacted)
        subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_finalize", "--inner"], cwd=REPO, env=env, check=True
        )


def _results(run: Any, golden: Any, seed: int) -> None:
    from evaluation.runs.models import QueryRunResult

    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(1, 13)]
    rows = []
    for q in golden.queries:
        failed = rng.random() < 0.02
        rows.append(
            QueryRunResult(
                run=run,
                query_id=q.id,
                ids=[] if failed else rng.sample(docs, rng.randint(0, 10)),
                error="HTTP 503" if failed else None,
                http_status=503 if failed else 200,
                latency_ms=rng.uniform(1, 50),
            )
        )
    QueryRunResult.objects.bulk_create(rows, batch_size=5000)


def inner() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    import redis
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.utils import timezone

    from assay.drift import compare
    from assay.golden.keys import resolve_keys
    from assay.memory import gc_paused
    from assay.report import BOOTSTRAP_SEED, build_report
    from benchmarks._report import save_figures, write_section
    from evaluation.fields import large_json_write
    from evaluation.runs import selectors
    from evaluation.runs.models import Baseline, EvaluationRun
    from evaluation.runs.services.finalize import run_finalize_process, run_gate, run_report_build
    from labeling.models import GoldenSet, Rubric
    from tests.assay.finalize_fixture import seeded_run
    from tests.support.runs import make_target, make_version

    call_command("migrate", verbosity=0)
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    broker.flushdb()
    user = User.objects.create_user("bench")
    rubric = Rubric.objects.create(name="bench", version=1)
    golden_set = GoldenSet.objects.create(slug="bench", name="Bench", surface="bench", rubric=rubric)
    golden = seeded_run(QUERIES, 1, reports=False)[0]
    version = make_version(golden_set, golden)
    # Never contacted: the results are written, not searched.
    target = make_target("http://127.0.0.1:9/search", golden_set, name="bench")
    parsed = selectors.golden_of(version)  # as finalize gets it: parsed once per worker, then cached

    def new_run(seed: int) -> EvaluationRun:
        run = EvaluationRun.objects.create(
            golden_version=version,
            target=target,
            target_snapshot=target.spec().to_dict(),
            triggered_by=user,
            status=EvaluationRun.Status.RUNNING,
            total=QUERIES,
            started_at=timezone.now(),
        )
        _results(run, golden, seed)
        return run

    def finalize_times(run: EvaluationRun) -> list[float]:
        times = []
        for _ in range(REPEATS):
            EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, report=None)
            started = time.perf_counter()
            assert run_finalize_process(run_id=run.pk) == "finalized"
            times.append(time.perf_counter() - started)
        return times

    load_before = os.getloadavg()
    first = new_run(1)
    alone = finalize_times(first)
    first.refresh_from_db()
    # Made the baseline directly (promotion refuses a run with errors; this one has some, as runs do).
    Baseline.objects.create(
        golden_set=golden_set, target=target, run=first, approved_by=user, rationale="bench"
    )
    second = new_run(2)
    against = finalize_times(second)
    second = EvaluationRun.objects.select_related("golden_version__golden_set", "target").get(pk=second.pk)
    steps: dict[str, float] = {}

    def step(name: str, work: Callable[[], Any]) -> Any:
        """One step timed as finalize runs it: with the collector paused (run_finalize_process)."""
        with gc_paused():
            started = time.perf_counter()
            value = work()
            steps[name] = time.perf_counter() - started
        return value

    results = step("result rows read", lambda: selectors.run_results(run=second))
    resolved = step("durable keys resolved", lambda: resolve_keys(parsed, second.key_map or {}))
    report = step(
        "build_report",
        lambda: build_report(resolved.golden, results, run={}, bootstrap_seed=BOOTSTRAP_SEED + second.pk),
    )
    report = step(
        "run_report_build (all of the above, and the run block)", lambda: run_report_build(run=second)
    )
    budgets = selectors.budgets_get(golden_set=golden_set)
    step("gate, no baseline (the report against itself)", lambda: compare(report, report, budgets))
    baseline = selectors.baseline_get(golden_set=golden_set, target=target)
    step(
        "gate against the baseline (run_gate, its noise floor read)",
        lambda: run_gate(report=report, baseline=baseline, budgets=budgets, rebaseline=False),
    )
    step("report and gate written", lambda: large_json_write(second, ["report", "gate"]))
    load_after = os.getloadavg()
    broker.flushdb()
    markdown = render(alone, against, steps, load_before, load_after)
    print(markdown)
    save_figures(
        "finalize", {"alone": alone, "against": against, "steps": steps, "load": [load_before, load_after]}
    )
    write_section("finalize", markdown)


def render(
    alone: list[float],
    against: list[float],
    steps: dict[str, float],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> str:
    def times(values: list[float]) -> str:
        return ", ".join(f"{v:.2f}" for v in values)

    lines = [
        f"## Finalize at {QUERIES:,} queries, PostgreSQL",
        "",
        "`run_finalize_process` on a made-up run whose every result row is written (the report, the gate and "
        "the verdict, written), median of 5 in seconds. Target: <= 3 s.",
        "",
        "| gate | median | runs |",
        "| --- | ---: | --- |",
        f"| no baseline | {statistics.median(alone):.2f} | {times(alone)} |",
        f"| against a baseline | {statistics.median(against):.2f} | {times(against)} |",
        "",
        "Its steps, timed one by one on the run gated against the baseline:",
        "",
        "| step | seconds |",
        "| --- | ---: |",
        *(f"| {name} | {seconds:.2f} |" for name, seconds in steps.items()),
        "",
        f"Load average (1, 5, 15 min) before {load_before[0]:.2f}, {load_before[1]:.2f}, "
        f"{load_before[2]:.2f}; "
        f"after {load_after[0]:.2f}, {load_after[1]:.2f}, {load_after[2]:.2f} (2 CPUs, shared).",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if "--inner" in sys.argv:
        inner()
    else:
        main()
