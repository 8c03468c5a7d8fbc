"""`assay sweep` beside `assay run` of the same requests, both against the same stub server.

A golden file shaped like the demo's (86 core queries, two strata) and a grid of 20 configurations: the
sweep sends 21 x 60 tuning requests (the configurations and the baseline) and 4 x 26 held-out ones (the
top 3 and the baseline). The stub server (its own process) answers every request after 20 ms, whatever
its parameters, so no two requests are alike and none is shared. Compared, each a subprocess timed from
start to exit, at the same concurrency:

- `assay sweep` (progress to a pipe, SWEEP.json written);
- one `assay run` of a golden file with one query per request the sweep sends (1,364 queries): the same
  requests through the same harness, scored once;
- 25 `assay run`s, one per configuration and part, as a script driving `assay run` would do it.

Target: `assay sweep` within 1.2x of the one `assay run`. Also the peak memory (max RSS) of sweeps of 5,
20 and 100 configurations, for how it grows with the grid.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from assay.experiment import split_queries
from assay.golden.format import dump_json
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from benchmarks._report import write_section
from tests.support.processes import serving

QUERIES = 86
CONFIGS = 20
DELAY_MS = 20
CONCURRENCY = 16
ROUNDS = 3
TARGET = 1.2
REPO = Path(__file__).resolve().parent.parent
# The command in a wrapper that also reports its peak memory (max RSS, KiB on Linux) on the last line.
WRAPPER = (
    "import resource, sys\n"
    "from assay.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def golden_file(queries: int, *, texts: list[str] | None = None) -> GoldenFile:
    return GoldenFile(
        version="bench",
        queries=tuple(
            GoldenQuery(
                id=f"q-{i}",
                text=texts[i] if texts else f"query {i}",
                judgments=tuple(Judgment(f"d{d}", g) for d, g in ((1, 3), (2, 2), (4, 1))),
                stratum=("billing", "docs")[i % 2],
            )
            for i in range(queries)
        ),
    )


def timed(argv: list[str]) -> dict[str, float]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, *argv], capture_output=True, text=True, cwd=REPO, check=False
    )
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"assay {argv[0]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return {"wall": wall, "rss_mb": int(proc.stderr.strip().splitlines()[-1]) / 1024}


def main() -> None:
    golden = golden_file(QUERIES)
    split = split_queries(golden.queries, 0.7, 0)
    tuning, holdout = len(split.tuning), len(split.holdout)
    requests = (CONFIGS + 1) * tuning + 4 * holdout
    ideal = requests * DELAY_MS / 1000 / CONCURRENCY
    stub = ["-m", "tests.support.stub_server", "--delay-ms", str(DELAY_MS), "--hits", "10"]
    common = ["--concurrency", str(CONCURRENCY), "--quiet"]
    with tempfile.TemporaryDirectory() as tmp, serving(stub) as base:
        folder = Path(tmp)
        url = f"{base}/search"
        path = folder / "golden.json"
        path.write_bytes(dump_json(golden))
        # One query per request the sweep sends: the same count through one `assay run`.
        flat = folder / "flat.json"
        flat.write_bytes(dump_json(golden_file(requests, texts=[f"query {i}" for i in range(requests)])))
        parts = {"tuning": set(split.tuning), "holdout": set(split.holdout)}
        part_files = {}
        for name, ids in parts.items():
            part_files[name] = folder / f"{name}.json"
            part = GoldenFile(version="bench", queries=tuple(q for q in golden.queries if q.id in ids))
            part_files[name].write_bytes(dump_json(part))

        def grid(count: int) -> Path:
            grid_path = folder / f"grid{count}.json"
            grid_path.write_text(json.dumps({"params": {"w": list(range(count))}}))
            return grid_path

        def sweep(count: int = CONFIGS) -> dict[str, float]:
            out = folder / "sweep.json"
            argv = ["sweep", "--golden", str(path), "--grid", str(grid(count)), "--search-url", url]
            result = timed([*argv, *common, "--out", str(out)])
            sent = json.loads(out.read_bytes())["requests"]["sent"]
            if count == CONFIGS and sent != requests:
                raise RuntimeError(f"the sweep sent {sent} requests, expected {requests}")
            return result

        def one_run() -> dict[str, float]:
            argv = ["run", "--golden", str(flat), "--search-url", url, "--out", str(folder / "flat-run.json")]
            return timed([*argv, *common])

        def many_runs() -> dict[str, float]:
            started = time.perf_counter()
            jobs = [("tuning", None), *(("tuning", w) for w in range(CONFIGS))]
            jobs += [("holdout", None), *(("holdout", w) for w in range(3))]
            peak = 0.0
            for name, w in jobs:
                argv = ["run", "--golden", str(part_files[name]), "--search-url", url]
                argv += [
                    "--out",
                    str(folder / "part-run.json"),
                    *(["--param", f"w={w}"] if w is not None else []),
                ]
                peak = max(peak, timed([*argv, *common])["rss_mb"])
            return {"wall": time.perf_counter() - started, "rss_mb": peak}

        sweep(), one_run()  # warm-up
        load_before = os.getloadavg()
        sweeps: list[dict[str, float]] = []
        runs: list[dict[str, float]] = []
        scripted: list[dict[str, float]] = []
        for round_ in range(ROUNDS):
            pair = [lambda: sweeps.append(sweep()), lambda: runs.append(one_run())]
            for job in pair if round_ % 2 == 0 else reversed(pair):
                job()
        scripted.append(many_runs())
        memory = {count: sweep(count)["rss_mb"] for count in (5, 20, 100)}
        load_after = os.getloadavg()

    def median(rows: list[dict[str, Any]], key: str = "wall") -> float:
        return statistics.median(row[key] for row in rows)

    wall, floor = median(sweeps), median(runs)
    ratio = wall / floor
    verdict = "meets" if ratio <= TARGET else "misses"
    table = [
        "| driver | wall s | vs one `assay run` | peak RSS MB |",
        "| --- | ---: | ---: | ---: |",
        f"| ideal ({requests:,} x {DELAY_MS} ms / {CONCURRENCY}) | {ideal:.2f} | {ideal / floor:.2f}x | - |",
        f"| one `assay run` of {requests:,} queries | {floor:.2f} | 1.00x | {median(runs, 'rss_mb'):.0f} |",
        f"| `assay sweep`, {CONFIGS} configurations | {wall:.2f} | {ratio:.2f}x | "
        f"{median(sweeps, 'rss_mb'):.0f} |",
        f"| 25 `assay run`s, one per configuration and part | {scripted[0]['wall']:.2f} | "
        f"{scripted[0]['wall'] / floor:.2f}x | {scripted[0]['rss_mb']:.0f} |",
    ]
    load = " / ".join(f"{v:.1f}" for v in load_before), " / ".join(f"{v:.1f}" for v in load_after)
    markdown = "\n".join(
        [
            "### `assay sweep` beside `assay run` of the same requests",
            "",
            f"A golden file of {QUERIES} core queries in two strata (split {tuning} tuning / {holdout} "
            f"held out), a grid of {CONFIGS} configurations: {CONFIGS + 1} x {tuning} tuning and "
            f"4 x {holdout} held-out requests, {requests:,} in all, none alike, against the loopback stub "
            f"server in its own process (every reply delayed {DELAY_MS} ms), concurrency {CONCURRENCY}. "
            "Each driver is a "
            "subprocess timed from start to exit (`benchmarks/bench_sweep.py`); medians of "
            f"{ROUNDS} alternating rounds after a warm-up (sweep: "
            + ", ".join(f"{r['wall']:.2f}" for r in sweeps)
            + " s; run: "
            + ", ".join(f"{r['wall']:.2f}" for r in runs)
            + f" s). Load average (1, 5, 15 min) on {os.cpu_count()} CPUs: {load[0]} before, "
            f"{load[1]} after.",
            "",
            *table,
            "",
            "Peak memory of a sweep by its number of configurations (same golden file): "
            + ", ".join(f"{count}: {mb:.0f} MB" for count, mb in memory.items())
            + ". Each configuration keeps its part's summary; the answers are kept so that a request "
            "asked twice is sent once, which is what grows with the grid.",
            "",
            f"Target: `assay sweep` within {TARGET:.1f}x of `assay run` of the same requests; it {verdict} "
            f"it at {ratio:.2f}x ({wall - floor:+.2f} s).",
        ]
    )
    print(markdown)
    write_section("sweep", markdown)


if __name__ == "__main__":
    main()
