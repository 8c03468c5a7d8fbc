"""`assay remote run`: start an evaluation run on an Assay server from CI and exit by its verdict.

    assay remote run --server URL --token TOKEN --golden-set S --target T [--version V]
        [--param K=V]... [--wait] [--timeout S] [--summary FILE]

Talks to the REST API with httpx only (no Django: CI needs just the package). Without `--wait` it
starts the run, prints its id and page, and exits 0. With `--wait` it polls the run's status (progress
on stderr) until it finishes and exits by the verdict: 0 pass, warn or none (no baseline, nothing
failed), 1 fail; 2 for everything that gives no verdict: bad arguments, authentication or permission
errors, an unknown set, target or version, a run that failed or was cancelled, the timeout.
`--summary FILE` writes the gate as markdown (a PR comment); the token may also come from ASSAY_TOKEN.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.artifacts import write_atomic
from assay.options import UsageError, parse_params, positive_float
from assay.urls import url_free

EXIT_PASS, EXIT_FAIL, EXIT_UNUSABLE = 0, 1, 2
TOKEN_ENV = "ASSAY_TOKEN"  # noqa: S105  (the name of the variable, not a token)
DEFAULT_TIMEOUT_S = 3600.0
POLL_EVERY_S = 1.0
REQUEST_TIMEOUT_S = 30.0
# Transient server trouble while polling (a deploy restarting the web process) is waited out this often.
POLL_RETRIES = 5

if TYPE_CHECKING:
    import httpx


class RemoteError(Exception):
    """No verdict can be had: the message is one line for stderr, the exit code is 2. `transient`: the
    server may answer on a second try (a 5xx, a dropped connection), which polling waits out."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


def _api(server: str, path: str) -> str:
    return f"{server.rstrip('/')}/api/v1/{path.lstrip('/')}"


def _detail(response: httpx.Response) -> str:
    """The API's error body in one line: detail, then each problem."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip().splitlines()
        return text[0][:200] if text else response.reason_phrase
    if isinstance(body, dict):
        parts = [str(body.get("detail", ""))] if body.get("detail") else []
        parts += [str(p) for p in body.get("problems", [])]
        parts += [
            f"{key}: {' '.join(map(str, value)) if isinstance(value, list) else value}"
            for key, value in body.items()
            if key not in ("detail", "problems")
        ]
        return "; ".join(p for p in parts if p) or response.reason_phrase
    return str(body)[:200]


def _check(response: httpx.Response, what: str) -> Any:
    if response.status_code == 401:
        raise RemoteError(f"{what}: authentication failed (HTTP 401): {_detail(response)}")
    if response.status_code == 403:
        raise RemoteError(f"{what}: not allowed (HTTP 403): {_detail(response)}")
    if response.status_code == 404:
        raise RemoteError(
            f"{what}: not found, or not visible to this token's user (HTTP 404): {_detail(response)}"
        )
    if response.status_code >= 400:
        raise RemoteError(
            f"{what}: HTTP {response.status_code}: {_detail(response)}", transient=response.status_code >= 500
        )
    try:
        return response.json()
    except ValueError:
        raise RemoteError(f"{what}: the server did not answer JSON (is --server an Assay server?)") from None


class Client:
    def __init__(self, server: str, token: str) -> None:
        import httpx  # here: every `assay` command builds this module's parser, only `remote` needs httpx

        self.server = server
        self.http = httpx.Client(
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=REQUEST_TIMEOUT_S,
            follow_redirects=False,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def _send(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        import httpx

        url = _api(self.server, path)
        try:
            response = self.http.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            # Named by its option, never quoted (docs/deployment.md, "No error quotes a URL"): a server URL
            # may carry a secret, and CI logs are read widely.
            why = url_free(str(exc), [url, self.server])
            raise RemoteError(
                f"{what}: cannot reach the Assay server (--server): {type(exc).__name__}: {why}",
                transient=True,
            ) from None
        return _check(response, what)

    def start(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self._send("POST", "runs/", "starting the run", json=body))

    def status(self, run_id: int) -> dict[str, Any]:
        last: RemoteError | None = None
        for attempt in range(POLL_RETRIES):
            try:
                return dict(self._send("GET", f"runs/{run_id}/", f"run {run_id}"))
            except RemoteError as exc:
                if not exc.transient:
                    raise
                last = exc
                time.sleep(min(2.0**attempt, 10.0))
        assert last is not None
        raise last

    def verdict(self, run_id: int) -> dict[str, Any]:
        return dict(self._send("GET", f"runs/{run_id}/verdict/", f"run {run_id} verdict"))


def _progress_line(run: dict[str, Any]) -> str:
    p = run.get("progress") or {}
    return (
        f"run {run['id']}: {run['status']} {p.get('done', 0)}/{p.get('total', 0)} "
        f"({p.get('percent', 0):.0f}%), {p.get('errored', 0)} errored"
    )


def _wait(
    client: Client,
    run: dict[str, Any],
    *,
    timeout: float,
    poll: float,
    say: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    deadline = clock() + timeout
    shown = ""
    while True:
        # The start's reply says which run and where (a runs:write reply carries nothing it did): its
        # status, progress and error come from polling, the first time at once.
        run = client.status(int(run["id"]))
        line = _progress_line(run)
        if line != shown:
            say(line)
            shown = line
        if run.get("final"):
            return run
        if clock() >= deadline:
            raise RemoteError(
                f"run {run['id']} still {run['status']} after {timeout:g}s (--timeout); it goes on: "
                f"{run['links']['page']}"
            )
        time.sleep(poll)


def _print_verdict(verdict: dict[str, Any]) -> None:
    from assay.gate_render import log_line, one_line

    # The server's text holds the golden file's (stratum, query text): on one line each, and no line a
    # CI workflow command, as `assay gate` prints it.
    def say(line: str) -> None:
        print(log_line(line))

    say(f"verdict: {one_line(verdict['verdict'])} (run {verdict['run_id']}, {one_line(verdict['status'])})")
    for finding in verdict.get("failures", []):
        say(f"FAIL  {one_line(finding['message'])}")
    for finding in verdict.get("warnings", []):
        say(f"WARN  {one_line(finding['message'])}")
    losers = verdict.get("top_losers") or []
    if losers:
        say("top losers:")
        for loser in losers[:10]:
            say(
                f"  {one_line(loser['id'])} {one_line(repr(loser.get('text', '')))}: "
                f"nDCG {loser['baseline_ndcg']:.4f} -> {loser['current_ndcg']:.4f}"
            )
    say(f"report: {one_line(verdict['page'])}")


def exit_code_for(run: dict[str, Any], verdict: dict[str, Any] | None) -> int:
    """0 pass / warn / none, 1 fail, 2 when the run gave no verdict (failed or cancelled)."""
    if run.get("status") != "succeeded" or verdict is None:
        return EXIT_UNUSABLE
    return EXIT_FAIL if verdict.get("verdict") == "fail" else EXIT_PASS


def cmd_remote_run(args: argparse.Namespace) -> int:
    """Start the run; with --wait, follow it and exit by its verdict (module docstring)."""
    say: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    token = args.token or os.environ.get(TOKEN_ENV, "")
    try:
        if not token:
            raise UsageError(f"--token: give the API token (or set {TOKEN_ENV})")
        if not args.server.startswith(("http://", "https://")):
            raise UsageError(f"--server {args.server!r}: expected http(s)://host[:port]")
        if args.summary and not args.wait:
            raise UsageError("--summary needs --wait (the verdict is known only when the run finishes)")
        body: dict[str, Any] = {
            "golden_set": args.golden_set,
            "target": args.target,
            "params": parse_params(args.param),
            "trigger": "ci",
        }
        if args.version:
            body["version"] = args.version
        if args.rescore_baseline:
            body["rescore_baseline"] = True
        if args.rebaseline:
            body["rebaseline"] = True
        with Client(args.server, token) as client:
            run = client.start(body)
            say(f"run {run['id']} started: {run['golden_set']}@{run['golden_version']} on {run['target']}")
            if run.get("rescore_baseline"):
                say(
                    f"gated against the baseline re-scored on {run['golden_version']} "
                    "if the baseline is on another version"
                )
            say(f"report page: {run['links']['page']}")
            if not args.wait:
                print(run["id"])
                return EXIT_PASS
            run = _wait(client, run, timeout=args.timeout, poll=args.poll, say=say)
            verdict = client.verdict(int(run["id"]))
    except UsageError as exc:
        print(f"assay remote run: error: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    except RemoteError as exc:
        print(f"assay remote run: error: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    if args.summary:
        try:
            write_atomic(Path(args.summary), verdict["summary_markdown"])
        except OSError as exc:
            print(f"assay remote run: error: {args.summary}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_UNUSABLE
    code = exit_code_for(run, verdict)
    if run["status"] != "succeeded":
        why = f": {run['error_message']}" if run.get("error_message") else ""
        print(f"assay remote run: run {run['id']} {run['status']}{why}; no verdict", file=sys.stderr)
    else:
        _print_verdict(verdict)
    return code


def add_remote_parser(subparsers: Any) -> argparse.ArgumentParser:
    """`assay remote run ...` on the `assay` command's subparsers."""
    remote = subparsers.add_parser("remote", help="work with an Assay server through its API (CI)")
    commands = remote.add_subparsers(dest="remote_command", required=True, metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="start an evaluation run on the server; with --wait exit by its verdict (0/1/2)",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    run.add_argument(
        "--server", required=True, metavar="URL", help="the Assay server, e.g. https://assay.example"
    )
    run.add_argument("--token", metavar="TOKEN", help=f"API token with runs:write and read (or {TOKEN_ENV})")
    run.add_argument("--golden-set", required=True, metavar="SLUG")
    run.add_argument("--target", required=True, metavar="NAME", help="search target name")
    run.add_argument(
        "--version",
        metavar="NAME",
        help="golden version (default: the version of the target's baseline, else the set's newest); "
        "another version than the baseline's is refused unless --rescore-baseline or --rebaseline",
    )
    run.add_argument(
        "--rescore-baseline",
        action="store_true",
        help="the baseline is on another version: gate against its lists re-scored on this one",
    )
    run.add_argument(
        "--rebaseline", action="store_true", help="gate as a rebaseline: identity differences are notes"
    )
    run.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="K=V",
        help="override a target param or stage (JSON value)",
    )
    run.add_argument("--wait", action="store_true", help="follow the run and exit by its verdict")
    run.add_argument(
        "--timeout",
        type=positive_float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"with --wait: give up after S seconds, exit 2 (default {DEFAULT_TIMEOUT_S:g})",
    )
    run.add_argument("--poll", type=positive_float, default=POLL_EVERY_S, help=argparse.SUPPRESS)
    run.add_argument("--summary", metavar="FILE", help="with --wait: write the gate as markdown (PR comment)")
    run.set_defaults(handler=cmd_remote_run)
    return remote
