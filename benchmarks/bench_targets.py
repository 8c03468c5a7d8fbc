"""Runs in about a second: the targets table, from the figures the sections it reads measured in this
`python -m benchmarks` run (the demo run, the judge job, the 2,000-query run and finalize at 100,000
queries). `make bench` runs it last (sections run in name order), so it reads what the others saved; run
alone (`python -m benchmarks targets`) it measures the sections it lacks first, each writing its own section
as well. Every figure here is also in its section, with that section's load average and method.
"""

from __future__ import annotations

import importlib
import statistics
from typing import Any

READS = ("demo_run", "judge_job", "run_2000", "finalize")
SQLITE, POSTGRES = "sqlite+filesystem", "postgresql+redis"
SHOWN = {SQLITE: "`make run`'s stack", POSTGRES: "PostgreSQL + Redis"}

# What the targets were set against (the figures measured when they were set) and the targets themselves.
BEFORE = {
    "demo_page": "6.6 s",
    "demo_page_pg": "1.40-1.56 s",
    "run_2000": "1.29x",
    "finalize": "5.9 s",
    "judge": "8 s",
}
TARGET_DEMO_S, TARGET_DEMO_PG_S, TARGET_2000, TARGET_FINALIZE_S, TARGET_JUDGE = 1.5, 1.0, 1.15, 3.0, 2.0


def main() -> None:
    from benchmarks._report import figures_of, write_section

    figures = {}
    for name in READS:
        if figures_of(name) is None:
            print(f"== bench_{name} (for the targets)", flush=True)
            importlib.import_module(f"benchmarks.bench_{name}").main()
        found = figures_of(name)
        if found is None:
            raise SystemExit(f"bench_targets: bench_{name} saved no figures")
        figures[name] = found
    markdown = render(figures)
    print(markdown)
    write_section("targets", markdown)


def _met(value: float, target: float) -> str:
    return "yes" if value <= target else "no"


def _load(values: list[list[float]] | tuple[Any, ...]) -> str:
    """The 1-minute load average before and after, from a section's (before, after) triples."""
    return f"{values[0][0]:.1f}-{values[1][0]:.1f}"


def render(figures: dict[str, Any]) -> str:
    demo, judge, runs, final = (figures[name] for name in READS)
    median = statistics.median

    def page(stack: str) -> tuple[float, float]:
        """(Start to the verdict on the page, Start to the verdict written) of the demo run on `stack`."""
        return median(demo[stack]["page"]["now"]), median(r["wall"] for r in demo[stack]["runs"])

    def judged(stack: str) -> tuple[float, float]:
        """(the job's Start to final, the stand-in's own time) on `stack`."""
        return median(r["wall"] for r in judge[stack]["jobs"]), median(judge[stack]["own"])

    (demo_page, demo_wall), (pg_page, pg_wall) = page(SQLITE), page(POSTGRES)
    ratio_2000 = median(r["wall"] for r in runs["celery"]) / median(runs["assay"])
    alone, against = median(final["alone"]), median(final["against"])
    (job, own), (pg_job, pg_own) = judged(SQLITE), judged(POSTGRES)
    pairs = int(judge[SQLITE]["jobs"][0]["total"])
    finalize_met = {
        (True, True): "yes",
        (True, False): "without a baseline; not against one",
        (False, False): "no",
        (False, True): "no",
    }[(alone <= TARGET_FINALIZE_S, against <= TARGET_FINALIZE_S)]
    judge_met = {
        (True, True): "yes",
        (False, True): "PostgreSQL yes; `make run`'s stack no",
        (True, False): "`make run`'s stack yes; PostgreSQL no",
        (False, False): "no",
    }[(job / own <= TARGET_JUDGE, pg_job / pg_own <= TARGET_JUDGE)]
    rows = [
        (
            "Start -> verdict on the page, 86-query demo, `make run`'s stack",
            BEFORE["demo_page"],
            f"{demo_page:.2f} s (verdict written {demo_wall:.2f} s)",
            f"<= {TARGET_DEMO_S} s",
            _met(demo_page, TARGET_DEMO_S),
        ),
        (
            "the same on PostgreSQL + Redis, worker `-c 2`",
            BEFORE["demo_page_pg"],
            f"{pg_page:.2f} s (verdict written {pg_wall:.2f} s)",
            f"<= {TARGET_DEMO_PG_S} s",
            _met(pg_page, TARGET_DEMO_PG_S),
        ),
        (
            "2,000-query run, PostgreSQL + Redis, vs `assay run` of the same queries",
            BEFORE["run_2000"],
            f"{ratio_2000:.2f}x",
            f"<= {TARGET_2000}x",
            _met(ratio_2000, TARGET_2000),
        ),
        (
            "finalize at 100,000 queries",
            BEFORE["finalize"],
            f"{alone:.2f} s without a baseline, {against:.2f} s against one",
            f"<= {TARGET_FINALIZE_S:g} s",
            finalize_met,
        ),
        (
            f"judge job of {pairs} pairs (the demo's qualification pairs) against the demo stand-in",
            BEFORE["judge"],
            f"`make run`'s stack {job / own:.2f}x ({job:.2f} s; the stand-in's own {own:.2f} s), "
            f"PostgreSQL + Redis {pg_job / pg_own:.2f}x ({pg_job:.2f} s; {pg_own:.2f} s)",
            f"<= {TARGET_JUDGE:g}x the stand-in's own time",
            judge_met,
        ),
    ]

    def demo_parts(stack: str) -> str:
        runs_of = demo[stack]["runs"]
        part = {key: median(r[key] for r in runs_of) for key in ("queued", "search", "finalize")}
        on_page, written = page(stack)
        load = _load([demo[stack]["load_before"], demo[stack]["load_after"]])
        return (
            f"{SHOWN[stack]} (load {load}): the start task's hop {part['queued']:.2f}, searching "
            f"{part['search']:.2f}, finalize {part['finalize']:.2f} (verdict written {written:.2f}), then "
            f"the page's poll and its report rendered again: on the page {on_page:.2f}"
        )

    def judge_parts(stack: str) -> str:
        jobs = judge[stack]["jobs"]
        queued, judging = median(r["queued"] for r in jobs), median(r["judging"] for r in jobs)
        chunks = median(r["chunks_ms"] for r in jobs) / 1000
        wall, own_time = judged(stack)
        load = _load([judge[stack]["load_before"], judge[stack]["load_after"]])
        return (
            f"{SHOWN[stack]} (load {load}): created to claimed {queued:.2f}, judging in its one pass "
            f"{chunks:.2f} against the stand-in's own {own_time:.2f} (the same calls in one process without "
            f"a database), counting and finishing {judging - chunks:.2f}; {wall:.2f} in all"
        )

    steps = "; ".join(f"{name} {seconds:.2f}" for name, seconds in final["steps"].items())
    lines = [
        "## Runs in about a second: the targets",
        "",
        "From the sections of this run of `make bench` (each gives its method and its load average): the "
        'demo run, the judge job, the 2,000-query run and finalize at 100,000 queries. Medians; "before" is '
        "what was measured when the targets were set.",
        "",
        "| work | before | now | target | met |",
        "| --- | ---: | ---: | ---: | --- |",
        *(f"| {' | '.join(row)} |" for row in rows),
        "",
        "Where the time goes, part by part (seconds, medians):",
        "",
        f"- **The demo run**, {demo_parts(SQLITE)}; {demo_parts(POSTGRES)}.",
        f"- **The judge job**, {judge_parts(SQLITE)}; {judge_parts(POSTGRES)}.",
        "- **Finalize at 100,000 queries**, its steps timed one by one on the run gated against the "
        f"baseline (load {_load(final['load'])}): {steps}.",
        f"- **2,000 queries**: {ratio_2000:.2f}x the median `assay run` (load {_load(runs['load'])}).",
    ]
    return "\n".join(lines)
