"""A side-by-side study on two targets searched now, with its two runs on a real Celery worker process,
Redis and PostgreSQL, against two loopback stub engines: the study is made where the second run finishes
(finalize's hook, on the worker), with nothing read by a page in between."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from evaluation.models import EvaluationRun, PendingStudy, StudyTask
from evaluation.studies.services import study_on_targets
from labeling.models import GoldenSet
from tests.support.runs import make_target, make_version
from tests.support.stub_server import StubServer, hits_reply
from tests.support.studies import documents
from tests.support.workers import StartWorker, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not settings.CELERY_BROKER_URL.startswith("redis://"),
        reason="needs Redis as the broker: set REDIS_URL (CI and `make test` do)",
    ),
]


def _resolved(pending: PendingStudy) -> bool:
    pending.refresh_from_db()  # the row only: nothing here resolves it
    return pending.status != PendingStudy.Status.WAITING


def test_the_study_is_made_on_the_worker_when_its_second_run_finishes(
    start_worker: StartWorker, golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    documents(golden_set)
    make_version(golden_set)
    with StubServer() as forward, StubServer(default=hits_reply(["d3", "d2", "d1"])) as backward:
        target_a = make_target(f"{forward.url}/search", golden_set, name="forward")
        target_b = make_target(f"{backward.url}/search", golden_set, name="backward")
        start_worker("w1")

        pending = study_on_targets(
            golden_set=golden_set,
            target_a=target_a,
            target_b=target_b,
            raters=[alice, bob],
            values={"seed": 4, "answers_per_query": 2},
            by=rita,
        )
        wait_for(lambda: _resolved(pending), "the pending study to be resolved")

    assert pending.status == PendingStudy.Status.CREATED, pending.reason
    assert {pending.run_a.status, pending.run_b.status} == {EvaluationRun.Status.SUCCEEDED}
    study = pending.study
    assert study is not None and study.seed == 4 and study.run_b == pending.run_b
    assert StudyTask.objects.filter(study=study).count() == 12
