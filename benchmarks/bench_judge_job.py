"""A judge qualification job against the demo stand-in (demo/judge_service.py) from Start to its final
status: the demo's qualification items (`demo_load`'s dual-labeled pairs) judged by the term-overlap
stand-in, on `make run`'s stack (SQLite, the filesystem broker) and on PostgreSQL + Redis, each with one
`celery worker -c 2`.

Each job is created as the Qualify page creates it (`qualification_job_create`) and its row polled every
20 ms until final; every answer is removed first, so each job asks the stand-in for every pair (no cache).
Its recorded timestamps split the wait: created to claimed (the start task's hop), claimed to finished
(the chunks, their hops and finishing). The stand-in's own time, side by side: the same calls sent by
the judge client in this process (`judge_all_sync`, the judge's concurrency), no broker and no database.
Then the job page as the browser gets there: its progress fragment polled as its `hx-trigger` says.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._stacks import demo_loaded, each_stack

RUNS = int(os.environ.get("ASSAY_BENCH_JUDGE_RUNS", "5"))
POLL_S = 0.02


def main() -> None:
    figures = each_stack("judge_job")
    markdown = render(figures)
    print(markdown)
    from benchmarks._report import save_figures, write_section

    save_figures("judge_job", figures)

    write_section("judge_job", markdown)


def _fresh(judge: Any) -> None:
    """No answer of the stand-in left in the cache: the next job asks it for every pair."""
    from labeling.models import JudgeAnswer

    JudgeAnswer.objects.filter(model=judge.model).delete()


def job_run(judge: Any, pairs: list[Any], user: Any) -> dict[str, float]:
    from labeling.models import JudgeJob
    from labeling.services.judge_qualification import qualification_job_create

    _fresh(judge)
    started = time.perf_counter()
    job = qualification_job_create(judge=judge, pairs=pairs, by=user)
    final = (JudgeJob.Status.SUCCEEDED, JudgeJob.Status.FAILED, JudgeJob.Status.CANCELLED)
    while JudgeJob.objects.filter(pk=job.pk).values_list("status", flat=True).get() not in final:
        time.sleep(POLL_S)
    wall = time.perf_counter() - started
    job.refresh_from_db()
    if job.status != JudgeJob.Status.SUCCEEDED or job.done != job.total or job.errors:
        raise RuntimeError(f"job {job.pk}: {job.status}, {job.done} of {job.total}, {job.errors} errors")
    assert job.started_at and job.finished_at
    return {
        "wall": wall,
        "queued": (job.started_at - job.created).total_seconds(),
        "judging": (job.finished_at - job.started_at).total_seconds(),
        "chunks_ms": float(job.elapsed_ms),
        "total": float(job.total),
    }


def page_run(client: Any, judge: Any, pairs: list[Any], user: Any) -> float:
    """Start to the final status on the job page: the page, then its progress fragment polled as its
    `hx-trigger` says until it stops asking (the job is final). Through Django's test client."""
    from labeling.services.judge_qualification import qualification_job_create

    _fresh(judge)
    started = time.perf_counter()
    job = qualification_job_create(judge=judge, pairs=pairs, by=user)
    base = f"/sets/{judge.golden_set.slug}/judges/{judge.pk}/jobs/{job.pk}/"
    html = client.get(base).content.decode()
    pattern = r'id="judge-job-progress"[^>]*hx-trigger="every (\d+)(m?s)"'
    while (every := re.search(pattern, html)) is not None:
        time.sleep(int(every[1]) / (1000 if every[2] == "ms" else 1))
        html = client.get(f"{base}progress/", HTTP_HX_REQUEST="true").content.decode()
    wall = time.perf_counter() - started
    if 'data-status="succeeded"' not in html:
        raise RuntimeError(f"job {job.pk}: the page shows no success")
    return wall


def stand_in_run(judge: Any, pairs: list[Any]) -> float:
    """The stand-in's own time: the job's calls sent by the judge client in this process."""
    from assay.judge.client import Call, judge_all_sync
    from assay.judge.prompt import messages, response_format
    from labeling.models import Document, Query
    from labeling.services import judges

    rubric = judges.rubric_of(judge)
    spec = judges._spec(judge, rubric)
    queries = Query.objects.in_bulk([q for q, _ in pairs])
    documents = Document.objects.in_bulk([d for _, d in pairs])
    schema = response_format(rubric) if judge.structured else None
    calls = [
        Call(
            i,
            messages(spec, judges.prompt_query(queries[q]), judges.prompt_document(documents[d])),
            schema,
            rubric.scale,
        )
        for i, (q, d) in enumerate(pairs)
    ]
    endpoint = judges.endpoint_of(judge, judge.golden_set)
    started = time.perf_counter()
    replies = judge_all_sync(calls, endpoint)
    wall = time.perf_counter() - started
    if any(r.answer is None or r.answer.grade is None for r in replies):
        raise RuntimeError("the stand-in left a pair without a grade")
    return wall


def inner(out: Path) -> None:
    var = demo_loaded()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from demo import judge_service
    from labeling.models import GoldenSet, Judge
    from labeling.selectors.judge_items import judge_items_get
    from tests.support.processes import serving
    from tests.support.workers import Worker

    golden_set = GoldenSet.objects.get(slug="help-center")
    pairs = list(judge_items_get(golden_set=golden_set).pks.values())
    user = get_user_model().objects.get(username="reviewer")
    with serving(["-m", "demo.judge_service", "--port", "0"]) as base:
        judge = Judge.objects.get(golden_set=golden_set, stand_in=True, model=judge_service.MODEL)
        Judge.objects.filter(pk=judge.pk).update(base_url=f"{base}/v1")
        judge.refresh_from_db()
        worker = Worker("judge", var / "worker.log", dict(os.environ))
        try:
            worker.wait_ready(120)
            job_run(judge, pairs, user)  # the warm-up
            load_before = os.getloadavg()
            jobs, own = [], []
            for repeat in range(RUNS):
                for kind in ("job", "own") if repeat % 2 == 0 else ("own", "job"):
                    if kind == "job":
                        jobs.append(job_run(judge, pairs, user))
                    else:
                        own.append(stand_in_run(judge, pairs))
            client = Client(HTTP_HOST="127.0.0.1")
            client.force_login(user)
            page = [page_run(client, judge, pairs, user) for _ in range(RUNS)]
            load_after = os.getloadavg()
        finally:
            worker.stop()
    figures = {"jobs": jobs, "own": own, "page": page, "load_before": load_before, "load_after": load_after}
    out.write_text(json.dumps(figures | {"concurrency": judge.concurrency}))


def render(figures: dict[str, dict[str, Any]]) -> str:
    def load(values: list[float]) -> str:
        return " / ".join(f"{v:.1f}" for v in values)

    rows, notes = [], []
    pairs, concurrency = 0, 0
    for stack, f in figures.items():
        walls = [r["wall"] for r in f["jobs"]]
        wall, own, page = statistics.median(walls), statistics.median(f["own"]), statistics.median(f["page"])
        queued = statistics.median(r["queued"] for r in f["jobs"])
        judging = statistics.median(r["judging"] for r in f["jobs"])
        chunks = statistics.median(r["chunks_ms"] for r in f["jobs"]) / 1000
        pairs, concurrency = int(f["jobs"][0]["total"]), f["concurrency"]
        rows.append(
            f"| {stack} | {wall:.2f} | {', '.join(f'{w:.2f}' for w in walls)} | {queued:.2f} | {judging:.2f} "
            f"| {chunks:.2f} | {page:.2f} | {own:.2f} | {wall / own:.2f}x | {page / own:.2f}x |"
        )
        notes.append(f"{stack}: {load(f['load_before'])} before, {load(f['load_after'])} after")
    return "\n".join(
        [
            "### A judge job: Start to final status",
            "",
            f"A qualification job of the demo's {pairs} qualification pairs judged by the term-overlap "
            f"stand-in (demo/judge_service.py, concurrency {concurrency}), one `celery worker -c 2`; each "
            "job created as the Qualify page creates it, its row polled every "
            f"{POLL_S * 1000:.0f} ms until final, with no answer in the cache. Medians of {RUNS} after a "
            "warm-up job. The stand-in's own time: the same calls sent by the judge client in one process "
            "(no broker, no database), alternately with the jobs. On the page: the job page, then its "
            "progress fragment polled as its `hx-trigger` says until final (Django's test client). Load "
            f"average (1, 5, 15 min) on {os.cpu_count()} CPUs: " + "; ".join(notes) + ".",
            "",
            "| stack | Start to final s | jobs (s) | queued | claimed to final | in chunks | on the page s "
            "| stand-in's own s | ratio | page ratio |",
            "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            "What the job adds to the stand-in's own time: created to claimed is the start task's one hop "
            "(on the filesystem broker, up to a poll of `ASSAY_BROKER_POLL_S`, 0.1 s); claimed to final is "
            "the judging itself (a job of at most 8 chunks is judged by the start task in one pass), its "
            "writes (the answers, labels and items of the replies arrived meanwhile, a few statements per "
            "batch), the job's counts and finishing, in the same task.",
        ]
    )


if __name__ == "__main__":
    if "--inner" in sys.argv:
        inner(Path(sys.argv[sys.argv.index("--inner") + 1]))
    else:
        main()
