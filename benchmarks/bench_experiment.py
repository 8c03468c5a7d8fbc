"""An experiment on the app beside `assay sweep` of the same grid: the 5 x 4 grid of the demo search
service's title weight and minimum-should-match (20 configurations) on the 86-query demo golden set
(`demo_load`, `demo_runs`: the target `demo-search`, concurrency 8), on `make run`'s stack (SQLite, the
filesystem broker) and on PostgreSQL + Redis, each with one `celery worker -c 2`, timed from
`experiment_create` to its final status (its row polled every 20 ms). `assay sweep` of the same golden
version (its file), grid, seed and fixed parameters against the same service runs alternately with it,
and the two results are checked equal (docs/experiments.md, "In the app").

The target: within 1.5x of 20 x 86 x the service's latency / concurrency + 5 s, where the latency is the
median the experiment's answers recorded. Also the peak memory (tracemalloc) of the step that scales with
the grid, ranking the tuning phase (`experiment_advance`), for 20, 100 and 500 configurations whose
answers are copied from the measured experiment's baseline: it reads one configuration's answers at a
time, so it should stay flat.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks._stacks import demo_loaded, each_stack
from benchmarks.bench_runs import ASSAY, REPO

ROUNDS = int(os.environ.get("ASSAY_BENCH_EXPERIMENT_ROUNDS", "3"))
POLL_S = 0.02
GRID = {"params": {"title_weight": [0.5, 1, 3, 6, 12], "min_should_match": [1, 2, 3, 4]}}
SEED = 1
TARGET = 1.5
MEMORY_SIZES = (20, 100, 500)
STACK_NAMES = {
    "sqlite+filesystem": "`make run`'s stack (SQLite, the filesystem broker)",
    "postgresql+redis": "PostgreSQL + Redis",
}


def main() -> None:
    from benchmarks._report import write_section

    figures = each_stack("experiment")
    markdown = "\n".join(render(stack, f) for stack, f in figures.items())
    print(markdown)
    write_section("experiment", markdown)


def app_sweep(version: Any, target: Any, user: Any) -> tuple[float, Any]:
    from evaluation.experiments.models import Experiment
    from evaluation.experiments.services.experiments import experiment_create

    started = time.perf_counter()
    experiment = experiment_create(
        golden_version=version, target=target, grid=GRID, created_by=user, seed=SEED
    )
    while (
        Experiment.objects.filter(pk=experiment.pk).values_list("status", flat=True).get()
        not in Experiment.FINAL
    ):
        time.sleep(POLL_S)
    wall = time.perf_counter() - started
    experiment.refresh_from_db()
    if experiment.status != Experiment.Status.SUCCEEDED:
        raise RuntimeError(f"experiment {experiment.pk}: {experiment.status} {experiment.error_message}")
    return wall, experiment


def cli_sweep(golden: Path, url: str, fixed: dict[str, Any], out: Path) -> tuple[float, dict[str, Any]]:
    grid = out.with_name("grid.json")
    grid.write_text(json.dumps(GRID))
    command = [ASSAY, "sweep", "--golden", str(golden), "--search-url", url, "--grid", str(grid),
               "--seed", str(SEED), "--concurrency", "8", "--quiet", "--out", str(out)]  # fmt: skip
    for name, value in fixed.items():
        command += ["--param", f"{name}={json.dumps(value)}"]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"assay sweep exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, json.loads(out.read_text())


def memory(experiment: Any, sizes: tuple[int, ...]) -> dict[int, float]:
    """Peak MB (tracemalloc) of ranking the tuning phase of an experiment of each size."""
    from evaluation.experiments.models import Experiment, ExperimentResult
    from evaluation.experiments.services.experiments import experiment_advance

    base = list(
        ExperimentResult.objects.filter(
            experiment=experiment, slot=0, query_id__in=experiment.split["tuning"]
        )
    )
    peaks = {}
    for size in sizes:
        configs = [{"title_weight": 3, "min_should_match": 1 + i % 4} for i in range(size)]
        copy = Experiment.objects.create(
            golden_version=experiment.golden_version, target=experiment.target,
            target_snapshot=experiment.target_snapshot, grid={"configs": configs}, configs=configs,
            seed=SEED, split=experiment.split, status=Experiment.Status.RUNNING, total=(size + 1) * len(base),
        )  # fmt: skip
        rows = [
            ExperimentResult(experiment=copy, slot=slot, query_id=r.query_id, ids=r.ids, titles=r.titles,
                             error=r.error, http_status=r.http_status, latency_ms=r.latency_ms)
            for slot in range(size + 1) for r in base
        ]  # fmt: skip
        ExperimentResult.objects.bulk_create(rows, batch_size=5000)
        del rows
        tracemalloc.start()
        experiment_advance(experiment_id=copy.pk)
        peaks[size] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        copy.refresh_from_db()
        assert copy.phase == Experiment.Phase.HOLDOUT, copy.error_message
        Experiment.objects.filter(pk=copy.pk).update(status=Experiment.Status.CANCELLED)
    return peaks


def inner(out: Path) -> None:
    var = demo_loaded()
    import io

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from assay.targets import harness_config
    from evaluation.experiments.models import ExperimentResult
    from evaluation.runs.models import SearchTarget
    from golden_io.models import GoldenVersion
    from tests.support.processes import serving
    from tests.support.workers import Worker

    search = ["-m", "demo.search_service", "--corpus", "demo/corpus.jsonl", "--port", "0"]
    with serving(search) as base:
        worker = Worker("experiment", var / "worker.log", dict(os.environ))
        try:
            worker.wait_ready(120)
            call_command("demo_runs", search_url=f"{base}/search", stdout=io.StringIO())
            version = GoldenVersion.objects.order_by("-id").first()
            assert version is not None
            target = SearchTarget.objects.get(name="demo-search")
            user = get_user_model().objects.get(username="reviewer")
            golden = var / "golden.json"
            golden.write_bytes(bytes(version.content))
            fixed = dict(harness_config(target.spec(), size=version.k).params)
            app_sweep(version, target, user)  # warm-up: the worker's first parse of the golden file
            load_before = os.getloadavg()
            app, cli, latencies = [], [], []
            same = True
            for repeat in range(ROUNDS):
                for kind in ("app", "cli") if repeat % 2 == 0 else ("cli", "app"):
                    if kind == "app":
                        wall, experiment = app_sweep(version, target, user)
                        app.append(wall)
                        latencies += [
                            ms for ms in ExperimentResult.objects.filter(experiment=experiment).values_list(
                                "latency_ms", flat=True
                            ) if ms is not None
                        ]  # fmt: skip
                    else:
                        wall, result = cli_sweep(golden, f"{base}/search", fixed, var / "sweep.json")
                        cli.append(wall)
                        compared = ("split", "baseline", "configs", "best", "winner", "optimism")
                        same = (
                            same and all(result[k] == experiment.result[k] for k in compared) if app else same
                        )
            load_after = os.getloadavg()
            peaks = memory(experiment, MEMORY_SIZES)
            queries = len(golden_queries(version))
        finally:
            worker.stop()
    out.write_text(json.dumps({
        "app": app, "cli": cli, "latency_ms": statistics.median(latencies), "same": same, "queries": queries,
        "requests": experiment.result["requests"], "winner": experiment.result["best"]["params"],
        "load_before": load_before, "load_after": load_after, "memory": peaks, "concurrency": 8,
        "optimism": experiment.result["optimism"],
    }))  # fmt: skip


def golden_queries(version: Any) -> list[Any]:
    from evaluation.runs.selectors import golden_of

    return list(golden_of(version).queries)


def render(stack: str, f: dict[str, Any]) -> str:
    app, cli = statistics.median(f["app"]), statistics.median(f["cli"])
    ideal = 20 * f["queries"] * f["latency_ms"] / 1000 / f["concurrency"] + 5
    load = lambda values: " / ".join(f"{v:.1f}" for v in values)  # noqa: E731
    peaks = ", ".join(f"{size}: {mb:.1f} MB" for size, mb in f["memory"].items())
    verdict = "meets it" if app <= TARGET * ideal else "misses it"
    rounds = {
        "app": ", ".join(f"{w:.2f}" for w in f["app"]),
        "cli": ", ".join(f"{w:.2f}" for w in f["cli"]),
    }
    lines = [
        f"## Experiments on the app: a 20-configuration sweep of the demo, {STACK_NAMES[stack]}",
        "",
        f"The 5 x 4 grid of the demo search service's `title_weight` x `min_should_match` on the "
        f"{f['queries']}-query demo golden version (seed {SEED}; the target `demo-search`, concurrency 8), "
        "started as the page starts it (`experiment_create`) on one `celery worker -c 2` and timed to its "
        "final status, beside `assay sweep` of the same version's file, grid, seed and fixed parameters "
        f"against the same service (`benchmarks/bench_experiment.py`); medians of {ROUNDS} alternating "
        f"rounds after a warm-up (app: {rounds['app']} s; `assay sweep`: {rounds['cli']} s). Load average "
        f"(1, 5, 15 min) on 2 CPUs: {load(f['load_before'])} before, {load(f['load_after'])} after.",
        "",
        "| driver | median s | against `assay sweep` |",
        "| --- | --- | --- |",
        f"| the app ({STACK_NAMES[stack]}) | {app:.2f} | {app / cli:.2f}x |",
        f"| `assay sweep` | {cli:.2f} | 1.00x |",
        "",
        f"Requests: {f['requests']['asked']} searches asked, {f['requests']['sent']} sent. The service's "
        f"median latency as the answers recorded it: {f['latency_ms']:.1f} ms, so 20 x {f['queries']} x "
        f"latency / 8 + 5 s = {ideal:.2f} s. Target: within {TARGET}x of that ({TARGET * ideal:.2f} s); the "
        f"app {verdict} at {app / ideal:.2f}x. Both chose {f['winner']} (optimism {f['optimism']:+.3f}); "
        f"the results {'are equal' if f['same'] else 'DIFFER'} (split, baseline, configurations, winner, "
        "optimism).",
        "",
        "Peak memory (tracemalloc) of ranking the tuning phase by the number of configurations (the "
        f"answers copied from the baseline's): {peaks}. The step reads one configuration's answers at a "
        "time, and a chunk holds at most 500 searches whatever the grid.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if "--inner" in sys.argv:
        inner(Path(sys.argv[sys.argv.index("--inner") + 1]))
    else:
        main()
