"""No secret is quoted back (assay.secrets.mask_secrets, docs/deployment.md "Secrets").

Loopback servers that echo the request's headers into their replies, every way a reply becomes text:
a judge's reason, a judge's contract error (`seen: '...'`, trimmed to 200 characters, with the key
placed across the cut), the try button's page, a search engine's ids, titles, index generation (from a
reply header and from the body) and an adapter error that quotes a trimmed value, a webhook's and a git
remote's errors. The property: no stored row and no page holds the secret, nor any 8-character piece of
it; and each echo did carry it (the server received it, and the masked text shows `***`), so the test
is not passing because nothing was echoed.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core import serializers

from evaluation.models import Notification, QueryRunResult
from evaluation.runs.services import notification_deliver, notifications_prepare, run_create
from golden_io import services as golden_services
from golden_io.models import GitExport
from labeling.models import GoldenSet, JudgeAnswer, Query
from labeling.services import judges
from tests import factories
from tests.support.evaluation import logged_in, page_text
from tests.support.judge_stub import chat_reply, judge_key, judge_settings
from tests.support.runs import eager_celery, failing_run, golden_file, make_target, make_version
from tests.support.stub_server import Recorded, Reply, StubServer

pytestmark = pytest.mark.django_db

SECRET = "ASSAY_SECRET_ECHO_PROBE"
VALUE = "echo-probe-9c4e2a71f0d3b6"
PIECES = [VALUE[i : i + 8] for i in range(len(VALUE) - 7)]


@pytest.fixture(autouse=True)
def _granted(golden_set: GoldenSet, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET, VALUE)
    factories.grant_secrets(golden_set, SECRET)


def _leaks(text: str) -> list[str]:
    return [piece for piece in PIECES if piece in text]


def _every_row() -> str:
    return "".join(serializers.serialize("json", m._default_manager.all()) for m in apps.get_models())


def _headers_text(request: Recorded) -> str:
    return "; ".join(f"{name}: {value}" for name, value in request.headers.items())


# ----------------------------------------------------------------------------------------- judges


def _judge_echo(request: Recorded) -> Reply:
    """A model that quotes its request's headers: as its reason, as prose (a contract error), or with
    the key straddling the 200 characters a contract error quotes."""
    headers = _headers_text(request)
    query = judge_key(request) or ""
    if query.startswith("prose"):
        return chat_reply(f"I cannot grade this. You sent me {headers}")
    if query.startswith("cut"):
        authorization = request.headers["authorization"]
        return chat_reply("x" * (200 - 10) + authorization + " trailing prose")
    return chat_reply(json.dumps({"grade": 2, "reason": f"fine, and you sent {headers}"}))


@pytest.fixture
def echo_judge() -> Iterator[StubServer]:
    with StubServer(key=judge_key, default=_judge_echo) as server:
        yield server


def _query(golden_set: GoldenSet, text: str) -> Query:
    return factories.pooled_query(golden_set, 1, text=text)


def test_a_judge_that_echoes_its_key_has_it_stored_and_shown_nowhere(
    golden_set: GoldenSet, echo_judge: StubServer, rita: User
) -> None:
    queries = [_query(golden_set, text) for text in ("reason echo", "prose echo", "cut echo")]
    judge, _ = judges.judge_save(
        golden_set=golden_set, settings=judge_settings(echo_judge.url, api_key_env=SECRET), by=None
    )
    job = judges.judge_job_create(judge=judge, queries=queries, by=None)
    for start in judges.judge_job_begin(job_id=job.pk) or []:
        judges.judge_chunk_process(job_id=job.pk, start=start)
    judges.judge_job_finish(job_id=job.pk)

    assert {r.headers["authorization"] for r in echo_judge.requests} == {f"Bearer {VALUE}"}
    answers = list(JudgeAnswer.objects.order_by("pk"))
    assert len(answers) == 3
    assert any("Bearer ***" in (a.reason or "") for a in answers)  # the reason was echoed, masked
    assert sum("seen:" in (a.error or "") for a in answers) == 2  # both contract errors quote the reply
    assert _leaks(_every_row()) == []
    client = logged_in(rita)
    base = f"/sets/{golden_set.slug}/judges/{judge.pk}"
    for url in (f"{base}/", f"{base}/jobs/{job.pk}/"):
        page = client.get(url)
        assert page.status_code == 200 and _leaks(page.content.decode()) == [], url


def test_trying_a_prompt_on_an_echoing_judge_shows_no_key(
    golden_set: GoldenSet, echo_judge: StubServer, rita: User
) -> None:
    query = _query(golden_set, "prose echo")
    form = {
        "name": "echo",
        "base_url": f"{echo_judge.url}/v1",
        "model": "stub-model",
        "api_key_env": SECRET,
        "temperature": "0",
        "concurrency": "1",
        "text_budget": "1000",
        "instructions": "Grade the document.",
        "structured": "on",
        "try_query": str(query.pk),
        "action": "try",
    }
    page = logged_in(rita).post(f"/sets/{golden_set.slug}/judges/new/", form)
    assert page.status_code == 200 and echo_judge.requests
    text = page_text(page)
    assert "Bearer ***" in text and _leaks(page.content.decode()) == []


# ----------------------------------------------------------------------------------------- search


def _search_echo(request: Recorded) -> Reply:
    """An engine that puts the request's secret header in its ids, titles and index generation, or (for
    query 2) in place of a hit, which the adapter's error then quotes trimmed to 40 characters."""
    key = request.headers.get("x-api-key", "")
    if request.json.get("q") == "query 2":
        return Reply(json={"hits": [f"{key} {key}"]})
    hits = [{"id": f"d1-{key}", "title": f"sent {_headers_text(request)}"}, {"id": "d2"}]
    return Reply(
        json={"hits": hits, "meta": {"generation": f"gen {key}"}}, headers={"X-Index-Generation": key}
    )


def test_a_search_engine_that_echoes_its_secret_header_has_it_stored_and_shown_nowhere(
    golden_set: GoldenSet, rita: User, django_capture_on_commit_callbacks: Any
) -> None:
    with StubServer(default=_search_echo) as engine:
        target = make_target(
            f"{engine.url}/search",
            golden_set,
            headers={"X-Api-Key": {"env": SECRET}},
            generation_header="X-Index-Generation",
        )
        with eager_celery(), django_capture_on_commit_callbacks(execute=True):
            run = run_create(golden_version=make_version(golden_set, golden_file(4)), target=target)
        run.refresh_from_db()
    assert {r.headers["x-api-key"] for r in engine.requests} == {VALUE}
    results = {r.query_id: r for r in QueryRunResult.objects.filter(run=run)}
    assert results["q-1"].ids[0] == "d1-***" and results["q-1"].index_generation == "***"
    assert results["q-2"].error is not None and "***" in results["q-2"].error
    assert _leaks(_every_row()) == []
    page = logged_in(rita).get(f"/runs/{run.pk}/")
    assert page.status_code == 200 and _leaks(page.content.decode()) == []


# ----------------------------------------------------------------------------------------- webhooks


def test_a_webhook_that_echoes_its_url_has_it_stored_nowhere(
    golden_set: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    def echo(request: Recorded) -> Reply:
        return Reply(status=403, text=f"refused {request.path} from {_headers_text(request)}")

    with StubServer(key=lambda r: r.path, default=echo) as hook:
        url = f"{hook.url}/hook/{VALUE}"
        monkeypatch.setenv(SECRET, url)
        target = make_target("http://127.0.0.1:9/search", golden_set, webhook_env=SECRET)
        run = failing_run(golden_set, target)
        rows = Notification.objects.filter(pk__in=notifications_prepare(run_id=run.pk))
        webhook = rows.get(channel=Notification.Channel.WEBHOOK)
        notification_deliver(notification_id=webhook.pk, attempt=1)
    webhook.refresh_from_db()
    assert hook.requests and webhook.last_error.startswith("webhook: HTTP 403")
    assert _leaks(_every_row()) == []


# ----------------------------------------------------------------------------------------- git remotes


def test_a_git_remote_that_echoes_the_credentials_has_them_stored_nowhere(
    golden_set: GoldenSet, tmp_path: Path
) -> None:
    def echo(request: Recorded) -> Reply:
        # A smart-HTTP advertisement whose first line is an error (`ERR <text>`, which a git client shows)
        # quoting the request's Authorization header.
        def line(text: str) -> bytes:
            return f"{len(text) + 4:04x}{text}".encode()

        said = f"ERR denied for {request.headers.get('authorization')}\n"
        body = line("# service=git-receive-pack\n") + b"0000" + line(said)
        return Reply(raw=body, content_type="application/x-git-receive-pack-advertisement")

    basic = base64.b64encode(f"{VALUE}:{VALUE}".encode()).decode()
    with StubServer(key=lambda r: r.path, default=echo) as remote:
        golden_services.git_export_configure(
            golden_set=golden_set,
            repository_path=str(tmp_path / "golden"),
            file_path="golden.json",
            remote_url=f"{remote.url}/repo.git",
            username_env=SECRET,
            password_env=SECRET,
        )
        row = golden_services.golden_version_export(version=make_version(golden_set), by=None)
    assert {r.headers.get("authorization") for r in remote.requests} == {f"Basic {basic}"}
    assert row.status == GitExport.Status.PUSH_FAILED and "denied for Basic ***" in row.message
    rows = _every_row()
    assert _leaks(rows) == [] and basic not in rows
