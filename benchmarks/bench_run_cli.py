"""`assay run` as a whole process beside a bare aiohttp client loop, both against the same stub server.

3,000 queries, every reply delayed 20 ms, concurrency 32 (ideal: 3,000 x 20 ms / 32 = 1.875 s). Both
drivers are subprocesses timed from start to exit: `assay run` (the console script, progress to a pipe as
in a CI log) and `benchmarks/_bare_aiohttp.py` (Python, aiohttp, the same query list, 32 workers sending
the http_json request and decoding the replies, nothing else). They alternate, the first of each pair
swapping every round, after one warm-up of each; the figures are medians. Target: `assay run` within
1.10x of the bare loop.

Where `assay run`'s time goes: the artifact's `run.started_at` and `run.duration_s` split its wall time
into start-up (process start to the first request: imports, the golden file's checks), the requests,
and the tail (scoring, the artifact); the bare loop prints its requests' time. `build_report` on the
same results is also timed in this process, for the tail's share of scoring.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from assay.golden.format import dump_json
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from benchmarks._report import write_section
from tests.support.processes import serving

QUERIES = 3000
DELAY_MS = 20
CONCURRENCY = 32
ROUNDS = 9
TARGET = 1.10
REPO = Path(__file__).resolve().parent.parent
ASSAY = str(Path(sys.executable).with_name("assay"))
BARE = str(REPO / "benchmarks" / "_bare_aiohttp.py")


def golden_file(queries: int) -> GoldenFile:
    """Queries as a help center's golden file has them: a locale, a filter on every other query, a
    stratum, four judgments (the shape of tests/support/runs.py's golden files)."""
    return GoldenFile(
        version="bench",
        rubric="help-center@1",
        queries=tuple(
            GoldenQuery(
                id=f"q-{i}",
                text=f"query {i}",
                judgments=tuple(Judgment(f"d{d}", g) for d, g in ((1, 3), (2, 2), (4, 1), (12, 2))),
                locale="en-US",
                filters={"product": "billing"} if i % 2 else {},
                stratum=("billing", "docs")[i % 2],
            )
            for i in range(1, queries + 1)
        ),
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str]) -> dict[str, Any]:
    """Run `command` to its exit: wall and CPU seconds, its start time (epoch) and stdout."""
    cpu = _children_cpu()
    spawned = time.time()
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{command[0]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return {"wall": wall, "cpu": _children_cpu() - cpu, "spawned": spawned, "stdout": proc.stdout}


def assay_run(golden: Path, url: str, out: Path) -> dict[str, Any]:
    command = [ASSAY, "run", "--golden", str(golden), "--search-url", url]
    result = timed([*command, "--concurrency", str(CONCURRENCY), "--out", str(out)])
    run = json.loads(out.read_bytes())["run"]
    if run["errors"] or run["queries"] != QUERIES:
        raise RuntimeError(f"assay run: {run['errors']} errors over {run['queries']} queries")
    first_request = datetime.fromisoformat(run["started_at"].replace("Z", "+00:00")).timestamp()
    result["startup"] = first_request - result["spawned"]
    result["requests"] = run["duration_s"]
    result["tail"] = result["wall"] - result["startup"] - result["requests"]
    return result


def bare_loop(golden: Path, url: str) -> dict[str, Any]:
    result = timed([sys.executable, BARE, str(golden), url, str(CONCURRENCY)])
    result["requests"] = float(result["stdout"].strip())
    return result


FRESH_IMPORT = """
import sys, time
started = time.perf_counter()
if sys.argv[1] == "golden":
    from assay.golden.format import parse_columns
    parse_columns(open(sys.argv[2], "rb").read())
else:
    import aiohttp
print(time.perf_counter() - started)
"""


def fresh_seconds(what: str, golden_path: Path) -> float:
    """In a fresh interpreter (median of 3): the golden file's modules imported and the file read and
    checked as `assay run` reads it ("golden"), or aiohttp imported ("aiohttp"), which `assay run` does
    beside it on a helper thread."""
    command = [sys.executable, "-c", FRESH_IMPORT, what, str(golden_path)]
    runs = [subprocess.run(command, capture_output=True, text=True, check=True) for _ in range(3)]
    return statistics.median(float(run.stdout) for run in runs)


def build_report_seconds(golden_path: Path, artifact: Path) -> float:
    """`build_report` on the results of the last `assay run`, as it scores them (the golden file read as
    columns), best of 3 in this process."""
    from assay.golden.format import parse_columns
    from assay.report import build_report
    from assay.results import QueryResult

    golden = parse_columns(golden_path.read_bytes())

    rows = json.loads(artifact.read_bytes())["per_query"]
    results = {row["id"]: QueryResult(query_id=row["id"], ids=tuple(row["ids"])) for row in rows}
    times = []
    for _ in range(3):
        started = time.perf_counter()
        build_report(golden, results, run={})
        times.append(time.perf_counter() - started)
    return min(times)


def _load(averages: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.1f}" for value in averages)


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def main() -> None:
    golden = golden_file(QUERIES)
    ideal = QUERIES * DELAY_MS / 1000 / CONCURRENCY
    stub = ["-m", "tests.support.stub_server", "--delay-ms", str(DELAY_MS), "--hits", "10"]
    with tempfile.TemporaryDirectory() as tmp, serving(stub) as base:
        path = Path(tmp) / "golden.json"
        path.write_bytes(dump_json(golden))
        out = Path(tmp) / "relevance.json"
        url = f"{base}/search"
        assay_run(path, url, out), bare_loop(path, url)  # warm-up: file caches, bytecode, connections
        load_before = os.getloadavg()
        assay: list[dict[str, Any]] = []
        bare: list[dict[str, Any]] = []
        for round_ in range(ROUNDS):
            pair = [
                lambda: assay.append(assay_run(path, url, out)),
                lambda: bare.append(bare_loop(path, url)),
            ]
            for run in pair if round_ % 2 == 0 else reversed(pair):
                run()
        load_after = os.getloadavg()
        scoring = build_report_seconds(path, out)
        golden_read, transport = fresh_seconds("golden", path), fresh_seconds("aiohttp", path)
    wall, floor = _median(assay, "wall"), _median(bare, "wall")
    ratio = wall / floor
    rows = [
        (f"ideal ({QUERIES:,} x {DELAY_MS} ms / {CONCURRENCY})", ideal, None, None, None, None),
        (
            "bare aiohttp loop (`benchmarks/_bare_aiohttp.py`)",
            floor,
            floor - _median(bare, "requests"),
            _median(bare, "requests"),
            None,
            _median(bare, "cpu"),
        ),
        (
            f"`assay run --concurrency {CONCURRENCY}`",
            wall,
            _median(assay, "startup"),
            _median(assay, "requests"),
            _median(assay, "tail"),
            _median(assay, "cpu"),
        ),
    ]

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    table = [
        "| driver | wall s | vs bare loop | start-up s | requests s | tail s | CPU s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(
            f"| {name} | {seconds:.2f} | {seconds / floor:.2f}x | {cell(start)} | {cell(requests)} | "
            f"{cell(tail)} | {cell(cpu)} |"
            for name, seconds, start, requests, tail, cpu in rows
        ),
    ]
    verdict = "meets" if ratio <= TARGET else "misses"
    markdown = "\n".join(
        [
            "### `assay run`, the whole process, beside a bare aiohttp loop",
            "",
            f"{QUERIES:,} queries (a locale, a filter on every other one, a stratum, 4 judgments each) "
            f"against the loopback stub server in its own process (`tests/support/stub_server.py`, every "
            f"reply delayed {DELAY_MS} ms, 10 hits), concurrency {CONCURRENCY}. Each driver is a "
            "subprocess timed from start to exit: `assay run` (progress to a pipe, as in a CI log; the "
            "artifact written) and `benchmarks/_bare_aiohttp.py` (Python, aiohttp, the same query list, "
            f"{CONCURRENCY} workers sending the http_json request and decoding the replies, nothing else). "
            f"Medians of {ROUNDS} alternating rounds after a warm-up; `assay run`: "
            + ", ".join(f"{r['wall']:.2f}" for r in assay)
            + " s; bare loop: "
            + ", ".join(f"{r['wall']:.2f}" for r in bare)
            + f" s. Load average (1, 5, 15 min) on {os.cpu_count()} CPUs: {_load(load_before)} before, "
            f"{_load(load_after)} after.",
            "",
            *table,
            "",
            "Start-up: process start to the first request (for the bare loop, everything outside its "
            "requests); requests: first request to last reply; tail: scoring and writing the artifact. "
            f"CPU: the process's user and system time. `build_report` on the same {QUERIES:,} results "
            f"takes {scoring:.2f} s of the tail (best of 3, in-process, warm). Of the start-up, in a fresh "
            f"interpreter (medians of 3): the golden file's modules imported and the file read and checked "
            f"{golden_read:.2f} s, aiohttp imported {transport:.2f} s (`assay run` imports it on a helper "
            "thread meanwhile; the bare loop's start-up is mostly this import).",
            "",
            f"Target: `assay run` within {TARGET:.2f}x of the bare loop; it {verdict} it at {ratio:.2f}x "
            f"({wall - floor:+.2f} s).",
        ]
    )
    print(markdown)
    write_section("run_cli", markdown)


if __name__ == "__main__":
    main()
