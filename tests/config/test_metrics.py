"""/metrics (config/metrics.py, docs/deployment.md "Metrics"): a 404 unless enabled; enabled, a 403 without
the bearer token or from outside the allow-list, whichever are set, and no login asked; settings that
would make it public refused at start. What it shows of the database, parsed with prometheus-client's own
parser, against rows made here; every family it shows is listed in docs/deployment.md and the list names
nothing it does not show. The broker's part: tests/config/test_broker_state.py; on real workers:
tests/integration/test_metrics_workers.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from config.metrics_collector import METRICS
from evaluation.experiments.models import Experiment, ExperimentChunk
from evaluation.models import ChunkLease, EvaluationRun, SearchTarget
from golden_io.models import GoldenVersion
from labeling.models import Assignment, JudgeJob, JudgmentEvent
from tests import factories
from tests.support.processes import REPO

pytestmark = pytest.mark.django_db

TOKEN = "a-scraper-token-of-some-length"
Run = EvaluationRun.Status


@pytest.fixture
def enabled(settings: Any) -> Any:
    settings.ASSAY_METRICS_ENABLED = True
    settings.ASSAY_METRICS_TOKEN = TOKEN
    settings.ASSAY_METRICS_ALLOW_IPS = ()
    settings.PROMETHEUS_MULTIPROC_DIR = ""
    return settings


def scrape(**headers: str) -> Any:
    return Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}", **headers})


Found = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Found:
    """Every sample of an exposition by (name, labels)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(found: Found, name: str, **labels: str) -> float:
    return found[(name, frozenset(labels.items()))]


def progress(found: Found, name: str, owner: str, pk: int) -> tuple[float, ...]:
    """An active object's total, done and errors."""
    return tuple(value(found, name, **{owner: str(pk)}, state=s) for s in ("total", "done", "errors"))


# --- who may read it --------------------------------------------------------------------------------


def test_it_is_a_404_unless_enabled() -> None:
    response = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 404


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Bearer not-the-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}"],
)
def test_enabled_it_refuses_a_request_without_the_token(enabled: Any, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    response = Client().get("/metrics", headers=headers)
    assert response.status_code == 403
    assert "Authorization: Bearer <ASSAY_METRICS_TOKEN>" in response.content.decode()
    assert TOKEN not in response.content.decode()


def test_with_the_token_a_stranger_reads_it_without_logging_in(enabled: Any) -> None:
    response = scrape()
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "assay_runs" in {family.name for family in text_string_to_metric_families(response.text)}


def test_it_answers_openmetrics_when_asked(enabled: Any) -> None:
    response = scrape(Accept="application/openmetrics-text; version=1.0.0")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.text.endswith("# EOF\n")


def test_it_answers_get_only(enabled: Any) -> None:
    response = Client().post("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 405


def _allowing(settings: Any, networks: str, token: str = "") -> None:
    import ipaddress

    settings.ASSAY_METRICS_TOKEN = token
    settings.ASSAY_METRICS_ALLOW_IPS = tuple(ipaddress.ip_network(n) for n in networks.split(","))


@pytest.mark.parametrize(
    ("address", "status"),
    [("10.1.2.3", 200), ("10.255.0.1", 200), ("192.168.1.2", 200), ("11.0.0.1", 403), ("::1", 403)],
)
def test_an_allow_list_alone_lets_its_addresses_in(enabled: Any, address: str, status: int) -> None:
    _allowing(enabled, "10.0.0.0/8,192.168.1.2")
    response = Client(REMOTE_ADDR=address).get("/metrics")
    assert response.status_code == status
    if status == 403:
        assert "ASSAY_METRICS_ALLOW_IPS" in response.text


def test_behind_a_proxy_the_address_it_appends_counts(enabled: Any) -> None:
    _allowing(enabled, "10.0.0.0/8")
    enabled.ASSAY_CLIENT_IP_HEADER = "X-Forwarded-For"
    proxy = Client(REMOTE_ADDR="172.16.0.1")
    assert proxy.get("/metrics", headers={"X-Forwarded-For": "10.0.0.9"}).status_code == 200
    # What a client wrote into the header itself comes first; the proxy's entry is the last.
    assert proxy.get("/metrics", headers={"X-Forwarded-For": "10.0.0.9, 8.8.8.8"}).status_code == 403
    assert proxy.get("/metrics", headers={"X-Forwarded-For": "not an address"}).status_code == 403


def test_with_both_a_request_needs_both(enabled: Any) -> None:
    _allowing(enabled, "127.0.0.1", token=TOKEN)
    inside, outside = Client(REMOTE_ADDR="127.0.0.1"), Client(REMOTE_ADDR="10.0.0.1")
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert inside.get("/metrics", headers=bearer).status_code == 200
    assert inside.get("/metrics").status_code == 403
    assert outside.get("/metrics", headers=bearer).status_code == 403


def test_a_signed_in_user_without_the_token_is_refused_too(enabled: Any, alice: User) -> None:
    client = Client()
    client.force_login(alice)
    assert client.get("/metrics").status_code == 403


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"ASSAY_METRICS_ENABLED": "true"}, "neither ASSAY_METRICS_TOKEN nor ASSAY_METRICS_ALLOW_IPS"),
        ({"ASSAY_METRICS_ENABLED": "true", "ASSAY_METRICS_TOKEN": "short"}, "at least 16 characters"),
        ({"ASSAY_METRICS_ALLOW_IPS": "10.0.0.0/8,intranet"}, "'intranet' is neither an IP address"),
        ({"ASSAY_WORKER_HEARTBEAT_S": "0"}, "ASSAY_WORKER_HEARTBEAT_S must be more than 0"),
    ],
)
def test_settings_that_would_open_it_or_cannot_be_read_stop_the_start(
    env: dict[str, str], said: str, tmp_path: Any
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("ASSAY_METRICS")},
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "ASSAY_VAR_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert said in done.stderr


# --- what it shows of the database -------------------------------------------------------------------


def _run(version: GoldenVersion, target: SearchTarget, status: str, **times: Any) -> EvaluationRun:
    """A run row in `status` whose timestamps are `times` (seconds ago, or None)."""
    now = timezone.now()
    run = EvaluationRun.objects.create(golden_version=version, target=target, status=status)
    stamps = {name: now - timedelta(seconds=ago) for name, ago in times.items()}
    EvaluationRun.objects.filter(pk=run.pk).update(**stamps)
    run.refresh_from_db()
    return run


def test_runs_by_status_their_phases_and_the_oldest_waiting(
    enabled: Any, version: GoldenVersion, target: SearchTarget
) -> None:
    # Two finished runs: 3 s queued, 40 s running, 2 s finalizing; and 1, 500, 4.
    _run(version, target, Run.SUCCEEDED, created=100, started_at=97, finalizing_at=57, finished_at=55)
    _run(version, target, Run.FAILED, created=1000, started_at=999, finalizing_at=499, finished_at=495)
    _run(version, target, Run.CANCELLED, created=50, finished_at=49)  # no phase of a cancelled run counts
    queued = _run(version, target, Run.QUEUED, created=30)
    _run(version, target, Run.QUEUED, created=5)
    running = _run(version, target, Run.RUNNING, created=20, started_at=12)
    EvaluationRun.objects.filter(pk=running.pk).update(total=30, done=8, errors=1)

    found = samples(scrape().text)

    runs = {status: value(found, "assay_runs", status=status) for status in Run.values}
    assert runs == {"queued": 2, "running": 1, "finalizing": 0, "succeeded": 1, "failed": 1, "cancelled": 1}
    phase = "assay_run_phase_seconds"
    assert value(found, f"{phase}_count", phase="total") == 2
    assert value(found, f"{phase}_sum", phase="total") == pytest.approx(45 + 505, abs=0.01)
    assert value(found, f"{phase}_sum", phase="running") == pytest.approx(540, abs=0.01)
    assert value(found, f"{phase}_sum", phase="queued") == pytest.approx(4, abs=0.01)
    assert value(found, f"{phase}_sum", phase="finalizing") == pytest.approx(6, abs=0.01)
    assert value(found, f"{phase}_bucket", phase="running", le="30.0") == 0
    assert value(found, f"{phase}_bucket", phase="running", le="60.0") == 1
    assert value(found, f"{phase}_bucket", phase="running", le="600.0") == 2
    assert value(found, f"{phase}_bucket", phase="total", le="+Inf") == 2
    assert value(found, "assay_run_oldest_seconds", status="queued") == pytest.approx(30, abs=5)
    assert value(found, "assay_run_oldest_seconds", status="running") == pytest.approx(12, abs=5)
    assert value(found, "assay_run_oldest_seconds", status="finalizing") == 0
    assert progress(found, "assay_run_queries", "run", running.pk) == (30, 8, 1)
    assert value(found, "assay_run_queries", run=str(queued.pk), state="total") == 0
    shown = {dict(labels).get("run") for name, labels in found if name == "assay_run_queries"}
    assert len(shown) == 3  # the active runs only


def test_chunks_waiting_leased_and_expired_and_their_losses(
    enabled: Any, version: GoldenVersion, target: SearchTarget
) -> None:
    run = _run(version, target, Run.RUNNING, created=10, started_at=9)
    now = timezone.now()
    ChunkLease.objects.create(run=run, index=0)  # waiting
    ChunkLease.objects.create(run=run, index=1, expires_at=now + timedelta(seconds=15), losses=1)
    ChunkLease.objects.create(run=run, index=2, expires_at=now - timedelta(seconds=3), losses=2)
    ChunkLease.objects.create(run=run, index=3, finished_at=now, losses=1)  # finished: counted nowhere
    experiment = Experiment.objects.create(
        golden_version=version, target=target, grid={"params": {}}, status=Experiment.Status.RUNNING
    )
    Experiment.objects.filter(pk=experiment.pk).update(total=40, done=10, errors=2)
    ExperimentChunk.objects.create(experiment=experiment, index=0, phase="tuning")
    ExperimentChunk.objects.create(
        experiment=experiment, index=1, phase="tuning", expires_at=now - timedelta(seconds=1), losses=4
    )

    found = samples(scrape().text)

    chunks = {
        (owner, state): value(found, "assay_chunks", owner=owner, state=state)
        for owner in ("run", "experiment")
        for state in ("waiting", "leased", "expired")
    }
    assert chunks == {
        ("run", "waiting"): 1,
        ("run", "leased"): 1,
        ("run", "expired"): 1,
        ("experiment", "waiting"): 1,
        ("experiment", "leased"): 0,
        ("experiment", "expired"): 1,
    }
    assert value(found, "assay_chunk_losses_total", owner="run") == 4
    assert value(found, "assay_chunk_losses_total", owner="experiment") == 4
    assert value(found, "assay_experiments", status="running") == 1
    assert value(found, "assay_experiments", status="succeeded") == 0
    assert progress(found, "assay_experiment_searches", "experiment", experiment.pk) == (40, 10, 2)


def test_grade_saves_of_the_last_minute(enabled: Any, assignment: Assignment) -> None:
    documents = [factories.DocumentFactory.create(golden_set=assignment.query.golden_set) for _ in range(5)]
    for age, document in zip([1, 20, 59, 61, 600], documents, strict=True):
        event = JudgmentEvent.objects.create(
            assignment=assignment, document=document, rater=assignment.rater, new_grade=2
        )
        JudgmentEvent.objects.filter(pk=event.pk).update(at=timezone.now() - timedelta(seconds=age))

    assert value(samples(scrape().text), "assay_grade_saves_per_minute") == 3


def test_studies_with_open_tasks_and_how_far_their_raters_are(
    enabled: Any, golden_set: Any, rita: User, alice: User, bob: User
) -> None:
    from evaluation.models import StudyTask
    from evaluation.studies.services import StudySpec, study_create
    from tests.support.studies import two_runs

    run_a, run_b = two_runs(golden_set, 4)
    spec = StudySpec(run_a=run_a, run_b=run_b, raters=[alice, bob], seed=7, answers_per_query=2)
    study = study_create(spec=spec, by=rita)
    tasks = StudyTask.objects.filter(study=study).order_by("pk")
    assert tasks.count() == 8
    StudyTask.objects.filter(pk__in=[t.pk for t in tasks[:3]]).update(
        answered_at=timezone.now(), preference=1
    )

    found = samples(scrape().text)
    assert value(found, "assay_study_tasks", study=str(study.pk), state="answered") == 3
    assert value(found, "assay_study_tasks", study=str(study.pk), state="open") == 5

    tasks.update(answered_at=timezone.now(), preference=1)  # every task answered: no longer shown
    assert not any(name == "assay_study_tasks" for name, _ in samples(scrape().text))


def test_judge_jobs_by_status_and_the_running_ones_pairs(enabled: Any, golden_set: Any) -> None:
    from labeling.services import judges
    from tests.support.judge_stub import judge_settings

    judge, _ = judges.judge_save(
        golden_set=golden_set, settings=judge_settings("http://127.0.0.1:9"), by=None
    )
    running = JudgeJob.objects.create(judge=judge, status=JudgeJob.Status.RUNNING, total=24, done=6, errors=1)
    JudgeJob.objects.create(judge=judge, status=JudgeJob.Status.SUCCEEDED, total=4, done=4)

    found = samples(scrape().text)

    assert value(found, "assay_judge_jobs", status="running") == 1
    assert value(found, "assay_judge_jobs", status="succeeded") == 1
    assert value(found, "assay_judge_jobs", status="queued") == 0
    assert progress(found, "assay_judge_job_pairs", "job", running.pk) == (24, 6, 1)
    # Counted in this process (no PROMETHEUS_MULTIPROC_DIR here): present from the start, at 0 here.
    assert value(found, "assay_judge_calls_total", outcome="failed") >= 0


def test_a_broker_that_cannot_be_read_leaves_the_rest_answering(enabled: Any) -> None:
    enabled.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = scrape()
    assert response.status_code == 200
    found = samples(response.text)
    assert value(found, "assay_scrape_ok", part="broker") == 0
    assert value(found, "assay_scrape_ok", part="database") == 1
    assert not any(name == "assay_celery_queue_messages" for name, _ in found)


# --- the list in docs/deployment.md --------------------------------------------------------------------


def _documented() -> set[str]:
    section = (REPO / "docs" / "deployment.md").read_text().split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(assay_\w+)`", section, re.MULTILINE))


def test_every_family_shown_is_documented_and_every_documented_one_is_shown(enabled: Any) -> None:
    # A counter is documented as it is queried: with its `_total`.
    shown = {
        family.name + ("_total" if family.type == "counter" else "")
        for family in text_string_to_metric_families(scrape().text)
        if family.name.startswith("assay_")
    }
    documented = _documented()
    if not enabled.CELERY_BROKER_URL.startswith("redis://"):  # the filesystem broker has no acknowledgements
        documented.discard("assay_celery_unacked_messages")
    assert shown == documented
    assert {name.removesuffix("_total") for name in _documented()} >= set(METRICS)
