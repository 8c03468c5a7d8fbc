"""No hostile form of a loopback address, in any outbound field, reaches a private address (assay.netpolicy).

For every kind of outbound URL (search target, judge base URL and its "try", run-notification webhook, git
export remote, candidate pool from a live endpoint, the CLI's `--search-url`) and every form below, with
ASSAY_TARGET_ALLOW_PRIVATE=false:

- at save, the service (or the CLI's start) refuses it in words that name the kind of address;
- at use, a loopback server started by the test receives no request, and the caller gets a worded error.

With the switch on, the same server IS reached through the same call (the control that shows the test
can see a request). A second table checks the connect-time guard of each client alone (aiohttp, httpx,
urllib3 under dulwich) on the address actually connected to, including a DNS name that resolves to
loopback: no DNS server runs here, so that name is answered by a stand-in for `socket.getaddrinfo`, the
DNS boundary, and nothing else is replaced.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from assay import git_export, git_remote, git_repo
from assay.cli import main as cli_main
from assay.golden.model import GoldenQuery
from assay.harness import search_all_sync
from assay.harness_config import HarnessConfig
from assay.netpolicy import ALLOW_PRIVATE_ENV, AddressRefused
from assay.outbound import PublicPoolManager, public_httpx_transport
from assay.transport import public_connector
from evaluation.runs.services import notifications
from evaluation.runs.services.targets import target_create, webhook_problems
from golden_io.services import ExportConfigError, git_export_configure
from labeling.models import Document, GoldenSet, Query
from labeling.services.judges import JudgeError, judge_settings_problems, judge_try
from labeling.services.pools import pool_fetch
from tests.factories import DocumentFactory, GoldenSetFactory, QueryFactory, grant_secrets
from tests.support.judge_stub import judge_settings
from tests.support.stub_server import Reply, StubServer

pytestmark = pytest.mark.django_db

# (label, host as typed in the URL, which stub it reaches when allowed: "4" for 127.0.0.1, "6" for ::1)
FORMS = [
    ("full-width digits", "１２７.０.０.１", "4"),
    ("ideographic full stops", "127。0。0。1", "4"),
    ("full-width full stops", "127．0．0．1", "4"),
    ("halfwidth ideographic full stops", "127｡0｡0｡1", "4"),
    ("circled digits", "①②⑦.⓪.⓪.①", "4"),
    ("decimal", "2130706433", "4"),
    ("hex", "0x7f000001", "4"),
    ("octal", "0177.0.0.1", "4"),
    ("short form", "127.1", "4"),
    ("IPv6 loopback", "[::1]", "6"),
    ("IPv4-mapped IPv6", "[::ffff:127.0.0.1]", "4"),
    ("trailing dot", "localhost.", "4"),
    ("userinfo", "user@127.0.0.1", "4"),
    ("percent-encoded trailing dot", "127.0.0.1%2e", "4"),
    # IPv4 embedded in IPv6 other than mapped: each judged by the IPv4 address it carries.
    ("6to4", "[2002:7f00:1::]", "4"),
    ("Teredo", "[2001:0:4136:e378:8000:63bf:80ff:fffe]", "4"),
    ("IPv4-compatible", "[::127.0.0.1]", "4"),
    ("local-use NAT64", "[64:ff9b:1::7f00:1]", "4"),
    ("IPv4-translated", "[::ffff:0:7f00:1]", "4"),
    # Characters a resolver ignores, removed before the host is judged.
    ("soft hyphen", "local\u00adhost", "4"),
    ("zero-width space", "local\u200bhost", "4"),
    ("zero-width joiner", "127.0.0.\u200d1", "4"),
    ("word joiner", "\u2060localhost", "4"),
    ("byte order mark", "localhost\ufeff", "4"),
]
IDS = [label for label, _, _ in FORMS]
HOOK = "ASSAY_SECRET_NET_POLICY_HOOK"


@pytest.fixture(scope="module")
def stubs() -> Iterator[dict[str, StubServer]]:
    with StubServer() as v4, StubServer(host="::1") as v6:
        yield {"4": v4, "6": v6}


def url_for(host: str, stub: StubServer, path: str = "/s") -> str:
    return f"http://{host}:{stub.port}{path}"


@pytest.fixture
def policy_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "false")


@pytest.fixture
def policy_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "true")


@pytest.fixture
def golden_file(tmp_path: Path) -> Path:
    path = tmp_path / "golden.json"
    query: dict[str, Any] = {"id": "q-1", "text": "refund", "locale": "en-US", "filters": {}}
    query["judgments"] = [{"doc_id": "d1", "grade": 2}]
    path.write_text(json.dumps({"version": "v1", "k": 3, "queries": [query]}))
    return path


# ------------------------------------------------------------------------- each kind: save and use

REFUSAL = "Assay may reach public addresses only"


def save_target(url: str, **_: Any) -> str:
    try:
        target_create(name="t", url=url)
    except ValueError as exc:
        return str(exc)
    return ""


def use_target(url: str, **_: Any) -> str:
    try:
        config = HarnessConfig(url=url, retries=0, timeout=3)
    except ValueError as exc:  # a chunk configures the run from the target's URL
        return str(exc)
    (result,) = search_all_sync([GoldenQuery("q-1", "refund", ())], config)
    return result.error or ""


def save_judge(url: str, **_: Any) -> str:
    golden_set = cast(GoldenSet, GoldenSetFactory())
    return "; ".join(judge_settings_problems(judge_settings(url), golden_set))


def use_judge(url: str, **_: Any) -> str:
    """The judge form's "try" button."""
    golden_set = cast(GoldenSet, GoldenSetFactory())
    pair = cast(tuple[Query, Document], (QueryFactory(golden_set=golden_set), DocumentFactory()))
    try:
        (tried,) = judge_try(golden_set=golden_set, settings=judge_settings(url), pairs=[pair])
    except JudgeError as exc:
        return str(exc)
    return tried.reply.failure or ""


def save_webhook(url: str, monkeypatch: pytest.MonkeyPatch, **_: Any) -> str:
    monkeypatch.setenv(HOOK, url)
    return "; ".join(webhook_problems(HOOK))


def use_webhook(url: str, monkeypatch: pytest.MonkeyPatch, **_: Any) -> str:
    monkeypatch.setenv(HOOK, url)
    golden_set = cast(GoldenSet, GoldenSetFactory())
    grant_secrets(golden_set, HOOK)  # granted: only the address is judged here
    message = notifications.VerdictMessage("s", "b", {"text": "fail"})
    try:
        notifications._post_webhook(message, HOOK, golden_set)
    except (notifications._Refused, notifications._Transient) as exc:
        return str(exc)
    return ""


def save_remote(url: str, tmp_path: Path, **_: Any) -> str:
    try:
        git_export_configure(
            golden_set=cast(GoldenSet, GoldenSetFactory()),
            repository_path=str(tmp_path / "export"),
            file_path="golden.json",
            remote_url=url,
        )
    except ExportConfigError as exc:
        return str(exc)
    return ""


def use_remote(url: str, tmp_path: Path, **_: Any) -> str:
    try:
        result = git_export.git_write(
            repository_path=tmp_path / "export",
            branch="main",
            files={"golden.json": b"{}\n"},
            message="golden",
            author=git_export.Author("A", "a@example.com"),
            remote=git_remote.Remote(url),
        )
    except git_repo.GitExportError as exc:
        return str(exc)
    return result.push_error or ""


def save_pool(url: str, **_: Any) -> str:
    """A pool from a live endpoint is fetched when its form is sent: saving and using are one call."""
    golden_set = cast(GoldenSet, GoldenSetFactory())
    QueryFactory(golden_set=golden_set)
    report = pool_fetch(golden_set=golden_set, url=url, system="live")
    return "; ".join(str(problem) for problem in report.problems)


def run_cli(url: str, golden_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], **_: Any) -> str:
    out = tmp_path / "run.json"
    argv = ["run", "--golden", str(golden_file), "--search-url", url, "--out", str(out), "--retries", "0"]
    rc = cli_main([*argv, "--timeout", "3", "--quiet"])
    return capsys.readouterr().err if rc == 2 else ""  # 2: the command refused to start


# kind -> (save, use, the path appended to the stub's address)
KINDS: dict[str, tuple[Callable[..., str], Callable[..., str], str]] = {
    "search target": (save_target, use_target, "/s"),
    "judge base URL": (save_judge, use_judge, "/v1"),
    "webhook": (save_webhook, use_webhook, "/hook"),
    "git remote": (save_remote, use_remote, "/repo.git"),
    "pool from a live endpoint": (save_pool, save_pool, "/s"),
    "CLI --search-url": (run_cli, run_cli, "/s"),
}


@pytest.fixture
def context(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, golden_file: Path, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    return {"monkeypatch": monkeypatch, "tmp_path": tmp_path, "golden_file": golden_file, "capsys": capsys}


def _received(stub: StubServer, before: int) -> int:
    return len(stub.requests) - before


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(("label", "host", "family"), FORMS, ids=IDS)
@pytest.mark.usefixtures("policy_off")
def test_no_hostile_form_is_saved_or_reaches_loopback(
    kind: str, label: str, host: str, family: str, stubs: dict[str, StubServer], context: dict[str, Any]
) -> None:
    save, use, path = KINDS[kind]
    stub = stubs[family]
    url = url_for(host, stub, path)
    before = len(stub.requests)

    saved = save(url, **context)
    used = use(url, **context)

    # A target and a git remote over http refuse credentials in the URL (a user may be a token) before
    # they judge the host: refused all the same.
    stored = kind in ("search target", "git remote")
    first = "credentials in the URL" if (stored, label) == (True, "userinfo") else REFUSAL
    assert first in saved, saved
    assert ("loopback address" in used and REFUSAL in used) or (first != REFUSAL and first in used), used
    assert _received(stub, before) == 0


# The control: with private addresses allowed, the same call reaches the same server, through the plain
# literal and, for the kinds called by aiohttp, through the full-width form the attack used (yarl turns it
# into 127.0.0.1). Other forms are not reached here even when allowed (httpx and urllib3 refuse the
# Unicode ones, this resolver the numeric short forms), which the policy does not rely on.
CONTROLS = [(kind, "127.0.0.1") for kind in KINDS] + [
    (kind, "１２７.０.０.１")
    for kind in ("search target", "judge base URL", "pool from a live endpoint", "CLI --search-url")
]


@pytest.mark.parametrize(("kind", "host"), CONTROLS)
@pytest.mark.usefixtures("policy_on")
def test_with_private_addresses_allowed_the_same_call_reaches_the_server(
    kind: str, host: str, stubs: dict[str, StubServer], context: dict[str, Any]
) -> None:
    _save, use, path = KINDS[kind]
    stub = stubs["4"]
    before = len(stub.requests)

    use(url_for(host, stub, path), **context)

    assert _received(stub, before) > 0


# ------------------------------------------------------------------------- the guard at connect, alone


@pytest.fixture
def intranet(monkeypatch: pytest.MonkeyPatch) -> str:
    """`intranet.test` resolves to loopback: the stand-in answers that one name at the DNS boundary and
    passes every other lookup to the real resolver (which answers loopback literals without DNS)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host in ("intranet.test", b"intranet.test") else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return "intranet.test"


def aiohttp_get(url: str, allow_private: bool) -> None:
    import aiohttp

    async def get() -> None:
        connector = public_connector(limit=1, allow_private=allow_private)
        async with aiohttp.ClientSession(connector=connector) as session, session.get(url) as reply:
            await reply.read()

    asyncio.run(get())


def httpx_get(url: str, allow_private: bool) -> None:
    transport = public_httpx_transport() if not allow_private else httpx.HTTPTransport()
    with httpx.Client(transport=transport) as client:
        client.get(url)


def urllib3_get(url: str, allow_private: bool) -> None:
    import urllib3

    manager = urllib3.PoolManager(retries=False) if allow_private else PublicPoolManager(retries=False)
    manager.request("GET", url)


CLIENTS = {"aiohttp": aiohttp_get, "httpx": httpx_get, "urllib3": urllib3_get}


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("host", ["127.0.0.1", "[::ffff:127.0.0.1]", "intranet"])
def test_each_client_refuses_a_private_peer_at_connect(
    client: str, host: str, stubs: dict[str, StubServer], intranet: str
) -> None:
    """Past every URL check (these calls make none), the address connected to is judged: literals too."""
    stub = stubs["4"]
    url = url_for(intranet if host == "intranet" else host, stub, "/probe")
    before = len(stub.requests)

    with pytest.raises(Exception) as refused:
        CLIENTS[client](url, False)

    assert "is a loopback address" in str(refused.value) or _refusal_in(refused.value)
    assert _received(stub, before) == 0
    CLIENTS[client](url, True)
    assert _received(stub, before) == 1


def _refusal_in(exc: BaseException) -> bool:
    from assay.netpolicy import refused_in

    return isinstance(refused_in(exc), AddressRefused)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_name_that_resolves_to_loopback_is_saved_but_never_reached(
    kind: str, stubs: dict[str, StubServer], context: dict[str, Any], intranet: str, policy_off: None
) -> None:
    """A name is not resolved at save (its answer may change before it is used): it is judged on each
    connection, against every address it resolves to."""
    save, use, path = KINDS[kind]
    stub = stubs["4"]
    url = url_for(intranet, stub, path)
    before = len(stub.requests)

    if save is not use:  # a pool and the CLI are called as they are given: nothing is saved first
        assert save(url, **context) == ""
    used = use(url, **context)

    assert "intranet.test resolves to 127.0.0.1, which is a loopback address" in used, used
    assert _received(stub, before) == 0


@pytest.mark.parametrize(
    "remote",
    [
        "git@１２７.０.０.１:assay/golden.git",  # scp-like ssh, full-width digits
        "ssh://git@127。0。0。1/assay/golden.git",
        "git://0x7f000001/golden.git",
        "ssh://[::ffff:127.0.0.1]/golden.git",
        "127.1:golden.git",  # `host:path` is ssh to 127.1 (git and dulwich read it so), not a directory
    ],
)
@pytest.mark.usefixtures("policy_off")
def test_ssh_and_git_remotes_on_loopback_are_refused_before_anything_is_written(
    remote: str, context: dict[str, Any], tmp_path: Path
) -> None:
    assert "loopback address" in save_remote(remote, **context)
    assert "loopback address" in use_remote(remote, **context)
    assert not (tmp_path / "export").exists()  # refused before the repository was even created


@pytest.mark.usefixtures("policy_off")
def test_an_ssh_remote_whose_name_resolves_to_loopback_is_not_pushed_to(
    context: dict[str, Any], intranet: str
) -> None:
    """Saved (a name), refused just before the push on what it resolves to: no ssh is started."""
    remote = f"git@{intranet}:assay/golden.git"
    assert save_remote(remote, **context) == ""
    assert "intranet.test resolves to 127.0.0.1, which is a loopback address" in use_remote(remote, **context)


# ------------------------------------------------------------------------- malformed URLs, no URL in words

MARK = "s3cr3tMARK"  # stands for a token in a URL's path or query: it must appear in no error text

MALFORMED = [
    ("IPv6 literal without its bracket", f"http://[::1/{MARK}?x={MARK}"),
    ("not an IPv6 literal", f"http://[zz::1]/{MARK}?x={MARK}"),
    ("port past 65535", f"http://api.example:65536/{MARK}?x={MARK}"),
    ("two ports", f"http://api.example:80:80/{MARK}?x={MARK}"),
    ("empty label", f"http://api..example/{MARK}?x={MARK}"),
]


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(("label", "url"), MALFORMED, ids=[label for label, _ in MALFORMED])
@pytest.mark.parametrize("allowed", [False, True], ids=["private refused", "private allowed"])
def test_a_malformed_url_is_refused_in_words_at_save_and_use(
    kind: str, label: str, url: str, allowed: bool, context: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where `urlsplit` raised (a 500 on the judge's and the git export's forms) or a client quoted the URL
    back (aiohttp's InvalidUrlClientError on the judge's try), each kind answers in words without it."""
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, str(allowed).lower())
    save, use, _path = KINDS[kind]

    saved = save(url, **context)
    used = use(url, **context)

    assert saved and used, (saved, used)
    assert MARK not in saved and MARK not in used, (saved, used)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.usefixtures("policy_on")
def test_no_transport_error_quotes_the_url(kind: str, context: dict[str, Any]) -> None:
    """A connection refused on loopback: each client's error (aiohttp's, httpx's, urllib3's under dulwich,
    which quotes the path and query) is said without the URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: connections to it are refused
        port = sock.getsockname()[1]
        _save, use, _path = KINDS[kind]
        used = use(f"http://127.0.0.1:{port}/{MARK}/x?x={MARK}", **context)
    assert used and MARK not in used, used


@pytest.mark.usefixtures("policy_on")
def test_a_git_servers_refusal_is_said_without_the_url(tmp_path: Path) -> None:
    """dulwich words an unexpected answer with the URL it asked (`unexpected http resp 403 for http://...`)."""
    with StubServer(default=Reply(status=403, text="forbidden")) as stub:
        error = use_remote(f"http://127.0.0.1:{stub.port}/{MARK}/repo.git?x={MARK}", tmp_path=tmp_path)
        assert stub.requests  # the server was asked, and answered 403
    assert error.startswith("push to the remote failed: GitProtocolError: unexpected http resp 403 for "), (
        error
    )
    assert MARK not in error and "(the URL)" in error, error


# ------------------------------------------------------------------------- credentials in a stored URL

STORED_CREDENTIALS = [
    ("user and password", "https://bot:hunter2@api.example/v1", "credentials in the URL (user:password@)"),
    ("a token as the user", "https://ghp_hunter2@api.example/v1", "credentials in the URL (user:password@)"),
    ("api-key", "https://api.example/v1?api-key=hunter2", "query parameter api-key looks like a credential"),
    ("key", "https://api.example/v1?key=hunter2", "query parameter key looks like a credential"),
    ("sig", "https://api.example/v1?sv=1&sig=hunter2", "query parameter sig looks like a credential"),
    ("access_token", "https://api.example/v1?access_token=x", "query parameter access_token looks like a"),
]
# kind -> where its words send the secret instead (the secret variables of docs/deployment.md, "Secrets")
SECRET_PLACE = {
    "search target": '{"env": "VARIABLE_NAME"}',
    "judge base URL": "API key variable",
    "git remote": "username and password fields",
}


@pytest.mark.parametrize("kind", list(SECRET_PLACE))
@pytest.mark.parametrize(("label", "url", "says"), STORED_CREDENTIALS, ids=[c[0] for c in STORED_CREDENTIALS])
@pytest.mark.usefixtures("policy_on")
def test_a_url_with_credentials_is_not_saved_in_any_stored_kind(
    kind: str, label: str, url: str, says: str, context: dict[str, Any]
) -> None:
    save, _use, _path = KINDS[kind]
    saved = save(url, **context)
    assert says in saved and SECRET_PLACE[kind] in saved, saved
    assert "hunter2" not in saved
