"""`assay run`, `assay score` and `assay validate` through the installed console script (a real process)
against the loopback stub server: artifacts, atomic writes, exit codes, messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import REPO, refused_url
from tests.support.stub_server import Reply, StubServer, hits_reply

ASSAY = Path(sys.executable).with_name("assay")

GOLDEN: dict[str, Any] = {
    "version": "2026-08-01",
    "k": 3,
    "queries": [
        {
            "id": "q-1",
            "text": "refund policy",
            "locale": "en-US",
            "filters": {"product": "billing"},
            "stratum": "billing",
            "judgments": [{"doc_id": "d1", "grade": 3}, {"doc_id": "d2", "grade": 1}],
        },
        {
            "id": "q-2",
            "text": "reset password",
            "stratum": "account",
            "judgments": [{"doc_id": "d7", "grade": 2}, {"doc_id": "d8", "grade": 3}],
        },
        {"id": "q-3", "text": "api keys", "judgments": [{"doc_id": "d4", "grade": 2}]},
    ],
}


def assay(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    # Neither the CI's GitHub variables nor its proxies leak into the command under test.
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith("GITHUB_") and "proxy" not in k.lower()
    }
    return subprocess.run(
        [str(ASSAY), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**environment, **(env or {})},
        cwd=cwd or REPO,
    )


@pytest.fixture
def golden_file(tmp_path: Path) -> Path:
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(GOLDEN))
    return path


def script_engine(stub: StubServer) -> None:
    stub.on("refund policy", hits_reply(["d1", "d2", "d3"], headers={"X-Index-Generation": "g7"}))
    stub.on("reset password", hits_reply(["d8", "d9"], headers={"X-Index-Generation": "g7"}))
    stub.on("api keys", hits_reply([], headers={"X-Index-Generation": "g7"}))


def per_query(artifact: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in artifact["per_query"]}


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------------------- run


def test_run_writes_the_artifact_and_exits_0_when_every_query_is_answered(
    stub_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    script_engine(stub_server)
    out = tmp_path / "deep" / "dir" / "relevance.json"

    proc = assay(
        "run",
        "--golden", str(golden_file),
        "--search-url", f"{stub_server.url}/search",
        "--param", "rewrite=true",
        "--param", "mode=fast",
        "--header", "X-Cache-Bypass: 1",
        "--header-env", "Authorization=SEARCH_TOKEN",
        "--generation-header", "X-Index-Generation",
        "--concurrency", "2",
        "--out", str(out),
        env={"SEARCH_TOKEN": "Bearer t0ps3cret"},
    )  # fmt: skip

    assert proc.returncode == 0, proc.stderr
    artifact = json.loads(out.read_text())
    assert artifact["golden_version"] == "2026-08-01" and artifact["k"] == 3
    rows = per_query(artifact)
    assert rows["q-1"]["ids"] == ["d1", "d2", "d3"] and rows["q-1"]["ndcg"] == pytest.approx(
        (7 + 1 / 1.584962500721156) / (7 + 1 / 1.584962500721156)
    )
    assert rows["q-3"]["empty"] is True and rows["q-3"]["error"] is None
    run = artifact["run"]
    assert run["params"] == {"rewrite": True, "mode": "fast"}
    assert run["header_names"] == ["Authorization", "X-Cache-Bypass"]
    assert "t0ps3cret" not in out.read_text()
    assert run["index_generations"] == ["g7"] and run["index_moved"] is False
    assert run["concurrency"] == 2 and run["errors"] == 0 and run["golden_file"] == str(golden_file)
    assert run["started_at"].endswith("Z")
    # What the engine received: the http_json contract with the golden k as size.
    sent = stub_server.requests_for("refund policy")[0]
    assert sent.json == {
        "q": "refund policy",
        "filters": {"product": "billing"},
        "size": 3,
        "locale": "en-US",
        "rewrite": True,
        "mode": "fast",
    }
    assert sent.headers["authorization"] == "Bearer t0ps3cret" and sent.headers["x-cache-bypass"] == "1"
    assert "3/3 queries (100%)" in proc.stderr and f"artifact written to {out}" in proc.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == ["relevance.json"]  # no temp file left


def test_run_defaults_to_artifacts_relevance_json(
    stub_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    script_engine(stub_server)

    proc = assay("run", "--golden", str(golden_file), "--search-url", f"{stub_server.url}/s", cwd=tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "artifacts" / "relevance.json").read_text())["n"] == 3


def test_run_exits_1_and_records_errors_when_some_queries_fail(
    stub_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    script_engine(stub_server)
    stub_server.on("reset password", Reply(status=500, text="boom"))
    stub_server.on("api keys", Reply(text="<html>maintenance</html>"))
    out = tmp_path / "relevance.json"

    proc = assay(
        "run", "--golden", str(golden_file), "--search-url", f"{stub_server.url}/s",
        "--retries", "1", "--out", str(out),
    )  # fmt: skip

    assert proc.returncode == 1
    artifact = json.loads(out.read_text())
    assert [e["id"] for e in artifact["flags"]["errors"]] == ["q-2", "q-3"]
    rows = per_query(artifact)
    assert rows["q-2"]["error"] == "HTTP 500 (text/html; charset=utf-8, 4 bytes) (2 attempts)"
    assert rows["q-2"]["empty"] is False and rows["q-3"]["empty"] is False  # errors are never empties
    assert artifact["run"]["errors"] == 2 and artifact["run"]["retries"] == 1
    assert "error: query q-2: HTTP 500 (text/html; charset=utf-8, 4 bytes) (2 attempts)" in proc.stderr
    assert "the gate will fail closed" in proc.stderr
    no_traceback(proc)


def run_with_short_timeout(
    stub: StubServer, golden_file: Path, out: Path
) -> subprocess.CompletedProcess[str]:
    return assay(
        "run", "--golden", str(golden_file), "--search-url", f"{stub.url}/s",
        "--timeout", "0.2", "--retries", "0", "--out", str(out),
    )  # fmt: skip


def test_run_records_a_timeout_and_a_reply_without_hits_as_errors_and_exits_1(
    stub_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    script_engine(stub_server)
    stub_server.on("reset password", hits_reply(["d8"], delay=2.0))
    stub_server.on("api keys", Reply(json={"results": [{"id": "d4"}]}))
    out = tmp_path / "relevance.json"

    proc = run_with_short_timeout(stub_server, golden_file, out)

    assert proc.returncode == 1, proc.stderr
    rows = per_query(json.loads(out.read_text()))
    assert rows["q-2"]["error"] == "timeout after 0.2s"
    assert rows["q-3"]["error"] == "unexpected response: the response: missing 'hits'"
    for qid in ("q-2", "q-3"):
        assert rows[qid]["empty"] is False and rows[qid]["ndcg"] is None  # errors, never empties
    assert rows["q-1"]["error"] is None and rows["q-1"]["ids"] == ["d1", "d2", "d3"]
    assert "error: query q-2: timeout after 0.2s" in proc.stderr
    assert "error: query q-3: unexpected response: the response: missing 'hits'" in proc.stderr
    no_traceback(proc)


def test_run_records_a_reply_over_the_size_limit_as_that_querys_error(
    stub_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    script_engine(stub_server)
    # Valid JSON that would be read as hits if the cap did not stop it.
    stub_server.on("reset password", hits_reply(["d8"], pad=3 * 1024 * 1024))
    out = tmp_path / "relevance.json"

    proc = assay(
        "run", "--golden", str(golden_file), "--search-url", f"{stub_server.url}/s",
        "--max-reply-mb", "2", "--retries", "0", "--out", str(out),
    )  # fmt: skip

    assert proc.returncode == 1, proc.stderr
    rows = per_query(json.loads(out.read_text()))
    assert rows["q-2"]["error"] == "reply larger than the limit of 2 MB (HTTP 200, application/json)"
    assert rows["q-1"]["error"] is None and rows["q-3"]["error"] is None
    no_traceback(proc)


def test_run_writes_nothing_and_exits_2_when_every_query_times_out(
    stub_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    stub_server.default = hits_reply(["d1"], delay=2.0)
    out = tmp_path / "relevance.json"

    proc = run_with_short_timeout(stub_server, golden_file, out)

    assert proc.returncode == 2
    assert "no query got an answer from" in proc.stderr and "timeout after 0.2s" in proc.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [golden_file]
    no_traceback(proc)


def test_run_refuses_an_invalid_golden_file_listing_every_problem(
    stub_server: StubServer, tmp_path: Path
) -> None:
    bad = json.loads(json.dumps(GOLDEN))
    bad["queries"][0]["judgments"][0]["grade"] = 4
    bad["queries"][1]["judgements"] = []
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(bad))
    out = tmp_path / "relevance.json"

    proc = assay("run", "--golden", str(golden), "--search-url", f"{stub_server.url}/s", "--out", str(out))

    assert proc.returncode == 2
    assert "queries[0].judgments[0].grade" in proc.stderr and "outside the scale" in proc.stderr
    assert "queries[1]" in proc.stderr and "judgements" in proc.stderr
    assert "2 problems" in proc.stderr
    assert not out.exists() and stub_server.requests == []
    no_traceback(proc)


def test_run_writes_nothing_and_exits_2_when_no_query_gets_an_answer(
    golden_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "relevance.json"
    out.write_text('{"previous": true}')

    proc = assay(
        "run",
        "--golden",
        str(golden_file),
        "--search-url",
        refused_url(),
        "--retries",
        "0",
        "--out",
        str(out),
    )

    assert proc.returncode == 2
    assert "no query got an answer from" in proc.stderr and "connect error" in proc.stderr
    assert json.loads(out.read_text()) == {"previous": True}  # the old artifact is untouched
    no_traceback(proc)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--param", "rewrite"], "--param 'rewrite': expected KEY=VALUE"),
        (["--param", "a=1", "--param", "a=2"], "--param a: given twice"),
        (["--param", "q=x"], "params q: would overwrite the request's own fields"),
        (["--header", "NoColon"], "--header 'NoColon': expected Name:value"),
        (["--header", "Bad Name: x"], "is not a valid header name"),
        # A RecursionError and a ValueError (the int-string digit limit) before: each a traceback.
        (["--param", "k=" + "[" * 100_000], "--param k: nested deeper than 64 levels"),
        (["--param", "k=" + "1" * 5000], "--param k: a number is too long to read"),
        (["--header", "X-Tenant: a\x07b"], "a header value cannot contain the control character \\u0007"),
        (["--header-env", "Authorization=ASSAY_UNSET_VARIABLE"], "ASSAY_UNSET_VARIABLE is not set"),
        (["--concurrency", "0"], "argument --concurrency: 0 must be at least 1"),
        (["--concurrency", "65"], "concurrency 65: must be at most 64 requests in flight"),
        (["--max-reply-mb", "0"], "argument --max-reply-mb: 0 must be at least 1"),
        (["--timeout", "nan"], "argument --timeout: nan must be a positive number"),
        (["--adapter", "bing"], "argument --adapter: invalid choice: 'bing'"),
        (["--template", "/nonexistent/t.json"], "--template /nonexistent/t.json: no such file"),
        (["--generation-field", "meta."], "generation-field 'meta.': expected a dotted path"),
    ],
)
def test_run_refuses_bad_arguments_with_one_line(
    golden_file: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    out = tmp_path / "relevance.json"

    proc = assay(
        "run", "--golden", str(golden_file), "--search-url", "http://127.0.0.1:9/s", "--out", str(out), *extra
    )

    assert proc.returncode == 2
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not out.exists()


def test_run_ignores_environment_proxies_unless_told_to_trust_them(
    stub_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    script_engine(stub_server)
    proxy = {"HTTP_PROXY": refused_url().removesuffix("/search")}
    common = ["run", "--golden", str(golden_file), "--search-url", stub_server.url, "--retries", "0"]

    direct = assay(*common, "--out", str(tmp_path / "direct.json"), env=proxy)
    proxied = assay(*common, "--trust-env", "--out", str(tmp_path / "proxied.json"), env=proxy)

    assert direct.returncode == 0, direct.stderr
    assert proxied.returncode == 2 and "no query got an answer" in proxied.stderr
    assert len(stub_server.requests) == 3  # only the direct run reached the engine
    assert not (tmp_path / "proxied.json").exists()


def test_run_refuses_a_missing_golden_file(tmp_path: Path) -> None:
    proc = assay("run", "--golden", str(tmp_path / "nope.json"), "--search-url", "http://127.0.0.1:9/s")

    assert proc.returncode == 2
    assert proc.stderr.strip() == f"assay run: error: golden file {tmp_path / 'nope.json'}: no such file"


def test_run_speaks_elasticsearch_with_a_template_file(
    stub_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    stub_server.default = Reply(
        json={"hits": {"total": {"value": 1}, "hits": [{"_id": "d1", "_score": 1.0}]}}
    )
    template = tmp_path / "template.json"
    template.write_text(json.dumps({"size": "{{size}}", "query": {"match": {"body": "{{q}}"}}}))
    out = tmp_path / "relevance.json"

    proc = assay(
        "run", "--golden", str(golden_file), "--search-url", f"{stub_server.url}/help",
        "--adapter", "elasticsearch", "--template", str(template), "--out", str(out),
    )  # fmt: skip

    assert proc.returncode == 0, proc.stderr
    assert {r.path for r in stub_server.requests} == {"/help/_search"}
    assert sorted(r.json["query"]["match"]["body"] for r in stub_server.requests) == [
        "api keys",
        "refund policy",
        "reset password",
    ]
    assert json.loads(out.read_text())["run"]["adapter"] == "elasticsearch"


# ------------------------------------------------------------------------------------------- score


def test_score_reads_a_trec_run_in_trec_eval_order_and_reports_unknown_queries(
    golden_file: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run.trec"
    # q-1: d2 and d1 tie on score; trec_eval breaks ties by docno descending, so d2 ranks first.
    run.write_text(
        "q-1 Q0 d1 1 5.0 bm25\n"
        "q-1 Q0 d2 2 5.0 bm25\n"
        "q-2 Q0 d8 1 3.0 bm25\n"
        "q-99 Q0 d1 1 1.0 bm25\n"
        "q-98 Q0 d1 1 1.0 bm25\n"
    )
    out = tmp_path / "scored.json"

    proc = assay("score", "--golden", str(golden_file), "--run", str(run), "--out", str(out))

    assert proc.returncode == 0, proc.stderr
    artifact = json.loads(out.read_text())
    rows = per_query(artifact)
    assert rows["q-1"]["ids"] == ["d2", "d1"]
    assert rows["q-3"]["n"] == 0 and rows["q-3"]["empty"] is True  # absent from the run: returned nothing
    assert artifact["flags"]["unknown_queries"] == ["q-99", "q-98"]
    assert "2 run queries are not in the golden file" in proc.stderr and "q-99, q-98" in proc.stderr
    assert artifact["run"]["format"] == "trec" and artifact["run"]["tags"] == ["bm25"]


def test_score_reads_jsonl_results_and_exits_1_for_recorded_errors(golden_file: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text(
        '{"query_id": "q-1", "ids": ["d1", "d2"]}\n'
        "\n"
        '{"query_id": "q-2", "ids": [], "error": "HTTP 503 after 4 attempts"}\n'
        '{"query_id": "q-3", "ids": [4, "d4"]}\n'
    )
    out = tmp_path / "scored.json"

    proc = assay("score", "--golden", str(golden_file), "--run", str(results), "--out", str(out))

    assert proc.returncode == 1
    artifact = json.loads(out.read_text())
    rows = per_query(artifact)
    assert rows["q-1"]["ids"] == ["d1", "d2"] and rows["q-3"]["ids"] == ["4", "d4"]
    assert artifact["flags"]["errors"] == [{"id": "q-2", "error": "HTTP 503 after 4 attempts"}]
    assert artifact["run"]["format"] == "jsonl"
    assert "the gate will fail closed" in proc.stderr


def test_score_lists_every_bad_jsonl_line_and_writes_nothing(golden_file: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text(
        '{"query_id": "q-1", "ids": ["d1"]}\n'
        '{"query_id": "q-2", "ids": "d8"}\n'
        '{"query_id": "q-3", "ids": [null]}\n'
        '{"query_id": "q-1", "ids": []}\n'
        '{"query_id": "q-4", "ids": [], "sorce": 1}\n'
        "{not json}\n"
    )
    out = tmp_path / "scored.json"

    proc = assay("score", "--golden", str(golden_file), "--run", str(results), "--out", str(out))

    assert proc.returncode == 2
    for expected in (
        "line 2: ids: expected a list",
        "line 3: ids: expected a list",
        "line 4: query_id q-1 appears twice (first at line 1)",
        "line 5: unknown field sorce",
        "line 6: invalid JSON at column 2",
    ):
        assert expected in proc.stderr
    assert not out.exists()
    no_traceback(proc)


def test_score_lists_bad_trec_lines(golden_file: Path, tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q-1 Q0 d1 1 high bm25\nq-1 Q0 d2\n")

    proc = assay("score", "--golden", str(golden_file), "--run", str(run), "--out", str(tmp_path / "o.json"))

    assert proc.returncode == 2
    assert (
        "line 1: score 'high' is not a number" in proc.stderr
        and "line 2: expected at least 6 columns" in proc.stderr
    )
    assert not (tmp_path / "o.json").exists()


def test_score_and_run_agree_on_the_same_lists(
    stub_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    script_engine(stub_server)
    ran, scored = tmp_path / "ran.json", tmp_path / "scored.json"
    assert (
        assay(
            "run", "--golden", str(golden_file), "--search-url", stub_server.url, "--out", str(ran)
        ).returncode
        == 0
    )
    lines = [
        json.dumps({"query_id": row["id"], "ids": row["ids"]})
        for row in json.loads(ran.read_text())["per_query"]
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("\n".join(lines) + "\n")

    assert (
        assay("score", "--golden", str(golden_file), "--run", str(results), "--out", str(scored)).returncode
        == 0
    )

    a, b = json.loads(ran.read_text()), json.loads(scored.read_text())
    for key in ("ndcg", "mrr", "precision_at_k", "empty_rate", "per_query"):
        assert a[key] == b[key]


# ------------------------------------------------------------------------------------------- validate


def test_validate_accepts_a_good_file_and_prints_warnings(tmp_path: Path) -> None:
    data = json.loads(json.dumps(GOLDEN))
    data["queries"][2]["judgments"] = [{"doc_id": "d4", "grade": 0}]
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(data))

    proc = assay("validate", "--golden", str(golden))

    assert proc.returncode == 0, proc.stderr
    assert "valid golden file version 2026-08-01: 3 queries (3 core), 5 judgments, k=3" in proc.stdout
    assert "no_positive_judgments" in proc.stderr and "q-3" in proc.stderr


def test_validate_lists_every_problem_and_exits_2(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        '{"version": "v1", "k": 0}\n'
        '{"id": "a", "text": "x", "judgments": [{"doc_id": "d", "grade": 9}]}\n'
        '{"id": "a", "text": "y"\n'
    )

    proc = assay("validate", "--golden", str(golden))

    assert proc.returncode == 2
    assert "line 1" in proc.stderr and "line 2" in proc.stderr and "line 3" in proc.stderr
    no_traceback(proc)


def test_the_command_line_imports_no_django(golden_file: Path) -> None:
    code = (
        "import sys; from assay.cli import main; "
        f"rc = main(['validate', '--golden', {str(golden_file)!r}]); "
        "assert rc == 0; "
        "assert not [m for m in sys.modules if m.split('.')[0] == 'django'], 'django imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)

    assert proc.returncode == 0, proc.stderr


def test_a_reader_that_closes_the_output_early_gets_one_worded_line_and_no_traceback() -> None:
    """`assay validate ... | head -c 0`: the pipe closes before the command writes; it says so once (it
    used to print "error:: Broken pipe", and Python's own report of the closed stdout at exit)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "assay.cli", "validate", "--golden", str(REPO / "demo" / "golden.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader is gone before anything is written
    err = child.stderr.read().decode()
    code = child.wait()
    assert code == 2, err
    assert err == "assay validate: stopped: its output was closed before it finished\n"
