"""Evaluation runs on Celery: a 2,000-query run against a loopback engine answering in 20 ms, 2 workers.

Measured from trigger (`run_create` committed) to verdict (the run row final), against the issue's target
of 2x the ideal (2,000 x 20 ms / total concurrency) plus 2 s, side by side with the in-process
`assay run` at the same total concurrency and a sequential loop (one request after another).

Total concurrency = 2 worker processes x 2 pool processes each x 8 requests in flight per chunk = 32.
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

QUERIES = 2000
WARMUP_QUERIES = 200
DELAY_MS = 20
WORKERS = 2
POOL = 2
CHUNK_CONCURRENCY = 8
TOTAL_CONCURRENCY = WORKERS * POOL * CHUNK_CONCURRENCY
REPEATS = 3
REPO = Path(__file__).resolve().parent.parent


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
        }
        env.pop("CELERY_TASK_ALWAYS_EAGER", None)
        subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_runs", "--inner"], cwd=REPO, env=env, check=True
        )


# ------------------------------------------------------------------------------------------- measuring


def _workers(var: Path) -> list[tuple[subprocess.Popen[bytes], Path]]:
    procs = []
    for n in range(1, WORKERS + 1):
        log = var / f"worker{n}.log"
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-l", "info", "-c", str(POOL)]
        command += ["-n", f"bench{n}@%h", "--without-mingle", "--without-gossip", "--without-heartbeat"]
        with log.open("w") as handle:
            procs.append(
                (
                    subprocess.Popen(
                        command, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
                    ),
                    log,
                )
            )
    deadline = time.monotonic() + 120
    for proc, log in procs:
        while " ready." not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)
    return procs


def _timed_run(version: Any, target: Any, user: Any) -> dict[str, float]:
    from evaluation.models import EvaluationRun, QueryRunResult
    from evaluation.services import run_create

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
    return {
        "wall": wall,
        "start": (run.started_at - run.created).total_seconds(),
        "search": (last - run.started_at).total_seconds(),
        "finalize": (run.finished_at - last).total_seconds(),
        "results": QueryRunResult.objects.filter(run=run).count(),
    }


def inner() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    import redis
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from assay.cli import main as assay
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
    golden = golden_file(QUERIES, version="bench")
    version = make_version(golden_set, golden)
    warmup = make_version(golden_set, golden_file(WARMUP_QUERIES, version="warmup"))
    ideal = QUERIES * DELAY_MS / 1000 / TOTAL_CONCURRENCY
    budget = 2 * ideal + 2
    load_before = os.getloadavg()[0]
    var = Path(os.environ["ASSAY_VAR_DIR"])
    stub = ["-m", "tests.support.stub_server", "--delay-ms", str(DELAY_MS), "--hits", "10"]
    with serving(stub) as base:
        url = f"{base}/search"
        target = make_target(url, golden_set, concurrency=CHUNK_CONCURRENCY, timeout=10.0, retries=3)
        procs = _workers(var)
        try:
            _timed_run(warmup, target, user)  # imports, connections, first parse of each version
            runs = [_timed_run(version, target, user) for _ in range(REPEATS)]
        finally:
            for proc, _ in procs:
                proc.terminate()
            for proc, _ in procs:
                proc.wait(30)
        golden_path = var / "golden.json"
        golden_path.write_bytes(dump_json(golden))
        cli_args = ["run", "--golden", str(golden_path), "--search-url", url, "--quiet"]
        cli_args += ["--concurrency", str(TOTAL_CONCURRENCY), "--out", str(var / "relevance.json")]
        assay([*cli_args[:-2], "--out", str(var / "warm.json")])
        cli_times = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            code = assay(cli_args)
            cli_times.append(time.perf_counter() - started)
            if code != 0:
                raise RuntimeError(f"assay run exited {code}")
        sequential, _ = sequential_loop(url, list(golden.queries))
    assert all(r["results"] == QUERIES for r in runs)
    median = statistics.median(r["wall"] for r in runs)
    cli = statistics.median(cli_times)
    phases = {k: statistics.median(r[k] for r in runs) for k in ("start", "search", "finalize")}
    verdict = "meets" if median <= budget else "misses"
    rows = [
        (f"ideal (2,000 x 20 ms / {TOTAL_CONCURRENCY})", ideal, "1.00x"),
        (
            f"Celery run, {WORKERS} workers x {POOL} processes x {CHUNK_CONCURRENCY} in flight",
            median,
            f"{median / ideal:.2f}x",
        ),
        (f"in-process `assay run --concurrency {TOTAL_CONCURRENCY}`", cli, f"{cli / ideal:.2f}x"),
        ("sequential loop (one request after another, httpx)", sequential, f"{sequential / ideal:.1f}x"),
    ]
    markdown = "\n".join(
        [
            "### Evaluation run on Celery workers",
            "",
            f"{QUERIES:,} queries against a loopback stub search server in its own process (every reply "
            f"delayed {DELAY_MS} ms), {WORKERS} `celery worker` processes with {POOL} pool processes each, "
            f"{CHUNK_CONCURRENCY} requests in flight per chunk task (16 chunks of 125 queries), Redis broker "
            f"and result backend, {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]} database. "
            f"Wall time from trigger (`run_create` committed) to verdict (run row final, report and gate "
            f"written); median of {REPEATS} runs ("
            + ", ".join(f"{r['wall']:.2f}" for r in runs)
            + f" s) after a {WARMUP_QUERIES}-query warm-up run; load average {load_before:.1f} on "
            f"{os.cpu_count()} CPUs when it started.",
            "",
            "| driver | wall time (s) | queries/s | vs ideal |",
            "| --- | ---: | ---: | ---: |",
            *(f"| {name} | {seconds:.2f} | {QUERIES / seconds:,.0f} | {vs} |" for name, seconds, vs in rows),
            "",
            f"Target: 2 x ideal + 2 s = {budget:.2f} s; the Celery run {verdict} it. Where its time goes "
            f"(medians): trigger to claimed {phases['start']:.2f} s, searching and writing results "
            f"{phases['search']:.2f} s, last result to verdict {phases['finalize']:.2f} s (report with "
            "bootstrap interval, gate).",
        ]
    )
    print(markdown)
    write_section("runs", markdown)


if __name__ == "__main__":
    if "--inner" in sys.argv:
        inner()
    else:
        main()
