"""Experiments on real Celery worker processes, Redis and PostgreSQL, against a loopback stub engine
(docs/experiments.md, "In the app"): an experiment whose worker is SIGKILLed in the middle of its tuning
phase is finished by a second worker (with beat: the sweeper sends the dead worker's chunks again when
their leases run out), with exactly one answer per configuration x query; cancel stopping the chunks."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from evaluation.experiments.services.experiments import experiment_cancel, experiment_create
from evaluation.models import Experiment, ExperimentChunk, ExperimentResult
from labeling.models import GoldenSet
from tests.support.runs import golden_file, make_target, make_version
from tests.support.stub_server import StubServer, hits_reply
from tests.support.workers import StartWorker, start_worker, swept, wait_for  # noqa: F401  (fixture)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not settings.CELERY_BROKER_URL.startswith("redis://"),
        reason="needs Redis as the broker: set REDIS_URL (CI and `make test` do)",
    ),
]

Status = Experiment.Status


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def _final(experiment: Experiment) -> bool:
    experiment.refresh_from_db()
    return experiment.status in Experiment.FINAL


def test_a_killed_worker_loses_nothing_and_a_second_worker_finishes_the_experiment(
    start_worker: StartWorker,  # noqa: F811  (the fixture imported above)
    stub: StubServer,
    golden_set: GoldenSet,
    rita: User,
) -> None:
    stub.default = hits_reply(["d1", "d2", "d3"], delay=0.25)
    version = make_version(golden_set, golden_file(40))
    # 4 configurations and the baseline on 28 tuning queries at 2 in flight: chunks of 9 searches, about
    # a second each, 20 chunk tasks; then the baseline and the top 3 on the 12 held-out queries.
    target = make_target(f"{stub.url}/search", golden_set, concurrency=2)
    first = start_worker("w1")

    experiment = experiment_create(
        golden_version=version,
        target=target,
        grid={"params": {"w": [1, 2], "mode": ["a", "b"]}},
        created_by=rita,
    )
    wait_for(lambda: ExperimentResult.objects.filter(experiment=experiment).count() >= 5, "the first answers")
    first.kill()
    killed_at = time.monotonic()
    experiment.refresh_from_db()
    assert experiment.status == Status.RUNNING and experiment.phase == Experiment.Phase.TUNING
    at_kill = ExperimentResult.objects.filter(experiment=experiment).count()
    assert at_kill < experiment.total, "the first worker finished before it could be killed"

    start_worker("w2", beat=True)
    # The sweeper sends the lost chunks once their leases run out (beat's every 15 s; here every second,
    # tests/support/workers.py's `swept`).
    wait_for(swept(lambda: _final(experiment)), "the second worker to finish the experiment", 90)
    print(f"\nexperiment {experiment.pk} finished {time.monotonic() - killed_at:.1f}s after the kill")

    assert experiment.status == Status.SUCCEEDED, experiment.error_message
    assert experiment.total == 5 * 28 + 4 * 12
    pairs = Counter(ExperimentResult.objects.filter(experiment=experiment).values_list("slot", "query_id"))
    assert len(pairs) == experiment.total and set(pairs.values()) == {1}
    tuning, holdout = experiment.split["tuning"], experiment.split["holdout"]
    assert {(s, q) for s in range(5) for q in tuning} <= set(pairs)
    confirmed = [0, *(i + 1 for i in experiment.ranking[:3])]
    assert {(s, q) for s in confirmed for q in holdout} <= set(pairs)
    chunks = list(ExperimentChunk.objects.filter(experiment=experiment))
    assert all(chunk.finished_at is not None for chunk in chunks)
    lost = [chunk for chunk in chunks if chunk.losses]
    assert lost and all(chunk.worker.startswith("w2@") for chunk in lost)
    assert experiment.result is not None and experiment.result["best"]["params"] in [
        c["params"] for c in experiment.result["configs"]
    ]
    # The stub answers every configuration alike: no winner, and every configuration flagged.
    assert experiment.result["winner"] is None
    assert [e["configs"] for e in experiment.result["echoes"]] == [[1, 2, 3, 4]]


def test_cancel_stops_the_experiments_chunks_on_a_worker(
    start_worker: StartWorker,  # noqa: F811  (the fixture imported above)
    stub: StubServer,
    golden_set: GoldenSet,
    rita: User,
) -> None:
    stub.default = hits_reply(["d1", "d2", "d3"], delay=0.3)
    version = make_version(golden_set, golden_file(40))
    target = make_target(f"{stub.url}/search", golden_set, concurrency=2)
    start_worker("w1")

    experiment = experiment_create(
        golden_version=version, target=target, grid={"configs": [{"w": 1}, {"w": 2}]}, created_by=rita
    )
    wait_for(lambda: ExperimentResult.objects.filter(experiment=experiment).count() >= 2, "the first answers")
    assert experiment_cancel(experiment=experiment, by=rita)

    # Every chunk, running or queued, sees the cancel and stops: the engine stops being called.
    def settled() -> bool:
        before = len(stub.requests)
        time.sleep(1.0)
        return len(stub.requests) == before

    wait_for(settled, "the chunks to stop calling the engine")
    experiment.refresh_from_db()
    assert experiment.status == Status.CANCELLED and experiment.result is None
    assert len(stub.requests) < experiment.total
    assert experiment.phase == Experiment.Phase.TUNING  # nothing advanced it
