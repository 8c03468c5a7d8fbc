"""A 2,000-query run on PostgreSQL + Redis beside `assay run` of the same queries: what the Celery path adds
to the searching itself, on the configuration of bench_runs.py (a loopback engine answering in 20 ms,
total concurrency 32: 2 `celery worker` processes x 2 pool processes x 8 requests in flight per chunk).

Each Celery run from trigger (`run_create` committed) to verdict (the run row final), alternately with
`assay run --concurrency 32` of the same golden file (a whole process, start to exit), after a warm-up
run; medians of RUNS each, with the load average before and after. Where a Celery run's time goes: the
start task's hop, searching and writing the result rows, finalize (bench_runs.celery_run's split).
Runs in a scratch database next to DATABASE_URL's; the broker is REDIS_URL's database, flushed first.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.bench_runs import DELAY_MS

QUERIES = 2000
RUNS = int(os.environ.get("ASSAY_BENCH_RUN_2000_RUNS", "5"))
WORKERS = 2


def main() -> None:
    from benchmarks.bench_runs import REPO, scratch_database

    redis_url = os.environ.get("REDIS_URL", "")
    database = os.environ.get("DATABASE_URL", "")
    if not redis_url.startswith("redis://") or not database.startswith(("postgres://", "postgresql://")):
        raise SystemExit("bench_run_2000: set DATABASE_URL (PostgreSQL) and REDIS_URL (a database to flush)")
    import tempfile

    with scratch_database(database) as database_url, tempfile.TemporaryDirectory() as var:
        env = {**os.environ, "DATABASE_URL": database_url, "ASSAY_VAR_DIR": var, "ASSAY_LOG_LEVEL": "WARNING"}
        env |= {"CELERY_BROKER_URL": redis_url, "CELERY_RESULT_BACKEND": redis_url}
        env["ASSAY_TARGET_ALLOW_PRIVATE"] = "true"  # the loopback stub engine
        env.pop("CELERY_TASK_ALWAYS_EAGER", None)
        subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_run_2000", "--inner"], cwd=REPO, env=env, check=True
        )


def inner() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    import redis
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from assay.golden.format import dump_json
    from benchmarks._report import save_figures, write_section
    from benchmarks.bench_runs import (
        POOL,
        TOTAL_CONCURRENCY,
        WARMUP_QUERIES,
        assay_run,
        celery_run,
        celery_workers,
    )
    from labeling.models import GoldenSet, Rubric
    from tests.support.processes import serving
    from tests.support.runs import golden_file, make_target, make_version

    call_command("migrate", verbosity=0)
    redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
    user = User.objects.create_user("bench")
    rubric = Rubric.objects.create(name="bench", version=1)
    golden_set = GoldenSet.objects.create(slug="bench", name="Bench", surface="bench", rubric=rubric)
    var = Path(os.environ["ASSAY_VAR_DIR"])
    golden = golden_file(QUERIES, version="bench-2000")
    version = make_version(golden_set, golden)
    path = var / "golden.json"
    path.write_bytes(dump_json(golden))
    warmup = make_version(golden_set, golden_file(WARMUP_QUERIES, version="warmup"))
    celery: list[dict[str, Any]] = []
    assay: list[float] = []
    stub = ["-m", "tests.support.stub_server", "--delay-ms", str(DELAY_MS), "--hits", "10"]
    with serving(stub) as base:
        url = f"{base}/search"
        in_flight = TOTAL_CONCURRENCY // (WORKERS * POOL)
        target = make_target(url, golden_set, name="stub", concurrency=in_flight, timeout=10.0, retries=3)
        with celery_workers(var, WORKERS):
            celery_run(warmup, target, user)  # imports, connections, the first parse in each process
            assay_run(path, url, var / "relevance.json")
            load_before = os.getloadavg()
            for repeat in range(RUNS):
                for kind in ("celery", "assay") if repeat % 2 == 0 else ("assay", "celery"):
                    if kind == "celery":
                        found = celery_run(version, target, user)
                        found.pop("run")
                        celery.append(found)
                    else:
                        assay.append(assay_run(path, url, var / "relevance.json"))
            load_after = os.getloadavg()
    markdown = render(celery, assay, load_before, load_after, in_flight)
    print(markdown)
    save_figures("run_2000", {"celery": celery, "assay": assay, "load": [load_before, load_after]})
    write_section("run_2000", markdown)


def render(
    celery: list[dict[str, Any]],
    assay: list[float],
    load_before: tuple[float, ...],
    load_after: tuple[float, ...],
    in_flight: int,
) -> str:
    def listed(values: list[float]) -> str:
        return ", ".join(f"{v:.2f}" for v in values)

    def load(values: tuple[float, ...]) -> str:
        return " / ".join(f"{v:.1f}" for v in values)

    walls = [run["wall"] for run in celery]
    wall, alone = statistics.median(walls), statistics.median(assay)
    ratios = [c / a for c, a in zip(walls, assay, strict=True)]
    phases = {key: statistics.median(run[key] for run in celery) for key in ("start", "search", "finalize")}
    return "\n".join(
        [
            "### A 2,000-query run on PostgreSQL + Redis beside `assay run`",
            "",
            f"{QUERIES:,} queries against the loopback stub engine (every reply delayed {DELAY_MS} ms, 10 "
            f"hits), total concurrency {WORKERS * 2 * in_flight}: {WORKERS} `celery worker` processes x 2 "
            f"pool processes x {in_flight} in flight, trigger to verdict; `assay run --concurrency "
            f"{WORKERS * 2 * in_flight}` of the same golden file, a whole process, alternately with them. "
            f"Medians of {RUNS} after a warm-up. Load average (1, 5, 15 min) on {os.cpu_count()} CPUs: "
            f"{load(load_before)} before, {load(load_after)} after.",
            "",
            "| driver | median s | runs (s) |",
            "| --- | ---: | --- |",
            f"| ideal ({QUERIES:,} x {DELAY_MS} ms / {WORKERS * 2 * in_flight}) | "
            f"{QUERIES * DELAY_MS / 1000 / (WORKERS * 2 * in_flight):.2f} | - |",
            f"| `assay run`, one process | {alone:.2f} | {listed(assay)} |",
            f"| Celery, PostgreSQL + Redis | {wall:.2f} | {listed(walls)} |",
            "",
            f"Ratio: {wall / alone:.2f}x the median `assay run` (run by run, each beside the `assay run` "
            f"next to it: {listed(ratios)}; median {statistics.median(ratios):.2f}x). Where a Celery run's "
            f"time goes (medians, seconds): trigger to claimed {phases['start']:.2f}, searching and writing "
            f"the result rows {phases['search']:.2f}, last result to verdict (finalize) "
            f"{phases['finalize']:.2f}.",
        ]
    )


if __name__ == "__main__":
    (inner if "--inner" in sys.argv else main)()
