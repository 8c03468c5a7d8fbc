"""`assay remote run` against a live server (pytest-django's live_server) running the real API.

Runs finish in the server's request thread with eager Celery where a verdict is wanted; where the run
must stay unfinished (cancel, fail, timeout), Celery is not eager and no worker consumes the queue, so
the test moves the run itself. Exit codes: 0 pass / warn / none, 1 fail, 2 no verdict."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from assay.cli import main
from evaluation.models import EvaluationRun, SearchTarget
from evaluation.runs.services import baseline_promote, run_cancel, run_fail
from golden_io.models import GoldenVersion
from tests.support.evaluation import TokenFor
from tests.support.processes import REPO, refused_url
from tests.support.runs import (
    eager_celery,
)
from tests.support.stub_server import Reply, StubServer, hits_reply

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager() -> Iterator[None]:
    with eager_celery():
        yield


@pytest.fixture
def quiet_broker() -> Iterator[None]:
    """Nothing consumes the broker here: what the test queued is dropped afterwards."""
    import redis

    from config.celery import app

    yield
    url = str(app.conf.broker_url)
    if url.startswith("redis://"):
        redis.Redis.from_url(url).flushdb()


def _args(server: str, token: str, *extra: str) -> list[str]:
    return [
        "remote",
        "run",
        "--server",
        server,
        "--token",
        token,
        "--golden-set",
        "help-center",
        "--target",
        "staging",
        *extra,
    ]


def test_it_exits_0_when_the_run_has_no_baseline_and_nothing_failed(
    live_server: Any,
    eager: None,
    version: GoldenVersion,
    target: SearchTarget,
    rita: User,
    token_for: TokenFor,
    tmp_path: Path,
    capsys: Any,
) -> None:
    summary = tmp_path / "out" / "gate.md"
    code = main(_args(live_server.url, token_for(rita), "--wait", "--summary", str(summary)))
    out, err = capsys.readouterr()
    run = EvaluationRun.objects.get()

    assert code == 0, err
    assert (run.trigger, run.triggered_by, run.status) == ("ci", rita, "succeeded")
    assert f"run {run.pk} started: help-center@2026-08-01 on staging" in err
    assert f"run {run.pk}: succeeded 6/6 (100%), 0 errored" in err
    assert out.startswith(f"verdict: none (run {run.pk}, succeeded)")
    assert summary.read_text().startswith("### Relevance gate: **no baseline**")


def test_it_exits_1_on_a_failing_verdict_and_writes_the_summary(
    live_server: Any,
    eager: None,
    version: GoldenVersion,
    target: SearchTarget,
    stub: StubServer,
    rita: User,
    token_for: TokenFor,
    tmp_path: Path,
    capsys: Any,
) -> None:
    token = token_for(rita)
    assert main(_args(live_server.url, token, "--wait")) == 0
    baseline_promote(run=EvaluationRun.objects.get(), by=rita, rationale="first")
    stub.on("query 1", hits_reply(["d9"]))
    stub.on("query 3", hits_reply(["d9"]))
    capsys.readouterr()

    summary = tmp_path / "gate.md"
    code = main(_args(live_server.url, token, "--wait", "--param", "rewrite=true", "--summary", str(summary)))
    out, _ = capsys.readouterr()

    current = EvaluationRun.objects.order_by("-id").first()
    assert current is not None and current.params == {"rewrite": True}
    assert code == 1
    assert "verdict: fail" in out and "FAIL  core nDCG@k drop" in out
    assert "  q-1 'query 1': nDCG" in out and f"report: {live_server.url}/runs/{current.pk}/" in out
    text = summary.read_text()
    assert text.startswith("### Relevance gate: **FAIL**") and "| q-1 | query 1 |" in text


def test_without_wait_it_prints_the_run_id_and_exits_0(
    live_server: Any,
    quiet_broker: None,
    version: GoldenVersion,
    target: SearchTarget,
    rita: User,
    token_for: TokenFor,
    capsys: Any,
) -> None:
    code = main(_args(live_server.url, token_for(rita), "--version", version.name))
    out, _ = capsys.readouterr()
    run = EvaluationRun.objects.get()
    assert code == 0 and out.strip() == str(run.pk) and run.status == "queued"


@pytest.mark.parametrize(
    ("scopes", "extra", "says"),
    [
        (None, ["--token", "assay_0000_nope"], "authentication failed (HTTP 401)"),
        (("read",), [], "not allowed (HTTP 403): this token lacks the scope 'runs:write'"),
        (None, ["--golden-set", "no-such-set"], "not found, or not visible to this token's user (HTTP 404)"),
        (None, ["--version", "1999-01-01"], "(HTTP 404): no such golden version"),
        (None, ["--param", "novalue"], "--param 'novalue': expected KEY=VALUE"),
        (None, ["--summary", "x.md"], "--summary needs --wait"),
    ],
)
def test_refusals_exit_2_with_one_line_saying_why(
    scopes: tuple[str, ...] | None,
    extra: list[str],
    says: str,
    live_server: Any,
    quiet_broker: None,
    version: GoldenVersion,
    target: SearchTarget,
    rita: User,
    token_for: TokenFor,
    capsys: Any,
) -> None:
    token = token_for(rita, *(scopes or ()))
    code = main([*_args(live_server.url, token), *extra])
    _, err = capsys.readouterr()
    assert code == 2
    assert says in err and err.startswith("assay remote run: error: ")
    assert not EvaluationRun.objects.filter(status="succeeded").exists()


def test_an_unreachable_server_exits_2_naming_its_option_not_its_url(
    rita: User, token_for: TokenFor, capsys: Any
) -> None:
    # A server URL may carry a secret (a path behind a proxy): the error names where it came from only.
    host = refused_url().rsplit("/", 1)[0].removeprefix("http://")
    server = f"http://{host}/k-5ecret-path"
    assert main(_args(server, token_for(rita))) == 2
    err = capsys.readouterr().err
    assert "starting the run: cannot reach the Assay server (--server): ConnectError" in err
    assert host not in err and "5ecret" not in err and "://" not in err


def _wait_for_run() -> EvaluationRun:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        run = EvaluationRun.objects.first()
        if run is not None:
            return run
        time.sleep(0.05)
    raise AssertionError("the run was not created")


@pytest.mark.parametrize("ending", ["cancelled", "failed"])
def test_a_run_that_ends_without_a_verdict_exits_2(
    ending: str,
    live_server: Any,
    quiet_broker: None,
    version: GoldenVersion,
    target: SearchTarget,
    rita: User,
    token_for: TokenFor,
    capsys: Any,
) -> None:
    codes: list[int] = []
    args = _args(live_server.url, token_for(rita), "--wait", "--poll", "0.1")
    waiter = threading.Thread(target=lambda: codes.append(main(args)))
    waiter.start()
    run = _wait_for_run()
    if ending == "cancelled":
        run_cancel(run=run, by=rita)
    else:
        run_fail(run_id=run.pk, message="run_start: RuntimeError: the broker went away")
    waiter.join(30)

    assert codes == [2]
    err = capsys.readouterr().err
    expected = "cancelled by rita" if ending == "cancelled" else "the broker went away"
    assert f"run {run.pk} {ending}: " in err and expected in err and "no verdict" in err


def test_it_gives_up_after_the_timeout_with_exit_2(
    live_server: Any,
    quiet_broker: None,
    version: GoldenVersion,
    target: SearchTarget,
    rita: User,
    token_for: TokenFor,
    capsys: Any,
) -> None:
    code = main(_args(live_server.url, token_for(rita), "--wait", "--timeout", "0.5", "--poll", "0.1"))
    err = capsys.readouterr().err
    run = EvaluationRun.objects.get()
    assert code == 2
    assert (
        f"run {run.pk} still queued after 0.5s (--timeout); it goes on: {live_server.url}/runs/{run.pk}/"
        in err
    )


def test_the_remote_command_imports_no_django() -> None:
    probe = (
        "import sys, assay.remote, assay.cli; print(sorted(m for m in sys.modules if m.startswith('django')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_polling_waits_out_a_transient_server_error(capsys: Any) -> None:
    # A server answering 503 for a moment (a deploy) cannot be provoked from the real app here, so a
    # loopback stub plays the API: created, one 503 while polling, then final and the verdict.
    links = {"page": "http://assay.test/runs/7/"}
    run = {"id": 7, "golden_set": "help-center", "golden_version": "v1", "target": "staging", "links": links}
    queued = {**run, "status": "queued", "final": False, "progress": {"done": 0, "total": 3}}
    final = {**run, "status": "succeeded", "final": True, "progress": {"done": 3, "total": 3, "percent": 100}}
    verdict = {
        "run_id": 7,
        "status": "succeeded",
        "verdict": "warn",
        "failures": [],
        "warnings": [{"message": "core MRR drop 0.0120 >= warn budget 0.01"}],
        "top_losers": [],
        "summary_markdown": "### Relevance gate: **warn**\n",
        "page": links["page"],
    }
    with StubServer() as server:
        server.on(
            None,
            Reply(status=201, json=queued),
            Reply(status=503, text="<html>upstream restarting</html>"),
            Reply(json=final),
            Reply(json=verdict),
        )
        code = main(_args(server.url, "assay_x_y", "--wait", "--poll", "0.05"))
        paths = [(r.method, r.path) for r in server.requests]

    out, err = capsys.readouterr()
    assert code == 0, err
    assert paths == [
        ("POST", "/api/v1/runs/"),
        ("GET", "/api/v1/runs/7/"),
        ("GET", "/api/v1/runs/7/"),
        ("GET", "/api/v1/runs/7/verdict/"),
    ]
    assert "verdict: warn" in out and "WARN  core MRR drop" in out
