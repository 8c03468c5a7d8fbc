"""A failing run told to people by a real `celery worker` process (Redis, PostgreSQL): one email, written
by Django's file backend where the test reads it (the worker's memory is out of reach), and one webhook
post to a loopback server that answers 500 and then 200, retried after its backoff on the worker. Sending
the notify task again through the broker, and the finalize task, sends nothing more.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from evaluation.models import EvaluationRun, Notification
from evaluation.runs.services import run_create
from labeling.models import GoldenSet
from tests import factories
from tests.support.runs import golden_file, make_target, make_version
from tests.support.stub_server import Reply, StubServer
from tests.support.workers import StartWorker, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not settings.CELERY_BROKER_URL.startswith("redis://"),
        reason="needs Redis as the broker: set REDIS_URL (CI and `make test` do)",
    ),
]

HOOK_VAR = "ASSAY_SECRET_TEST_WEBHOOK"


_wait = wait_for


@pytest.fixture
def search() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture
def hook() -> Iterator[StubServer]:
    with StubServer(key=lambda r: r.path, default=Reply(status=200, text="ok")) as server:
        yield server


def test_a_failing_run_on_a_worker_mails_once_and_posts_once_after_a_retry(
    start_worker: StartWorker,
    search: StubServer,
    hook: StubServer,
    golden_set: GoldenSet,
    rita: User,
    tmp_path: Path,
) -> None:
    from config.celery import app

    outbox = tmp_path / "mail"
    version = make_version(golden_set, golden_file(6))
    factories.grant_secrets(golden_set, HOOK_VAR)
    target = make_target(f"{search.url}/search", golden_set, webhook_env=HOOK_VAR)
    search.on("query 4", Reply(status=503, text="overloaded"))  # an errored query: the gate fails closed
    hook.on("/hook", Reply(status=500, text="upstream down"), Reply(status=200, text="ok"))
    worker = start_worker(
        "w1",
        EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend",
        EMAIL_FILE_PATH=str(outbox),
        ASSAY_SITE_URL="https://assay.example.org",
        ASSAY_NOTIFY_RETRY_DELAY="0.5",
        **{HOOK_VAR: f"{hook.url}/hook"},  # only the worker has the URL
    )

    run = run_create(golden_version=version, target=target, triggered_by=rita)

    def settled() -> bool:
        rows = Notification.objects.filter(run=run)
        return rows.count() == 2 and not rows.filter(status=Notification.Status.PENDING).exists()

    _wait(settled, "both deliveries to settle")
    run.refresh_from_db()
    assert run.verdict == EvaluationRun.Verdict.FAIL
    rows = {n.channel: n for n in Notification.objects.filter(run=run)}
    assert (rows["email"].status, rows["email"].attempts, rows["email"].recipients) == (
        "sent",
        1,
        "rita@example.org",
    )
    assert (rows["webhook"].status, rows["webhook"].attempts) == ("sent", 2)
    assert rows["webhook"].last_error == "webhook: HTTP 500 (text/html; charset=utf-8, 13 bytes)"
    posts = hook.requests_for("/hook")
    assert len(posts) == 2
    assert posts[1].json["run_id"] == run.pk and posts[1].json["verdict"] == "fail"
    assert posts[1].json["url"] == f"https://assay.example.org/runs/{run.pk}/"
    [written] = list(outbox.iterdir())
    message = written.read_text()
    assert f"Subject: [Assay] FAIL: {run.label} on help-center" in message
    assert "To: rita@example.org" in message
    assert f"The run: https://assay.example.org/runs/{run.pk}/" in message

    def consumed(task: str) -> int:
        log = worker.log.read_text(errors="replace").splitlines()
        return sum(1 for line in log if f"Task {task}[" in line and " succeeded " in line)

    # The notify task delivered again and another finalize, through the broker as any redelivery.
    before = {task: consumed(task) for task in ("evaluation.run_notify", "evaluation.run_finalize")}
    for task in before:
        app.send_task(task, args=[run.pk])
    for task, count in before.items():

        def again(task: str = task, count: int = count) -> bool:
            return consumed(task) > count

        _wait(again, f"the second {task} to be consumed")
    assert len(hook.requests) == 2
    assert len(list(outbox.iterdir())) == 1
    assert {(n.channel, n.status, n.attempts) for n in Notification.objects.filter(run=run)} == {
        ("email", "sent", 1),
        ("webhook", "sent", 2),
    }
    assert f"{hook.url}/hook" not in worker.log.read_text(errors="replace")  # the URL is a secret
