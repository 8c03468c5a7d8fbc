"""Evaluation runs on Celery, a scale curve: 2,000, 20,000 and 100,000 queries against a loopback engine
answering in 20 ms, on 2 and on 4 workers, each beside its floor measured in the same run.

Measured from trigger (`run_create` committed) to verdict (the run row final). The floors: the ideal
(queries x 20 ms / total concurrency) and `assay run` at the same total concurrency, a whole process
from start to exit (one machine, no broker, no database), run alternately with the Celery runs. At
2,000 queries also a sequential loop (one request after another). The issue's target at 2,000 queries:
2x the ideal plus 2 s.

Total concurrency is 32 on both: 2 `celery worker` processes x 2 pool processes x 8 requests in flight per
chunk, or 4 x 2 x 4. So the ideal is the same and the figures show what spreading the work over more
workers costs; the machine has 2 CPUs, shared by the workers, the stub server, PostgreSQL and Redis.
Where a run's time goes: trigger to claimed (the start task: the golden file read, the chunks planned),
searching and writing results (claimed to the last result row), and last result to verdict (finalize:
the report, the gate). At the largest size finalize's steps are also timed one by one in this process.

The run happens in a database of its own (PostgreSQL: a scratch database next to DATABASE_URL's, dropped
afterwards; otherwise a SQLite file in a temporary directory) so nothing is left behind; the broker is
REDIS_URL (`make bench` sets it), flushed first. The measuring part runs in a subprocess of its own so
its Django settings read that database.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# ASSAY_BENCH_RUNS_SIZES=2000,20000 re-runs a shorter curve (3 runs per size below 100,000, else 1).
SIZES = tuple(int(n) for n in os.environ.get("ASSAY_BENCH_RUNS_SIZES", "2000,20000,100000").split(","))
REPEATS = {n: 3 if n < 100_000 else 1 for n in SIZES}
WARMUP_QUERIES = 200
DELAY_MS = 20
POOL = 2  # pool processes per worker, as tests/support/workers.py starts them
TOTAL_CONCURRENCY = 32
WORKER_COUNTS = (2, 4)
REPO = Path(__file__).resolve().parent.parent
ASSAY = str(Path(sys.executable).with_name("assay"))


@contextmanager
def scratch_database(url: str) -> Iterator[str]:
    """A fresh database for the run: on DATABASE_URL's PostgreSQL server, else SQLite in a temp dir."""
    if url.startswith(("postgres://", "postgresql://")):
        import psycopg

        parts = urlsplit(url)
        name = f"assay_bench_runs_{os.getpid()}"
        admin = urlunsplit(
            (parts.scheme.replace("postgresql", "postgres"), parts.netloc, "/postgres", "", "")
        )
        with psycopg.connect(admin.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))
        finally:
            with psycopg.connect(admin.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{tmp}/bench.sqlite3"


def main() -> None:
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url.startswith("redis://"):
        raise SystemExit(
            "bench_runs: set REDIS_URL to a Redis database the benchmark may flush (make bench does)"
        )
    with (
        scratch_database(os.environ.get("DATABASE_URL", "")) as database_url,
        tempfile.TemporaryDirectory() as var,
    ):
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": redis_url,
            "CELERY_RESULT_BACKEND": redis_url,
            "ASSAY_VAR_DIR": var,
            "ASSAY_LOG_LEVEL": "WARNING",
            # The stub engine listens on loopback, which a target may reach only when allowed.
            "ASSAY_TARGET_ALLOW_PRIVATE": "true",
        }
        env.pop("CELERY_TASK_ALWAYS_EAGER", None)
        subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_runs", "--inner"], cwd=REPO, env=env, check=True
        )


# ------------------------------------------------------------------------------------------- measuring


@contextmanager
def celery_workers(var: Path, count: int) -> Iterator[None]:
    """`count` worker processes (tests/support/workers.py: POOL pool processes each), ready to take tasks;
    stopped afterwards."""
    from tests.support.workers import Worker

    workers: list[Worker] = []
    try:
        for n in range(1, count + 1):
            workers.append(Worker(f"bench{n}", var / f"worker{count}-{n}.log", dict(os.environ)))
        for worker in workers:
            worker.wait_ready(120)
        yield
    finally:
        for worker in workers:
            worker.stop()


def celery_run(version: Any, target: Any, user: Any) -> dict[str, Any]:
    """One run from trigger to verdict: wall seconds and where they went."""
    from evaluation.runs.models import EvaluationRun, QueryRunResult
    from evaluation.runs.services import run_create

    started = time.perf_counter()
    run = run_create(golden_version=version, target=target, triggered_by=user)
    while True:
        status = EvaluationRun.objects.filter(pk=run.pk).values_list("status", flat=True).get()
        if status in EvaluationRun.FINAL:
            break
        time.sleep(0.01)
    wall = time.perf_counter() - started
    run.refresh_from_db()
    if run.status != EvaluationRun.Status.SUCCEEDED or run.errors:
        raise RuntimeError(f"run {run.pk}: {run.status}, {run.errors} errors: {run.error_message}")
    last = (
        QueryRunResult.objects.filter(run=run).order_by("-created").values_list("created", flat=True).first()
    )
    assert run.started_at and run.finished_at and last
    results = QueryRunResult.objects.filter(run=run).count()
    if results != run.total:
        raise RuntimeError(f"run {run.pk}: {results} result rows for {run.total} queries")
    return {
        "run": run,
        "wall": wall,
        "start": (run.started_at - run.created).total_seconds(),
        "search": (last - run.started_at).total_seconds(),
        "finalize": (run.finished_at - last).total_seconds(),
    }


def assay_run(golden_path: Path, url: str, out: Path) -> float:
    """`assay run` as a CI job runs it: a process from start to exit."""
    command = [ASSAY, "run", "--golden", str(golden_path), "--search-url", url, "--quiet"]
    command += ["--concurrency", str(TOTAL_CONCURRENCY), "--out", str(out)]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"assay run exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall


def finalize_steps(run: Any) -> dict[str, float]:
    """Finalize's steps (evaluation/runs/services/finalize.py) again, one by one, on a finished run's rows:
    seconds per step. Nothing is written but the report, rewritten as it was."""
    from assay.drift import compare
    from assay.golden.keys import resolve_keys
    from assay.report import BOOTSTRAP_SEED, build_report
    from evaluation.runs import selectors
    from evaluation.runs.models import EvaluationRun
    from evaluation.runs.services.finalize import run_report_build
    from golden_io import models as golden_models
    from golden_io.models import GoldenVersion

    steps: dict[str, float] = {}

    def step(name: str, work: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        value = work()
        steps[name] = time.perf_counter() - started
        return value

    version = GoldenVersion.objects.get(pk=run.golden_version_id)
    golden_models._PARSED.clear()  # a worker parses the version once per process
    golden = step("golden file parsed", lambda: selectors.golden_of(version))
    results = step("result rows read", lambda: selectors.run_results(run=run))
    resolved = step("durable keys resolved", lambda: resolve_keys(golden, run.key_map or {}))
    report = step(
        "build_report",
        lambda: build_report(resolved.golden, results, run={}, bootstrap_seed=BOOTSTRAP_SEED + run.pk),
    )
    step("run_report_build (all of the above, and the run block)", lambda: run_report_build(run=run))
    step("gate (compare)", lambda: compare(report, report, _default_budgets()))
    step(
        "report and gate written",
        lambda: EvaluationRun.objects.filter(pk=run.pk).update(report=run.report, gate=run.gate),
    )
    return steps


def _default_budgets() -> Any:
    from assay.budgets import load_budgets

    return load_budgets(None)


@dataclass
class Curve:
    """Every measured run of one size."""

    queries: int
    celery: dict[int, list[dict[str, Any]]]  # worker count -> runs
    assay: list[float]
    sequential: float | None = None


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def inner() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    import redis
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from assay.golden.format import dump_json
    from benchmarks._report import write_section
    from benchmarks.bench_harness import sequential_loop
    from labeling.models import GoldenSet, Rubric
    from tests.support.processes import serving
    from tests.support.runs import golden_file, make_target, make_version

    call_command("migrate", verbosity=0)
    redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
    user = User.objects.create_user("bench")
    rubric = Rubric.objects.create(name="bench", version=1)
    golden_set = GoldenSet.objects.create(slug="bench", name="Bench", surface="bench", rubric=rubric)
    var = Path(os.environ["ASSAY_VAR_DIR"])
    goldens = {n: golden_file(n, version=f"bench-{n}") for n in SIZES}
    versions = {n: make_version(golden_set, golden) for n, golden in goldens.items()}
    paths = {}
    for n, golden in goldens.items():
        paths[n] = var / f"golden-{n}.json"
        paths[n].write_bytes(dump_json(golden))
    warmup = make_version(golden_set, golden_file(WARMUP_QUERIES, version="warmup"))
    curves = {n: Curve(n, {count: [] for count in WORKER_COUNTS}, []) for n in SIZES}
    load_before = os.getloadavg()
    steps: dict[str, float] = {}
    stub = ["-m", "tests.support.stub_server", "--delay-ms", str(DELAY_MS), "--hits", "10"]
    with serving(stub) as base:
        url = f"{base}/search"
        for count in WORKER_COUNTS:
            in_flight = TOTAL_CONCURRENCY // (count * POOL)
            target = make_target(
                url, golden_set, name=f"stub-{count}", concurrency=in_flight, timeout=10.0, retries=3
            )
            with celery_workers(var, count):
                celery_run(warmup, target, user)  # imports, connections, the first parse in each process
                for n in SIZES:
                    for repeat in range(REPEATS[n]):
                        # Alternately first: the machine's other load falls on both alike.
                        for kind in ("celery", "assay") if repeat % 2 == 0 else ("assay", "celery"):
                            if kind == "celery":
                                curves[n].celery[count].append(celery_run(versions[n], target, user))
                            else:
                                curves[n].assay.append(assay_run(paths[n], url, var / "relevance.json"))
        largest = curves[SIZES[-1]].celery[WORKER_COUNTS[0]][-1]["run"]
        steps = finalize_steps(largest)
        smallest = SIZES[0]
        curves[smallest].sequential, _ = sequential_loop(url, list(goldens[smallest].queries))
    load_after = os.getloadavg()
    markdown = render(curves, steps, load_before, load_after, settings.DATABASES["default"]["ENGINE"])
    print(markdown)
    write_section("runs", markdown)


def render(
    curves: dict[int, Curve],
    steps: dict[str, float],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
    engine: str,
) -> str:
    rows = []
    phases = []
    for n, curve in curves.items():
        ideal = n * DELAY_MS / 1000 / TOTAL_CONCURRENCY
        assay = _median(curve.assay)
        rows.append(
            f"| {n:,} | ideal ({n:,} x {DELAY_MS} ms / {TOTAL_CONCURRENCY}) | {ideal:.2f} | - | 1.00x | - |"
        )
        rows.append(
            f"| {n:,} | `assay run --concurrency {TOTAL_CONCURRENCY}`, one process | {assay:.2f} | "
            f"{n / assay:,.0f} | {assay / ideal:.2f}x | {_seconds(curve.assay)} |"
        )
        for count, runs in curve.celery.items():
            walls = [r["wall"] for r in runs]
            wall = _median(walls)
            in_flight = TOTAL_CONCURRENCY // (count * POOL)
            rows.append(
                f"| {n:,} | Celery, {count} workers x {POOL} processes x {in_flight} in flight | "
                f"{wall:.2f} | {n / wall:,.0f} | {wall / ideal:.2f}x ({wall / assay:.2f}x `assay run`) | "
                f"{_seconds(walls)} |"
            )
            median = {k: _median([r[k] for r in runs]) for k in ("start", "search", "finalize")}
            phases.append(
                f"| {n:,} | {count} | {median['start']:.2f} | {median['search']:.2f} "
                f"({median['search'] / ideal:.2f}x ideal) | {median['finalize']:.2f} |"
            )
        if curve.sequential is not None:
            rows.append(
                f"| {n:,} | sequential loop (one request after another, httpx) | {curve.sequential:.2f} | "
                f"{n / curve.sequential:,.0f} | {curve.sequential / ideal:.1f}x | - |"
            )
    small = curves[SIZES[0]]
    small_ideal = SIZES[0] * DELAY_MS / 1000 / TOTAL_CONCURRENCY
    budget = 2 * small_ideal + 2
    small_walls = {count: _median([r["wall"] for r in runs]) for count, runs in small.celery.items()}
    verdict = ", ".join(
        f"{count} workers {wall:.2f} s ({'meets' if wall <= budget else 'misses'} it)"
        for count, wall in small_walls.items()
    )
    largest = SIZES[-1]
    step_rows = [f"| {name} | {seconds:.2f} |" for name, seconds in steps.items()]

    def load(values: tuple[float, float, float]) -> str:
        return " / ".join(f"{v:.1f}" for v in values)

    repeats = ", ".join(f"{REPEATS[n]} at {n:,}" for n in SIZES)
    return "\n".join(
        [
            "### Evaluation runs on Celery workers: a scale curve",
            "",
            f"Queries against a loopback stub search server in its own process (every reply delayed "
            f"{DELAY_MS} ms, 10 hits), total concurrency {TOTAL_CONCURRENCY}: 2 `celery worker` processes "
            f"x {POOL} pool processes x {TOTAL_CONCURRENCY // (2 * POOL)} requests in flight per chunk, or "
            f"4 x {POOL} x {TOTAL_CONCURRENCY // (4 * POOL)}; Redis broker and result backend, "
            f"{engine.rsplit('.', 1)[-1]} database. Celery: wall time from trigger (`run_create` "
            "committed) to verdict (run row final, report and gate written). `assay run`: a whole process "
            "from start to exit, run alternately with the Celery runs. Medians of "
            f"{repeats} queries (each run's seconds listed), after a {WARMUP_QUERIES}-query warm-up per "
            f"worker count. Load average (1, 5, 15 min) on {os.cpu_count()} CPUs: {load(load_before)} "
            f"before, {load(load_after)} after: the workers, the stub, PostgreSQL and Redis share them.",
            "",
            "| queries | driver | wall s | queries/s | vs ideal | runs (s) |",
            "| ---: | --- | ---: | ---: | ---: | --- |",
            *rows,
            "",
            "Where the Celery runs' time goes (medians, seconds): trigger to claimed (the start task), "
            "searching and writing the result rows, last result to verdict (finalize: report with bootstrap "
            "interval, gate).",
            "",
            "| queries | workers | start | search and write | finalize |",
            "| ---: | ---: | ---: | ---: | ---: |",
            *phases,
            "",
            f"Finalize's steps at {largest:,} queries, timed one by one in the benchmark's process on the "
            f"last {WORKER_COUNTS[0]}-worker run's rows:",
            "",
            "| step | seconds |",
            "| --- | ---: |",
            *step_rows,
            "",
            f"Target at {SIZES[0]:,} queries: 2 x ideal + 2 s = {budget:.2f} s; {verdict}.",
        ]
    )


if __name__ == "__main__":
    if "--inner" in sys.argv:
        inner()
    else:
        main()
