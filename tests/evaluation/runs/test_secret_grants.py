"""Secrets belong to a golden set (labeling.selectors.secrets, docs/deployment.md "Secrets").

The property, for each of the four kinds of outbound setting that carries a secret (a judge's key, a
target's secret header, a target's webhook, a git export's credentials): a reviewer whose set holds no
grant for a variable cannot make the app send its value anywhere. Each test starts a loopback server of
the attacker's choosing and asserts it received no request at all, and that the refusal names the
variable, at save (victor, a reviewer of another set; rita before her set is granted) and at use after a
grant is withdrawn; with the grant, the value does arrive (so the refusal is the grant's doing, not a
broken setting).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from assay.targets import TargetError
from evaluation.models import EvaluationRun, Notification, QueryRunResult, SearchTarget
from evaluation.runs.services import (
    RunError,
    notification_deliver,
    notifications_prepare,
    run_create,
    target_update,
)
from golden_io import services as golden_services
from golden_io.models import GitExport, GitExportConfig
from labeling.models import GoldenSet, Judge, JudgeJobItem, SecretGrant
from labeling.services import judges
from labeling.services.secrets import secret_grant_withdraw
from tests import factories
from tests.support.evaluation import (
    logged_in,
    page_text,
)
from tests.support.judge_stub import judge_settings, judge_stub
from tests.support.runs import eager_celery, failing_run, make_target, make_version
from tests.support.stub_server import Reply, StubServer

pytestmark = pytest.mark.django_db

SECRET = "ASSAY_SECRET_GRANT_PROBE"
VALUE = "probe-value-5e1d7c9a2b"


@pytest.fixture(autouse=True)
def _secret_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variable is set in this process (the web process and the eager workers alike)."""
    monkeypatch.setenv(SECRET, VALUE)


@pytest.fixture
def judge_server() -> Iterator[StubServer]:
    with judge_stub() as server:
        yield server


@pytest.fixture
def catcher() -> Iterator[StubServer]:
    """Any server a reviewer might point a setting at: it records whatever reaches it."""
    with StubServer(key=lambda r: r.path, default=Reply(status=200, text="ok")) as server:
        yield server


def _no_value_anywhere(server: StubServer) -> None:
    assert server.requests == []


def _refused(page: Any, status: int | tuple[int, ...], golden_set: GoldenSet, field: str = "") -> None:
    """The page refused the setting with the given status, naming the variable and the set lacking it."""
    assert page.status_code in (status if isinstance(status, tuple) else (status,))
    assert f"{field}{SECRET} is not granted to golden set {golden_set.slug}" in page_text(page)


def _judge_form(url: str, query_pk: int, action: str) -> dict[str, str]:
    return {
        "name": "probe",
        "base_url": f"{url}/v1",
        "model": "stub-model",
        "api_key_env": SECRET,
        "temperature": "0",
        "concurrency": "2",
        "text_budget": "1000",
        "instructions": "Grade the document.",
        "structured": "on",
        "try_query": str(query_pk),
        "action": action,
    }


# ----------------------------------------------------------------------------------------- judges


def test_a_judge_key_reaches_a_server_only_for_a_set_granted_it(
    golden_set: GoldenSet, other_set: GoldenSet, rita: User, victor: User, judge_server: StubServer
) -> None:
    theirs = factories.pooled_query(other_set, 2, text="probe query")
    ours = factories.pooled_query(golden_set, 2, text="probe query")
    factories.grant_secrets(golden_set, SECRET)  # granted to rita's set, not to victor's

    for action in ("try", "save"):
        page = logged_in(victor).post(
            f"/sets/{other_set.slug}/judges/new/", _judge_form(judge_server.url, theirs.pk, action)
        )
        _refused(page, (200, 400), other_set)
    _no_value_anywhere(judge_server)
    assert not Judge.objects.exists()

    tried = logged_in(rita).post(
        f"/sets/{golden_set.slug}/judges/new/", _judge_form(judge_server.url, ours.pk, "try")
    )
    assert tried.status_code == 200 and "Not tried" not in page_text(tried)
    assert {r.headers["authorization"] for r in judge_server.requests} == {f"Bearer {VALUE}"}


def test_a_withdrawn_grant_stops_the_judges_next_job_before_any_call(
    golden_set: GoldenSet, judge_server: StubServer
) -> None:
    query = factories.pooled_query(golden_set, 2, text="probe query")
    factories.grant_secrets(golden_set, SECRET)
    judge, _ = judges.judge_save(
        golden_set=golden_set, settings=judge_settings(judge_server.url, api_key_env=SECRET), by=None
    )
    assert secret_grant_withdraw(golden_set=golden_set, variable=SECRET)

    job = judges.judge_job_create(judge=judge, queries=[query], by=None)
    for start in judges.judge_job_begin(job_id=job.pk) or []:
        judges.judge_chunk_process(job_id=job.pk, start=start)

    failures = set(JudgeJobItem.objects.filter(job=job).values_list("failure", flat=True))
    assert failures == {
        f"judge cannot be called: {SECRET} is not granted to golden set {golden_set.slug}: "
        "an administrator grants a golden set the secrets it may use (Django admin, "
        "Secret grants, or manage.py secret_grant)"
    }
    _no_value_anywhere(judge_server)
    # Saving it again (a serving change) is refused too, naming the variable.
    with pytest.raises(judges.JudgeError, match=SECRET):
        judges.judge_save(
            golden_set=golden_set,
            settings=judge_settings(judge_server.url, api_key_env=SECRET, concurrency=3),
            by=None,
            previous=judge,
        )


# ----------------------------------------------------------------------------------------- targets


def _target_form(url: str, golden_set: GoldenSet, **changes: Any) -> dict[str, Any]:
    data = {
        "name": "probe-search",
        "adapter": "http_json",
        "url": url,
        "timeout": "5",
        "concurrency": "2",
        "retries": "0",
        "solr_method": "GET",
        "golden_sets": [golden_set.pk],
    }
    data.update(changes)
    return data


def test_a_secret_header_or_webhook_is_refused_at_save_for_a_set_without_the_grant(
    golden_set: GoldenSet, other_set: GoldenSet, victor: User, catcher: StubServer
) -> None:
    factories.grant_secrets(golden_set, SECRET)  # another set's grant lends victor nothing
    for changes, field in (
        ({"headers": f'{{"X-Api-Key": {{"env": "{SECRET}"}}}}'}, "headers.X-Api-Key"),
        ({"webhook_env": SECRET}, "webhook_env"),
    ):
        page = logged_in(victor).post(
            "/targets/new/", _target_form(f"{catcher.url}/search", other_set, **changes)
        )
        _refused(page, 422, other_set, f"{field}: ")
    assert not SearchTarget.objects.exists()
    _no_value_anywhere(catcher)


def test_a_target_listing_two_sets_needs_the_grant_of_both(
    golden_set: GoldenSet, other_set: GoldenSet, catcher: StubServer
) -> None:
    """Whoever reviews any set a target lists may change where it sends its headers, so each must hold it."""
    factories.grant_secrets(golden_set, SECRET)
    target = make_target(f"{catcher.url}/search", golden_set, headers={"X-Api-Key": {"env": SECRET}})
    with pytest.raises(TargetError, match=f"{SECRET} is not granted to golden set {other_set.slug}"):
        target_update(target=target, golden_sets=[golden_set, other_set])
    assert list(target.golden_sets.all()) == [golden_set]


def test_a_secret_header_is_sent_only_while_the_runs_set_holds_the_grant(
    golden_set: GoldenSet, django_capture_on_commit_callbacks: Any
) -> None:
    with StubServer() as engine:  # answers every query with d1, d2, d3
        _header_runs(golden_set, engine, django_capture_on_commit_callbacks)


def _header_runs(golden_set: GoldenSet, catcher: StubServer, django_capture_on_commit_callbacks: Any) -> None:
    factories.grant_secrets(golden_set, SECRET)
    target = make_target(f"{catcher.url}/search", golden_set, headers={"X-Api-Key": {"env": SECRET}})
    version = make_version(golden_set)

    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        granted = run_create(golden_version=version, target=target)
    assert {r.headers["x-api-key"] for r in catcher.requests} == {VALUE}
    granted.refresh_from_db()
    assert granted.errors == 0
    sent = len(catcher.requests)

    # A run queued while granted, the grant withdrawn before its chunks run: no query is sent.
    with django_capture_on_commit_callbacks(execute=False) as queued:
        pending = run_create(golden_version=version, target=target)
    assert secret_grant_withdraw(golden_set=golden_set, variable=SECRET)
    with eager_celery():
        for callback in queued:
            callback()
    pending.refresh_from_db()
    errors = set(QueryRunResult.objects.filter(run=pending).values_list("error", flat=True))
    assert len(errors) == 1
    [error] = errors
    assert error is not None
    assert f"headers.X-Api-Key: {SECRET} is not granted to golden set {golden_set.slug}" in error
    assert len(catcher.requests) == sent
    # And a new run is refused when it is asked for, naming the variable.
    with pytest.raises(RunError, match=f"{SECRET} is not granted"):
        run_create(golden_version=version, target=target)
    assert len(catcher.requests) == sent


# ----------------------------------------------------------------------------------------- webhooks


def _deliver_webhook(run: EvaluationRun) -> Notification:
    rows = Notification.objects.filter(pk__in=notifications_prepare(run_id=run.pk))
    webhook = rows.get(channel=Notification.Channel.WEBHOOK)
    notification_deliver(notification_id=webhook.pk, attempt=1)
    webhook.refresh_from_db()
    return webhook


def test_a_webhook_is_posted_only_while_the_runs_set_holds_the_grant(
    golden_set: GoldenSet, catcher: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET, f"{catcher.url}/hook")  # a webhook's URL is its secret
    factories.grant_secrets(golden_set, SECRET)
    target = make_target("http://127.0.0.1:9/search", golden_set, webhook_env=SECRET)

    told = _deliver_webhook(failing_run(golden_set, target))
    assert told.status == Notification.Status.SENT
    assert [r.path for r in catcher.requests] == ["/hook"]

    assert secret_grant_withdraw(golden_set=golden_set, variable=SECRET)
    refused = _deliver_webhook(failing_run(golden_set, target))
    assert refused.status == Notification.Status.FAILED
    assert refused.last_error.startswith(f"webhook: {SECRET} is not granted to golden set {golden_set.slug}")
    assert len(catcher.requests) == 1


# ----------------------------------------------------------------------------------------- git export


@pytest.fixture
def git_server() -> Iterator[StubServer]:
    """A would-be git remote over HTTP: it records the smart-HTTP discovery request and refuses it."""
    with StubServer(key=lambda r: r.path, default=Reply(status=404, text="no")) as server:
        yield server


def _export_form(tmp_path: Path, url: str) -> dict[str, str]:
    return {
        "repository_path": str(tmp_path / "golden"),
        "branch": "main",
        "file_path": "golden.json",
        "file_format": "json",
        "remote_url": f"{url}/repo.git",
        "username_env": SECRET,
        "password_env": SECRET,
    }


def test_git_export_credentials_are_refused_at_configure_for_a_set_without_the_grant(
    golden_set: GoldenSet, other_set: GoldenSet, victor: User, git_server: StubServer, tmp_path: Path
) -> None:
    factories.grant_secrets(golden_set, SECRET)
    page = logged_in(victor).post(
        f"/sets/{other_set.slug}/versions/git/", _export_form(tmp_path, git_server.url)
    )
    _refused(page, 422, other_set)
    assert not GitExportConfig.objects.exists()
    _no_value_anywhere(git_server)


def test_git_export_pushes_with_the_credentials_only_while_the_set_holds_the_grant(
    golden_set: GoldenSet, git_server: StubServer, tmp_path: Path
) -> None:
    factories.grant_secrets(golden_set, SECRET)
    form = _export_form(tmp_path, git_server.url)
    golden_services.git_export_configure(golden_set=golden_set, **form)
    version = make_version(golden_set)

    pushed = golden_services.golden_version_export(version=version, by=None)
    assert pushed.status == GitExport.Status.PUSH_FAILED  # the stub is no git server
    assert git_server.requests
    assert {r.headers.get("authorization") for r in git_server.requests} == {
        "Basic " + base64.b64encode(f"{VALUE}:{VALUE}".encode()).decode()
    }
    asked = len(git_server.requests)

    assert secret_grant_withdraw(golden_set=golden_set, variable=SECRET)
    refused = golden_services.golden_version_export(version=version, by=None)
    assert refused.status == GitExport.Status.FAILED
    assert refused.message.startswith(
        f"nothing was written: username_env: {SECRET} is not granted to golden set {golden_set.slug}"
    )
    assert len(git_server.requests) == asked


# ----------------------------------------------------------------------------------------- granting


def test_the_command_grants_lists_and_withdraws(
    golden_set: GoldenSet, capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("secret_grant", golden_set.slug, SECRET, "--note", "the probe")
    grant = SecretGrant.objects.get()
    assert (grant.golden_set, grant.variable, grant.note) == (golden_set, SECRET, "the probe")
    call_command("secret_grant", golden_set.slug)
    assert SECRET in capsys.readouterr().out
    with pytest.raises(CommandError, match="does not start with ASSAY_SECRET_"):
        call_command("secret_grant", golden_set.slug, "DJANGO_SECRET_KEY")
    call_command("secret_grant", golden_set.slug, SECRET, "--withdraw")
    assert not SecretGrant.objects.exists()
    with pytest.raises(CommandError, match=f"holds no grant of {SECRET}"):
        call_command("secret_grant", golden_set.slug, SECRET, "--withdraw")


def test_a_set_the_editor_does_not_review_is_counted_not_named(
    golden_set: GoldenSet, other_set: GoldenSet, rita: User, catcher: StubServer
) -> None:
    factories.grant_secrets(golden_set, SECRET)
    factories.grant_secrets(other_set, SECRET)
    target = make_target(
        f"{catcher.url}/search", golden_set, owner=rita, headers={"X-Api-Key": {"env": SECRET}}
    )
    target_update(target=target, golden_sets=[golden_set, other_set])
    assert secret_grant_withdraw(golden_set=other_set, variable=SECRET)

    headers = f'{{"X-Api-Key": {{"env": "{SECRET}"}}}}'
    form = _target_form(f"{catcher.url}/search", golden_set, name="staging", headers=headers)
    page = logged_in(rita).post(f"/targets/{target.pk}/edit/", form)
    assert page.status_code == 422
    says = f"headers.X-Api-Key: {SECRET} is not granted to 1 golden set you do not review"
    assert says in page_text(page)
    assert other_set.slug not in page_text(page)


# ----------------------------------------------------------------------------------------- the admin


def test_the_admin_grants_with_the_name_rule_and_records_who(golden_set: GoldenSet, client: Any) -> None:
    root = factories.UserFactory.create(username="root", is_staff=True, is_superuser=True)
    client.force_login(root)
    add = "/admin/labeling/secretgrant/add/"
    refused = client.post(add, {"golden_set": golden_set.pk, "variable": "DJANGO_SECRET_KEY", "note": ""})
    assert refused.status_code == 200 and "does not start with ASSAY_SECRET_" in refused.content.decode()
    assert not SecretGrant.objects.exists()
    granted = client.post(add, {"golden_set": golden_set.pk, "variable": SECRET, "note": "judge key"})
    assert granted.status_code == 302
    assert SecretGrant.objects.get().granted_by == root
    # The git export's admin form asks the same check as the service.
    config = {"golden_set": golden_set.pk, "repository_path": "/tmp/assay-admin-git", "branch": "main"}
    config |= {"file_path": "g.json", "file_format": "json", "remote_url": "", "username_env": ""}
    page = client.post(
        "/admin/golden_io/gitexportconfig/add/", config | {"password_env": "ASSAY_SECRET_NOT_GRANTED"}
    )
    assert "ASSAY_SECRET_NOT_GRANTED is not granted to golden set help-center" in page.content.decode()
    assert not GitExportConfig.objects.exists()
