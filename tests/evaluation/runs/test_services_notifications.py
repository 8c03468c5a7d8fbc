"""Notifications of a run's verdict (evaluation/runs/services/notifications.py, docs/runs.md "Notifications"):
who is told what, once per run and channel, and how failures of the far end are retried or recorded.

Runs go all the way in-process with eager Celery: Django's locmem mail backend keeps `mail.outbox` in
this process only, so a worker process could not show it (tests/integration/test_notifications_workers.py
is the same story on a real worker, with the mail written to files). Under eager Celery a retry runs at
once instead of after its countdown; the countdowns themselves are `retry_delay`'s, tested below. The
webhook is a real HTTP server on a loopback port (tests.support.stub_server), and so is the SMTP address
that refuses connections.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.db import connection
from hypothesis import given
from hypothesis import strategies as st

from assay.targets import TargetError
from evaluation.models import EvaluationRun, Notification, SearchTarget
from evaluation.runs import tasks
from evaluation.runs.services import (
    NOTIFY_ATTEMPTS,
    BaselineError,
    baseline_promote,
    budgets_set,
    notification_deliver,
    notifications_prepare,
    run_create,
    run_finalize_process,
    run_regate_rescored,
    target_update,
)
from evaluation.runs.services.notifications import MAX_RETRY_DELAY_S, retry_delay
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests import factories
from tests.support.evaluation import logged_in
from tests.support.processes import free_port, refused_url
from tests.support.runs import (
    RunFactory,
    eager_celery,
    golden_file,
    make_version,
)
from tests.support.stub_server import Recorded, Reply, StubServer, hits_reply

pytestmark = pytest.mark.django_db

Status = Notification.Status
HOOK_VAR = "ASSAY_SECRET_TEST_WEBHOOK"


@pytest.fixture(autouse=True)
def _no_waiting(settings: Any) -> None:
    settings.ASSAY_NOTIFY_RETRY_DELAY = 0.0
    settings.SITE_URL = "https://assay.example.org"  # ASSAY_SITE_URL


@contextmanager
def eager_with_retries() -> Iterator[None]:
    """Eager Celery whose retries run again at once. Under eager propagation (tests.support.runs'
    `eager_celery`) a retry raises Celery's `Retry` out of `.delay()` instead of running again, and the
    retries are what these tests are about; what the tasks did is asserted on the rows."""
    from config.celery import app

    with eager_celery():
        app.conf.task_eager_propagates = False
        yield


@pytest.fixture
def finished(
    django_capture_on_commit_callbacks: Any, version: GoldenVersion, target: SearchTarget, rita: User
) -> RunFactory:
    """A run of `version` on `target` by rita, all the way in-process, its notifications included."""

    def run(**kwargs: Any) -> EvaluationRun:
        kwargs = {"golden_version": version, "target": target, "triggered_by": rita, **kwargs}
        with eager_with_retries(), django_capture_on_commit_callbacks(execute=True):
            created = run_create(**kwargs)
        created.refresh_from_db()
        return created

    return run


@pytest.fixture
def hook() -> Iterator[StubServer]:
    """The webhook's receiver: answers 200 unless a test scripts `/hook`."""
    with StubServer(key=lambda r: r.path, default=Reply(status=200, text="ok")) as server:
        yield server


@pytest.fixture
def hooked(target: SearchTarget, hook: StubServer, monkeypatch: pytest.MonkeyPatch) -> SearchTarget:
    """The target with a webhook whose URL is in the variable (as on a worker)."""
    monkeypatch.setenv(HOOK_VAR, f"{hook.url}/hook")
    _granted(target)
    return target_update(target=target, webhook_env=HOOK_VAR)


def _granted(target: SearchTarget) -> None:
    """An administrator granted the target's set the webhook's variable (labeling.selectors.secrets); the
    refusal without a grant is tests/evaluation/runs/test_secret_grants.py's."""
    factories.grant_secrets(target.golden_sets.get(), HOOK_VAR)


def _failing(finished: RunFactory, stub: StubServer, **options: Any) -> EvaluationRun:
    """A run whose verdict is fail: one query errors (no retries on the target), so the gate fails closed."""
    stub.on("query 2", Reply(status=503, text="overloaded"))
    run = finished(**options)
    assert run.verdict == EvaluationRun.Verdict.FAIL, run.gate
    return run


def _rows(run: EvaluationRun) -> dict[str, Notification]:
    return {n.channel: n for n in Notification.objects.filter(run=run)}


# ----------------------------------------------------------------------------------------- who is told


def test_a_failing_run_mails_the_reviewers_once_and_posts_to_the_webhook_after_a_retry(
    finished: RunFactory, stub: StubServer, hooked: SearchTarget, hook: StubServer, rita: User
) -> None:
    hook.on("/hook", Reply(status=500, text="upstream down"), Reply(status=200, text="ok"))

    run = _failing(finished, stub, params={"mode": "fast"})

    url = f"https://assay.example.org/runs/{run.pk}/"
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    # The run named by its label: the target and what it sent beyond the defaults (docs/runs.md).
    assert message.subject == f'[Assay] FAIL: run {run.pk} staging (mode="fast") on help-center'
    assert message.subject == f"[Assay] FAIL: {run.label} on help-center"
    assert message.to == ["rita@example.org"]  # the set's reviewer; alice and bob only rate it
    assert run.gate is not None
    failures = [f["message"] for f in run.gate["failures"]]
    assert failures and all(f"FAIL  {m}" in message.body for m in failures)
    assert "failed: q-2" in failures[0]
    assert f"The run: {url}" in message.body
    assert (
        f'Run {run.pk} staging (mode="fast") of help-center@2026-08-01 finished with verdict FAIL.'
        in message.body
    )

    posts = hook.requests_for("/hook")
    assert len(posts) == 2 and posts[0].body == posts[1].body  # retried after the 500
    body = posts[1].json
    assert body["text"].splitlines() == [message.subject, *(f"FAIL  {m}" for m in failures), url]
    assert {k: body[k] for k in ("verdict", "run_id", "run", "url", "golden_set", "target", "trigger")} == {
        "verdict": "fail",
        "run_id": run.pk,
        "run": f'run {run.pk} staging (mode="fast")',
        "url": url,
        "golden_set": "help-center",
        "target": "staging",
        "trigger": "web",
    }
    assert body["failures"] == failures and body["warnings"] == []

    rows = _rows(run)
    assert (rows["email"].status, rows["email"].attempts, rows["email"].recipients) == (
        Status.SENT,
        1,
        "rita@example.org",
    )
    webhook = rows["webhook"]
    assert (webhook.status, webhook.attempts, webhook.recipients) == (Status.SENT, 2, HOOK_VAR)
    # Never the reply's body (it may be anything the address answered): its status, type and size.
    assert webhook.last_error == "webhook: HTTP 500 (text/html; charset=utf-8, 13 bytes)"
    assert webhook.sent_at is not None


def test_telling_again_or_finalizing_again_sends_nothing_more(
    finished: RunFactory, stub: StubServer, hooked: SearchTarget, hook: StubServer
) -> None:
    run = _failing(finished, stub)
    assert len(mail.outbox) == 1 and len(hook.requests) == 1

    with eager_with_retries():
        tasks.run_notify.delay(run.pk)  # the task delivered twice
        for row in Notification.objects.filter(run=run):
            tasks.notification_send.delay(row.pk)  # each send delivered twice
    assert run_finalize_process(run_id=run.pk) == "skipped"  # a second finalize stops before the hook
    assert notifications_prepare(run_id=run.pk) == []

    assert len(mail.outbox) == 1 and len(hook.requests) == 1
    assert {(n.channel, n.status, n.attempts) for n in Notification.objects.filter(run=run)} == {
        ("email", Status.SENT, 1),
        ("webhook", Status.SENT, 1),
    }


def test_a_passing_run_and_a_run_without_a_verdict_tell_nobody(
    finished: RunFactory, hooked: SearchTarget, hook: StubServer, rita: User
) -> None:
    first = finished()
    assert first.verdict == EvaluationRun.Verdict.NONE  # no baseline yet, nothing failed
    baseline_promote(run=first, by=rita, rationale="floor")

    passing = finished()

    assert passing.verdict == EvaluationRun.Verdict.PASS
    assert not Notification.objects.exists()
    assert mail.outbox == [] and hook.requests == []


def test_a_warning_run_is_told_as_a_warning(
    finished: RunFactory,
    stub: StubServer,
    hooked: SearchTarget,
    hook: StubServer,
    rita: User,
    golden_set: GoldenSet,
) -> None:
    baseline_promote(run=finished(), by=rita, rationale="floor")
    stub.on("query 1", hits_reply(["d2", "d1", "d3"]))  # a small billing drop: over warn, under fail
    budgets_set(
        golden_set=golden_set,
        data={
            "ndcg": {"warn": 0.001, "fail": 0.9},
            "strata": {"billing": {"ndcg": {"warn": 0.001, "fail": 0.9}}},
        },
        by=rita,
    )

    run = finished()

    assert run.verdict == EvaluationRun.Verdict.WARN and run.gate is not None
    warnings = [w["message"] for w in run.gate["warnings"]]
    assert warnings and not run.gate["failures"]
    [message] = mail.outbox
    assert message.subject == f"[Assay] WARN: run {run.pk} staging on help-center"
    assert "0 failures, " in message.body
    assert all(f"WARN  {w}" in message.body for w in warnings)
    [post] = hook.requests
    assert post.json["verdict"] == "warn" and post.json["warnings"] == warnings


def test_a_set_whose_reviewers_have_no_address_records_why_nobody_was_mailed(
    finished: RunFactory, stub: StubServer, rita: User
) -> None:
    User.objects.filter(pk=rita.pk).update(email="")

    run = _failing(finished, stub)

    assert mail.outbox == []
    [row] = Notification.objects.filter(run=run)  # no webhook configured: email only
    assert (row.channel, row.status, row.attempts) == ("email", Status.FAILED, 0)
    assert row.last_error == "no reviewer of help-center has an email address"


def test_a_re_gate_tells_a_run_it_first_makes_warn_or_fail_and_never_tells_a_run_twice(
    finished: RunFactory,
    stub: StubServer,
    rita: User,
    golden_set: GoldenSet,
    django_capture_on_commit_callbacks: Any,
) -> None:
    lax = {"ndcg": {"warn": 0.9, "fail": 0.95}, "strata": {"billing": {"ndcg": {"warn": 0.9, "fail": 0.95}}}}
    strict = {"ndcg": {"warn": 0.001}, "strata": {"billing": {"ndcg": {"warn": 0.001}}}}
    budgets_set(golden_set=golden_set, data=lax, by=rita)
    baseline_promote(run=finished(), by=rita, rationale="floor")
    newer = make_version(golden_set, golden_file(version="2026-09-01"))  # the same labels, a new version
    stub.on("query 1", hits_reply(["d2", "d1", "d3"]))  # a small billing drop
    run = finished(golden_version=newer, rebaseline=True)
    assert run.verdict == EvaluationRun.Verdict.PASS and not Notification.objects.exists()

    def regate() -> EvaluationRun:
        with eager_with_retries(), django_capture_on_commit_callbacks(execute=True):
            return run_regate_rescored(run=run, by=rita).run

    budgets_set(golden_set=golden_set, data=strict, by=rita)
    verdict = regate().verdict
    assert verdict in (EvaluationRun.Verdict.WARN, EvaluationRun.Verdict.FAIL)
    [message] = mail.outbox
    assert message.subject == f"[Assay] {verdict.upper()}: run {run.pk} staging on help-center"

    with pytest.raises(BaselineError, match="gating again would change nothing"):
        regate()  # the same budgets: nothing gated again, nothing told
    budgets_set(golden_set=golden_set, data=lax, by=rita)
    assert regate().verdict == EvaluationRun.Verdict.PASS
    assert len(mail.outbox) == 1
    assert [(n.channel, n.status) for n in Notification.objects.filter(run=run)] == [("email", Status.SENT)]


# ----------------------------------------------------------------------------------------- failures


def test_a_4xx_is_a_recorded_failure_without_a_retry(
    finished: RunFactory, stub: StubServer, hooked: SearchTarget, hook: StubServer
) -> None:
    hook.on("/hook", Reply(status=404, text="no_service"), Reply(status=200))

    run = _failing(finished, stub)

    webhook = _rows(run)["webhook"]
    assert (webhook.status, webhook.attempts) == (Status.FAILED, 1)
    assert webhook.last_error == "webhook: HTTP 404 (text/html; charset=utf-8, 10 bytes)"
    assert len(hook.requests) == 1
    assert _rows(run)["email"].status == Status.SENT  # one channel's failure is not the other's


def test_a_webhooks_reply_body_is_never_kept_or_shown(
    finished: RunFactory, stub: StubServer, hooked: SearchTarget, hook: StubServer, rita: User
) -> None:
    # Whatever the address answers (an internal page, an echo of a token) stays out of the record.
    said = '{"error": "forbidden", "internal": "db-admin.corp:5432", "token": "xoxb-123"}'
    hook.on("/hook", Reply(status=403, text=said, content_type="application/json"))

    run = _failing(finished, stub)

    webhook = _rows(run)["webhook"]
    assert webhook.last_error == f"webhook: HTTP 403 (application/json, {len(said)} bytes)"
    page = logged_in(rita).get(f"/runs/{run.pk}/").content.decode()
    assert "webhook: HTTP 403 (application/json" in page and "db-admin" not in page and "xoxb" not in page


def test_a_429_is_retried_like_a_5xx(
    finished: RunFactory, stub: StubServer, hooked: SearchTarget, hook: StubServer
) -> None:
    hook.on("/hook", Reply(status=429, headers={"Retry-After": "1"}), Reply(status=200))

    run = _failing(finished, stub)

    assert (_rows(run)["webhook"].status, _rows(run)["webhook"].attempts) == (Status.SENT, 2)


def test_a_timeout_is_retried(
    finished: RunFactory, stub: StubServer, hooked: SearchTarget, hook: StubServer, settings: Any
) -> None:
    settings.ASSAY_NOTIFY_TIMEOUT = 0.2
    hook.on("/hook", Reply(status=200, delay=2.0), Reply(status=200))

    run = _failing(finished, stub)

    webhook = _rows(run)["webhook"]
    assert (webhook.status, webhook.attempts) == (Status.SENT, 2)
    assert webhook.last_error.startswith("webhook: no answer within 0.2 s")


def test_a_webhook_dripping_its_answer_is_cut_off_at_the_deadline_and_retried(
    finished: RunFactory, stub: StubServer, hooked: SearchTarget, hook: StubServer, settings: Any
) -> None:
    settings.ASSAY_NOTIFY_TIMEOUT = 0.5
    drip = Reply(status=200, text="ok" * 50, drip=0.1)  # each byte well inside the timeout; 10 s in all
    hook.on("/hook", drip, Reply(status=200))

    run = _failing(finished, stub)

    webhook = _rows(run)["webhook"]
    assert (webhook.status, webhook.attempts) == (Status.SENT, 2)
    assert webhook.last_error == "webhook: no answer within 0.5 s (TimeoutError)"
    assert hook.requests[0].sent < 100  # the deadline, not the end of the body, ended the first


def test_a_webhooks_huge_reply_is_measured_up_to_a_cap_and_never_read_whole(
    finished: RunFactory, stub: StubServer, hooked: SearchTarget, hook: StubServer
) -> None:
    hook.on("/hook", Reply(status=400, text="no", pad=64 * 1024 * 1024))

    run = _failing(finished, stub)

    webhook = _rows(run)["webhook"]
    assert (webhook.status, webhook.attempts) == (Status.FAILED, 1)
    assert webhook.last_error == "webhook: HTTP 400 (text/html; charset=utf-8, more than 65,536 bytes)"
    assert hook.requests[0].sent < 16 * 1024 * 1024  # the client closed at the cap


def test_a_connection_error_is_retried_up_to_the_bound_and_never_shows_the_url(
    finished: RunFactory, stub: StubServer, target: SearchTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = refused_url() + "?token=hook-secret-7d1"
    monkeypatch.setenv(HOOK_VAR, url)
    _granted(target)
    target_update(target=target, webhook_env=HOOK_VAR)

    run = _failing(finished, stub)

    webhook = _rows(run)["webhook"]
    assert (webhook.status, webhook.attempts) == (Status.FAILED, NOTIFY_ATTEMPTS)
    assert webhook.last_error.startswith("webhook: ConnectError")
    assert "hook-secret" not in webhook.last_error and "127.0.0.1" not in webhook.last_error


def test_mail_that_cannot_reach_its_server_is_retried_then_recorded_as_failed(
    finished: RunFactory, stub: StubServer, settings: Any
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", free_port(), 2.0

    run = _failing(finished, stub)

    email = _rows(run)["email"]
    assert (email.status, email.attempts) == (Status.FAILED, NOTIFY_ATTEMPTS)
    assert email.last_error.startswith("sending mail failed: ConnectionRefusedError")


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        # Stored before the prefix rule (the services refuse it now): refused when read, too.
        ("SLACK_WEBHOOK_URL", "http://127.0.0.1:9/hook", "does not start with ASSAY_SECRET_"),
        (HOOK_VAR, None, f"environment variable {HOOK_VAR} is not set on this worker"),
        (HOOK_VAR, "hooks.slack.example/T000/B000", f"the value of {HOOK_VAR} is not an http(s) URL"),
    ],
)
def test_a_webhook_variable_that_cannot_be_used_fails_at_once(
    variable: str,
    value: str | None,
    says: str,
    finished: RunFactory,
    stub: StubServer,
    target: SearchTarget,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    SearchTarget.objects.filter(pk=target.pk).update(webhook_env=variable)
    _granted(target)
    if value is None:
        monkeypatch.delenv(variable, raising=False)
    else:
        monkeypatch.setenv(variable, value)

    run = _failing(finished, stub)

    webhook = _rows(run)["webhook"]
    assert (webhook.status, webhook.attempts) == (Status.FAILED, 1)
    assert says in webhook.last_error
    if value:
        assert value not in webhook.last_error


@pytest.mark.parametrize(
    "host", ["１２７.０.０.１", "127。0。0。1", "2130706433", "[::ffff:127.0.0.1]", "localhost."]
)
def test_a_webhook_on_a_disguised_loopback_address_is_refused_without_a_request(
    host: str,
    finished: RunFactory,
    stub: StubServer,
    target: SearchTarget,
    hook: StubServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The network policy holds for webhooks as for targets. The run (its target on loopback) runs while
    private addresses are allowed; the webhook is added and the policy turned on before it is told."""
    run = _failing(finished, stub)
    factories.grant_secrets(target.golden_sets.get(), HOOK_VAR)  # granted: the address alone is refused
    url = f"http://{host}:{hook.port}/hook"
    monkeypatch.setenv(HOOK_VAR, url)
    monkeypatch.setenv("ASSAY_TARGET_ALLOW_PRIVATE", "false")
    with pytest.raises(TargetError, match=f"webhook_env: the host of the URL in {HOOK_VAR} is a loopback"):
        target_update(target=target, webhook_env=HOOK_VAR)  # refused at save, naming the variable
    SearchTarget.objects.filter(pk=target.pk).update(webhook_env=HOOK_VAR)  # as if saved before

    (waiting,) = notifications_prepare(run_id=run.pk)
    outcome = notification_deliver(notification_id=waiting, attempt=1)

    webhook = _rows(run)["webhook"]
    assert outcome == "failed" and (webhook.status, webhook.attempts) == (Status.FAILED, 1)  # not retried
    assert f"the host of the URL in {HOOK_VAR} is a loopback address" in webhook.last_error
    assert host not in webhook.last_error and url not in webhook.last_error
    assert hook.requests == []


# ----------------------------------------------------------------------------------------- the claim


def test_a_sent_row_is_never_sent_again_whatever_attempt_asks(
    finished: RunFactory, stub: StubServer, hooked: SearchTarget, hook: StubServer
) -> None:
    run = _failing(finished, stub)
    webhook = _rows(run)["webhook"]

    outcomes = [notification_deliver(notification_id=webhook.pk, attempt=n) for n in (1, 2, NOTIFY_ATTEMPTS)]

    assert outcomes == ["skipped"] * 3
    assert len(hook.requests) == 1


@pytest.mark.django_db(transaction=True)
def test_a_second_delivery_while_an_attempt_is_in_flight_does_nothing(
    rita: User, golden_set: GoldenSet, hook: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.runs import failing_run, make_target

    release = threading.Event()

    def held(request: Recorded) -> Reply:  # the far end takes its time over the first attempt
        release.wait(30)
        return Reply(status=200)

    hook.default = held
    monkeypatch.setenv(HOOK_VAR, f"{hook.url}/hook")
    factories.grant_secrets(golden_set, HOOK_VAR)
    target = make_target("http://127.0.0.1:9/search", golden_set, webhook_env=HOOK_VAR)
    run = failing_run(golden_set, target, triggered_by=rita)
    ids = dict(
        Notification.objects.filter(pk__in=notifications_prepare(run_id=run.pk)).values_list("channel", "pk")
    )
    outcome: list[str] = []

    def attempt() -> None:
        try:
            outcome.append(notification_deliver(notification_id=ids["webhook"], attempt=1))
        finally:
            connection.close()  # this thread's own connection

    first = threading.Thread(target=attempt)
    first.start()
    try:
        while not hook.requests:  # the first attempt holds the row and waits for its answer
            threading.Event().wait(0.01)
        second = notification_deliver(notification_id=ids["webhook"], attempt=1)
    finally:
        release.set()
        first.join(30)

    assert second == "skipped"
    assert outcome == ["sent"]
    assert len(hook.requests) == 1
    webhook = Notification.objects.get(pk=ids["webhook"])
    assert (webhook.status, webhook.attempts) == (Status.SENT, 1)


@given(st.integers(min_value=1, max_value=40), st.floats(min_value=0.1, max_value=600))
def test_the_retry_delay_doubles_from_the_setting_up_to_its_cap(attempt: int, base: float) -> None:
    from django.test import override_settings

    with override_settings(ASSAY_NOTIFY_RETRY_DELAY=base):
        delay, after = retry_delay(attempt), retry_delay(attempt + 1)
        assert retry_delay(1) == pytest.approx(base)
    assert 0 < delay <= after <= MAX_RETRY_DELAY_S
    assert after == pytest.approx(min(2 * delay, MAX_RETRY_DELAY_S))
