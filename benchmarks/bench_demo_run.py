"""The demo run from Start to its final status: the 86-query demo golden set (demo/golden.json, loaded by
`demo_load`) against the demo search service, on `make run`'s stack (SQLite, the filesystem broker and
result files under a fresh var directory) and on PostgreSQL + Redis, each with one `celery worker -c 2`.

Each run is created as the Start page creates it (`run_create`, the rewrite run of `make run`'s story) and
its row polled every 20 ms until its status is final; its recorded timestamps split the wait: created to
claimed (the start task's hop), claimed to the last result row (chunks: their hops and the searching),
last result to final (finalize and its hop). `assay run` of the same golden file against the same service
(one process, no broker, no database) runs alternately with them. Also the worker's CPU at idle (its
processes' user + system seconds over IDLE_S with nothing to do): what the broker's polling costs.

Each stack in a database of its own (a scratch PostgreSQL database next to DATABASE_URL's, or a SQLite file
in a temporary directory) and a subprocess of its own, so its Django settings read it.
"""

from __future__ import annotations

import io
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._stacks import demo_loaded, each_stack
from benchmarks.bench_runs import ASSAY, REPO

RUNS = int(os.environ.get("ASSAY_BENCH_DEMO_RUNS", "5"))
POLL_S = 0.02
IDLE_S = 10.0


def main() -> None:
    figures = each_stack("demo_run")
    markdown = render(figures)
    print(markdown)
    from benchmarks._report import save_figures, write_section

    save_figures("demo_run", figures)

    write_section("demo_run", markdown)


def _cpu_seconds(pgid: int) -> float:
    """User + system CPU seconds of every process in process group `pgid` (a worker and its pool)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields[2] is the 5th field: the process group
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def demo_run(version: Any, target: Any, user: Any) -> dict[str, float]:
    from evaluation.runs.models import EvaluationRun, QueryRunResult
    from evaluation.runs.services import run_create

    started = time.perf_counter()
    run = run_create(golden_version=version, target=target, triggered_by=user, params={"rewrite": True})
    while EvaluationRun.objects.filter(pk=run.pk).values_list("status", flat=True).get() not in (
        EvaluationRun.FINAL
    ):
        time.sleep(POLL_S)
    wall = time.perf_counter() - started
    run.refresh_from_db()
    results = QueryRunResult.objects.filter(run=run)
    if run.status != EvaluationRun.Status.SUCCEEDED or results.count() != run.total:
        raise RuntimeError(f"run {run.pk}: {run.status} with {results.count()} of {run.total}")
    last = results.order_by("-created").values_list("created", flat=True).first()
    slowest = max(ms or 0.0 for ms in results.values_list("latency_ms", flat=True))
    assert run.started_at and run.finished_at and last
    return {
        "wall": wall,
        "queued": (run.started_at - run.created).total_seconds(),
        "search": (last - run.started_at).total_seconds(),
        "finalize": (run.finished_at - last).total_seconds(),
        "slowest_ms": float(slowest or 0),
    }


def page_run(client: Any, version: Any, target: Any, user: Any) -> float:
    """Start to the verdict on the run page, as the browser gets there: the run page after Start, its
    progress fragment polled as its `hx-trigger` says, then the whole page again once the fragment says
    the run is final (HX-Refresh). Through Django's test client in this process: the server's side of
    each request, without the browser's own time."""
    from evaluation.runs.services import run_create

    started = time.perf_counter()
    run = run_create(golden_version=version, target=target, triggered_by=user, params={"rewrite": True})
    html = client.get(f"/runs/{run.pk}/").content.decode()
    while (every := re.search(r'id="run-progress"[^>]*hx-trigger="every (\d+)ms"', html)) is not None:
        time.sleep(int(every[1]) / 1000)
        fragment = client.get(f"/runs/{run.pk}/progress/", HTTP_HX_REQUEST="true")
        if fragment.get("HX-Refresh") == "true":
            html = client.get(f"/runs/{run.pk}/").content.decode()
            break
        html = fragment.content.decode()
    wall = time.perf_counter() - started
    if 'class="badge' not in html:
        raise RuntimeError(f"run {run.pk}: the page shows no verdict")
    return wall


def inner(out: Path) -> None:
    var = demo_loaded()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from evaluation.runs.models import SearchTarget
    from golden_io.models import GoldenVersion
    from tests.support.processes import serving
    from tests.support.workers import Worker

    quiet = io.StringIO()
    search = ["-m", "demo.search_service", "--corpus", "demo/corpus.jsonl", "--port", "0"]
    with serving(search) as base:
        worker = Worker("demo", var / "worker.log", dict(os.environ))
        try:
            worker.wait_ready(120)
            # make run's story: the baseline (promoted) and the first rewrite run; also the warm-up.
            call_command("demo_runs", search_url=f"{base}/search", stdout=quiet)
            version = GoldenVersion.objects.order_by("-id").first()
            target = SearchTarget.objects.get(name="demo-search")
            user = get_user_model().objects.get(username="reviewer")
            load_before = os.getloadavg()
            runs, assay = [], []
            golden = REPO / "demo" / "golden.json"
            for repeat in range(RUNS):
                for kind in ("celery", "assay") if repeat % 2 == 0 else ("assay", "celery"):
                    if kind == "celery":
                        runs.append(demo_run(version, target, user))
                    else:
                        assay.append(_assay_run(golden, f"{base}/search", var / "relevance.json"))
            # The page: as the product polls it, and as it polled before (once a second) for comparison.
            from django.test import Client

            from labeling.selectors import progress as selectors

            client = Client(HTTP_HOST="127.0.0.1")
            client.force_login(user)
            page: dict[str, list[float]] = {"now": [], "1 s": []}
            fast = selectors.POLL_FAST_MS
            for repeat in range(RUNS):
                for kind in ("now", "1 s") if repeat % 2 == 0 else ("1 s", "now"):
                    selectors.POLL_FAST_MS = fast if kind == "now" else 1000
                    page[kind].append(page_run(client, version, target, user))
            selectors.POLL_FAST_MS = fast
            load_after = os.getloadavg()
            time.sleep(2)  # the last run's notification and its result rows settle
            cpu_before = _cpu_seconds(worker.proc.pid)
            time.sleep(IDLE_S)
            idle_cpu = (_cpu_seconds(worker.proc.pid) - cpu_before) / IDLE_S
        finally:
            worker.stop()
    out.write_text(
        json.dumps(
            {
                "runs": runs,
                "page": page,
                "poll_ms": fast,
                "assay": assay,
                "load_before": load_before,
                "load_after": load_after,
                "idle_cpu": idle_cpu,
            }
        )
    )


def _assay_run(golden: Path, url: str, out: Path) -> float:
    command = [ASSAY, "run", "--golden", str(golden), "--search-url", url, "--quiet", "--out", str(out)]
    command += ["--concurrency", "8"]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    wall = time.perf_counter() - started
    # Exit 1 is a failing gate (none here without a baseline); anything else is a broken run.
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"assay run exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall


def render(figures: dict[str, dict[str, Any]]) -> str:
    def load(values: list[float]) -> str:
        return " / ".join(f"{v:.1f}" for v in values)

    rows, phases, notes, pages = [], [], [], []
    for stack, f in figures.items():
        walls = [r["wall"] for r in f["runs"]]
        wall, assay = statistics.median(walls), statistics.median(f["assay"])
        rows.append(
            f"| {stack} | {wall:.2f} | {', '.join(f'{w:.2f}' for w in walls)} | {assay:.2f} | "
            f"{wall / assay:.2f}x | {f['idle_cpu'] * 100:.1f}% |"
        )
        median = {k: statistics.median(r[k] for r in f["runs"]) for k in ("queued", "search", "finalize")}
        slowest = max(r["slowest_ms"] for r in f["runs"])
        phases.append(
            f"| {stack} | {median['queued']:.2f} | {median['search']:.2f} | {median['finalize']:.2f} | "
            f"{slowest:.0f} |"
        )
        notes.append(f"{stack}: {load(f['load_before'])} before, {load(f['load_after'])} after")
        for kind, label in (("now", f"every {f['poll_ms']} ms"), ("1 s", "every 1 s (as before)")):
            walls = f["page"][kind]
            listed = ", ".join(f"{w:.2f}" for w in walls)
            pages.append(f"| {stack} | {label} | {statistics.median(walls):.2f} | {listed} |")
    return "\n".join(
        [
            "### The demo run: Start to final status",
            "",
            f"The 86-query demo golden set against the demo search service (concurrency 8), one `celery "
            f"worker -c 2`, runs created as the Start page creates them, each row polled every "
            f"{POLL_S * 1000:.0f} ms until final. Medians of {RUNS} runs after `make run`'s story (two runs) "
            "as a warm-up; `assay run` of demo/golden.json against the same service, a whole process, "
            f"run alternately with them. Idle CPU: the worker's processes over {IDLE_S:.0f} s with "
            f"nothing to do (100% = one CPU). Load average (1, 5, 15 min) on {os.cpu_count()} CPUs: "
            + "; ".join(notes)
            + ".",
            "",
            "| stack | Start to final s | runs (s) | `assay run` s | ratio | worker CPU at idle |",
            "| --- | ---: | --- | ---: | ---: | ---: |",
            *rows,
            "",
            "Where the wait goes (medians, seconds): created to claimed (the start task's hop), claimed to "
            "the last result row (the chunks), last result to final (finalize); and the slowest single "
            "search of all the runs (ms).",
            "",
            "| stack | queued | chunks | finalize | slowest search ms |",
            "| --- | ---: | ---: | ---: | ---: |",
            *phases,
            "",
            "Start to the verdict on the run page (medians, seconds): the run page after Start, its progress "
            "fragment polled as it says (`hx-trigger`), the whole page again once the run is final; the "
            "server's side of each request through Django's test client, without the browser's own time. "
            "Young runs' pages poll faster now; the page polling once a second, as before, measured in the "
            "same run for comparison.",
            "",
            "| stack | page polls | Start to verdict on the page s | runs (s) |",
            "| --- | --- | ---: | --- |",
            *pages,
        ]
    )


if __name__ == "__main__":
    if "--inner" in sys.argv:
        inner(Path(sys.argv[sys.argv.index("--inner") + 1]))
    else:
        main()
