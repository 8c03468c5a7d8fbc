"""Each benchmark writes its own section of docs/benchmarks.md, between markers, leaving the rest."""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = """# Benchmarks

Measured by `make bench` (each section by its own script in `benchmarks/`), side by side with the named
peers in one run on the same machine. Tests never assert wall-clock times; these figures are what the
issues' performance targets are judged by. Each section says when and where it was measured.
"""


# Sections whose figures another section reads (the targets table) keep them here, stamped with when they
# were measured; `python -m benchmarks` marks its start, so a reader can tell this run's from an older one's.
FIGURES = DOC.parent.parent / "var" / "bench"
STARTED = "ASSAY_BENCH_STARTED"


def save_figures(name: str, figures: dict[str, Any]) -> None:
    FIGURES.mkdir(parents=True, exist_ok=True)
    (FIGURES / f"{name}.json").write_text(json.dumps({"measured": time.time(), "figures": figures}))


def figures_of(name: str) -> dict[str, Any] | None:
    """The figures section `name` saved during this `python -m benchmarks` run; None when it has not run."""
    path = FIGURES / f"{name}.json"
    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    if saved["measured"] < float(os.environ.get(STARTED, "inf")):
        return None
    figures: dict[str, Any] = saved["figures"]
    return figures


def machine() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}"


def write_section(name: str, markdown: str) -> None:
    """Replace (or append) the section `name`, stamped with the date and machine."""
    text = DOC.read_text() if DOC.exists() else HEADER
    stamp = f"_Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}._\n\n"
    block = f"<!-- bench:{name} -->\n{stamp}{markdown.strip()}\n<!-- /bench:{name} -->"
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else f"{text.rstrip()}\n\n{block}\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)


def measure_in_django(
    module: str, database_url: str, *, tree: Path | None = None, args: Sequence[str] = ()
) -> tuple[dict[str, Any], float, float]:
    """Run `python -m <module> measure [args]` against `database_url` (DEBUG off, the test client's host
    allowed) and return the JSON it printed last, with the load average (1 min) before and after.
    `tree`: a copy of the repository to run in instead of this one (another commit's code)."""
    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        DJANGO_DEBUG="false",
        DJANGO_ALLOWED_HOSTS="testserver",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    root = tree or DOC.parent.parent
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    load_before = os.getloadavg()[0]
    done = subprocess.run(
        [sys.executable, "-m", module, "measure", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{module} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result, load_before, os.getloadavg()[0]


def page_timed(
    client: Any, url: str, repeat: int, before: Callable[[], None] | None = None
) -> dict[str, Any]:
    """One page timed at the server through Django's test client: two requests to warm up, then `repeat`
    timed ones (`before` runs before each, untimed); the median, 95th percentile and max of the time the
    client waited, the web process's median CPU time, the SQL statements of one request and its size."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(2):
        if before:
            before()
        response = client.get(url)
        if response.status_code != 200:
            raise SystemExit(f"{url}: {response.status_code}")
    times, cpu = [], []
    for _ in range(repeat):
        if before:
            before()
        start, start_cpu = time.perf_counter(), time.process_time()
        client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    if before:
        before()
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    times.sort()
    return {
        "url": url,
        "median": statistics.median(times),
        "p95": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
        "max": times[-1],
        "cpu": statistics.median(cpu),
        "queries": len(queries),
        "bytes": len(response.content),
    }


def seeded(seed: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], float]:
    """In a measuring process: Django set up, the database migrated, then `seed` run; what it returned
    and the seconds it took."""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    ids = seed()
    return ids, time.perf_counter() - started
