"""/metrics scraped over HTTP (the live server) while real Celery workers, Redis and PostgreSQL do the work,
parsed with prometheus-client's own parser (docs/deployment.md, "Metrics").

A run created while no worker is up waits in the Celery queue and shows there; a worker starts (its
heartbeat shows it up), takes it, and the scrape after shows the queue empty and the run's phases: the
total is the run's own created-to-finished time. A judge job on the worker counts its calls by outcome in
the worker's process, and the web's scrape adds them up from PROMETHEUS_MULTIPROC_DIR (prometheus-client's
multiprocess mode). A worker stopped is no longer up.
"""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from prometheus_client.parser import text_string_to_metric_families

from evaluation.models import EvaluationRun
from evaluation.runs.services import run_create
from labeling.models import GoldenSet, JudgeJob
from labeling.services import judges
from tests import factories
from tests.support.judge_stub import chat_reply, graded, judge_settings, judge_stub
from tests.support.runs import golden_file, make_target, make_version, run_finished
from tests.support.stub_server import Reply, StubServer
from tests.support.workers import StartWorker, needs_redis_broker, wait_for

pytestmark = [pytest.mark.integration, needs_redis_broker()]

TOKEN = "scraper-token-for-the-worker-test"
Found = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def multiproc_dir(tmp_path: Path) -> Path:
    return tmp_path / "prometheus"


@pytest.fixture
def scrape(live_server: Any, settings: Any, multiproc_dir: Path) -> Iterator[Any]:
    settings.ASSAY_METRICS_ENABLED = True
    settings.ASSAY_METRICS_TOKEN = TOKEN
    settings.ASSAY_METRICS_ALLOW_IPS = ()
    settings.PROMETHEUS_MULTIPROC_DIR = str(multiproc_dir)
    settings.ASSAY_WORKER_HEARTBEAT_S = 1.0
    multiproc_dir.mkdir()

    def read() -> Found:
        request = urllib.request.Request(
            f"{live_server.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
            text = response.read().decode()
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    yield read


def value(found: Found, name: str, **labels: str) -> float:
    return found[(name, frozenset(labels.items()))]


def workers_seen(found: Found) -> set[str]:
    return {dict(labels)["worker"] for name, labels in found if name == "assay_worker_heartbeat_age_seconds"}


def test_a_run_on_a_worker_shows_in_the_queue_then_in_its_phases(
    start_worker: StartWorker, scrape: Any, multiproc_dir: Path, golden_set: GoldenSet, rita: User
) -> None:
    with StubServer() as stub:
        version = make_version(golden_set, golden_file(20))
        target = make_target(f"{stub.url}/search", golden_set, concurrency=2)
        run = run_create(golden_version=version, target=target, triggered_by=rita)

        waiting = scrape()
        assert value(waiting, "assay_scrape_ok", part="broker") == 1
        assert value(waiting, "assay_celery_queue_messages", queue="celery") == 1  # the run's start
        assert value(waiting, "assay_runs", status="queued") == 1
        assert value(waiting, "assay_run_oldest_seconds", status="queued") > 0
        assert value(waiting, "assay_workers_up") == 0

        env = {"PROMETHEUS_MULTIPROC_DIR": str(multiproc_dir), "ASSAY_WORKER_HEARTBEAT_S": "1"}
        start_worker("w1", **env)
        wait_for(lambda: run_finished(run), "the run to finish")
    assert run.status == EvaluationRun.Status.SUCCEEDED, run.error_message
    assert run.started_at and run.finalizing_at and run.finished_at

    found = scrape()
    assert value(found, "assay_celery_queue_messages", queue="celery") == 0
    assert value(found, "assay_runs", status="succeeded") == 1
    assert value(found, "assay_runs", status="queued") == 0
    assert value(found, "assay_run_oldest_seconds", status="queued") == 0
    phase = "assay_run_phase_seconds"
    took = (run.finished_at - run.created).total_seconds()
    assert value(found, f"{phase}_count", phase="total") == 1
    assert value(found, f"{phase}_sum", phase="total") == pytest.approx(took, abs=1e-3)
    queued = (run.started_at - run.created).total_seconds()
    assert value(found, f"{phase}_sum", phase="queued") == pytest.approx(queued, abs=1e-3)
    assert value(found, f"{phase}_bucket", phase="total", le="+Inf") == 1
    assert value(found, "assay_chunks", owner="run", state="expired") == 0
    assert value(found, "assay_chunks", owner="run", state="leased") == 0
    # The worker's heartbeat: its name as Celery gives it (`-n w1@%h`), a second old at most a beat ago.
    assert workers_seen(found) == {f"w1@{socket.gethostname()}"}
    assert value(found, "assay_workers_up") == 1
    assert value(found, "assay_worker_heartbeat_age_seconds", worker=f"w1@{socket.gethostname()}") < 3


def _job_finished(job: JudgeJob) -> bool:
    job.refresh_from_db()
    return job.status in JudgeJob.FINAL


def test_judge_calls_made_in_the_worker_are_counted_in_the_webs_scrape(
    start_worker: StartWorker, scrape: Any, multiproc_dir: Path, golden_set: GoldenSet
) -> None:
    queries = [factories.pooled_query(golden_set, 3, text=f"question {i}") for i in range(4)]
    with judge_stub(graded(2)) as stub:
        stub.on("question 0", Reply(status=400))  # refused: no answer
        stub.on("question 1", chat_reply("I would rather not say"))  # an answer, but no grade
        judge, _ = judges.judge_save(golden_set=golden_set, settings=judge_settings(stub.url), by=None)
        worker = start_worker("w1", PROMETHEUS_MULTIPROC_DIR=str(multiproc_dir))
        job = judges.judge_job_create(judge=judge, queries=queries, by=None, chunk_size=4)
        wait_for(lambda: _job_finished(job), "the judge job to finish")

    found = scrape()
    calls = {o: value(found, "assay_judge_calls_total", outcome=o) for o in ("graded", "unusable", "failed")}
    assert calls == {"graded": 6, "unusable": 3, "failed": 3}
    assert value(found, "assay_judge_call_seconds_count") == 12
    assert value(found, "assay_judge_call_seconds_sum") > 0
    assert value(found, "assay_judge_call_retries_total") == 0  # a 400 is not retried
    assert value(found, "assay_judge_jobs", status="succeeded") == 1
    # Written by the worker's processes, one file each, in the directory the web reads.
    assert list(multiproc_dir.glob("*.db"))

    # A worker stopped removes its heartbeat; the counts stay.
    worker.stop()
    after = scrape()
    assert workers_seen(after) == set() and value(after, "assay_workers_up") == 0
    assert value(after, "assay_judge_calls_total", outcome="graded") == 6
