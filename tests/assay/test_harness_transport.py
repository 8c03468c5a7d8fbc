"""The harness's HTTP transport against real loopback sockets: how connections fail, proxies and TLS
settings from the environment (only with trust_env), redirects, cookies and URL credentials.

A proxy here is the stub server itself: an HTTP proxy receives the request with an absolute URL, which
the stub records like any other, so the test sees exactly what the proxy was sent.
"""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from assay import harness_http
from assay.golden.model import GoldenQuery
from assay.harness import search_all_sync
from assay.harness_config import HarnessConfig
from assay.results import QueryResult
from tests.support.processes import free_port, refused_url
from tests.support.stub_server import Reply, StubServer, hits_reply

FAST: dict[str, Any] = {"backoff_base": 0.01, "backoff_max": 0.05}
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def q(text: str) -> GoldenQuery:
    return GoldenQuery(id=f"q-{text}", text=text)


def only(results: list[QueryResult]) -> QueryResult:
    assert len(results) == 1
    return results[0]


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy variable from the machine running the tests leaks into a test that sets its own."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


@contextmanager
def unanswered_port() -> Iterator[int]:
    """A loopback port whose listen queue is full: the kernel drops further SYNs, so a connect hangs
    until the client's connect timeout (no traffic leaves the machine)."""
    with ExitStack() as stack:
        server = stack.enter_context(socket.socket())
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = int(server.getsockname()[1])
        for _ in range(8):  # never accepted: they fill the queue
            filler = stack.enter_context(socket.socket())
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        yield port


def test_a_refused_connection_names_the_host_and_the_reason() -> None:
    url = refused_url()
    port = url.split(":")[2].split("/")[0]

    result = only(search_all_sync([q("x")], HarnessConfig(url=url, retries=1, **FAST)))

    assert result.error == f"connect error: 127.0.0.1:{port}: Connection refused (2 attempts)"
    assert result.status is None and result.attempts == 2


def test_a_connect_that_never_completes_is_a_connect_timeout() -> None:
    with unanswered_port() as port:
        cfg = HarnessConfig(url=f"http://127.0.0.1:{port}/search", timeout=0.2, retries=1, **FAST)

        result = only(search_all_sync([q("x")], cfg))

    assert result.error == "connect timeout after 0.2s (2 attempts)"
    assert result.status is None and result.attempts == 2


def test_a_connect_that_never_completes_is_named_so_whichever_timer_ends_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # On a loaded machine the whole-request deadline can run out before aiohttp's connect timeout, which
    # starts a moment later; here it always does (no grace at all).
    monkeypatch.setattr(harness_http, "_DEADLINE_GRACE_S", -0.1)
    with unanswered_port() as port:
        cfg = HarnessConfig(url=f"http://127.0.0.1:{port}/search", timeout=0.2, retries=1, **FAST)

        result = only(search_all_sync([q("x")], cfg))

    assert result.error == "connect timeout after 0.2s (2 attempts)"


def test_a_redirect_is_reported_not_followed(stub_server: StubServer) -> None:
    stub_server.on("moved", Reply(status=302, headers={"Location": f"{stub_server.url}/elsewhere"}))

    result = only(search_all_sync([q("moved")], HarnessConfig(url=f"{stub_server.url}/search", **FAST)))

    assert result.error == "HTTP 302: expected a 2xx reply"
    assert result.status == 302 and result.attempts == 1
    assert [r.path for r in stub_server.requests] == ["/search"]


def test_cookies_an_engine_sets_are_not_sent_with_later_queries(stub_server: StubServer) -> None:
    stub_server.on("first", hits_reply(["a"], headers={"Set-Cookie": "session=abc; Path=/"}))
    # A host name, not an IP: cookie jars refuse cookies from IP addresses, which would hide a kept one.
    cfg = HarnessConfig(url=f"http://localhost:{stub_server.port}/search", concurrency=1, **FAST)

    results = search_all_sync([q("first"), q("second")], cfg)

    assert all(r.ok for r in results)
    (second,) = stub_server.requests_for("second")
    assert "cookie" not in second.headers


def test_url_credentials_become_basic_auth_and_replace_an_authorization_header(
    stub_server: StubServer,
) -> None:
    url = f"http://us%40er:p%C3%A4ss@127.0.0.1:{stub_server.port}/search"
    cfg = HarnessConfig(url=url, headers={"Authorization": "Bearer s3cret"}, **FAST)

    assert only(search_all_sync([q("a")], cfg)).ok

    (request,) = stub_server.requests
    assert request.headers["authorization"] == basic("us@er", "päss")
    assert request.path == "/search"


def test_no_queries_make_no_requests(stub_server: StubServer) -> None:
    assert search_all_sync([], HarnessConfig(url=f"{stub_server.url}/search")) == []
    assert stub_server.requests == []


def test_a_trusted_http_proxy_relays_the_request_with_its_credentials(
    stub_server: StubServer, proxy_env: pytest.MonkeyPatch
) -> None:
    proxy_env.setenv("HTTP_PROXY", f"http://scout:tiger@127.0.0.1:{stub_server.port}")
    target = f"http://127.0.0.1:{free_port()}/search"  # nothing listens: only the proxy can answer

    result = only(search_all_sync([q("via")], HarnessConfig(url=target, trust_env=True, **FAST)))

    assert result.ok and result.ids == ("d1", "d2", "d3")
    (request,) = stub_server.requests
    assert request.path == "/search" and request.json["q"] == "via"
    assert request.headers["proxy-authorization"] == basic("scout", "tiger")
    assert request.headers["host"] == target.split("/")[2]


def test_an_untrusted_environment_proxy_is_ignored(
    stub_server: StubServer, proxy_env: pytest.MonkeyPatch
) -> None:
    proxy_env.setenv("HTTP_PROXY", refused_url().removesuffix("/search"))

    result = only(search_all_sync([q("a")], HarnessConfig(url=f"{stub_server.url}/search", **FAST)))

    assert result.ok and len(stub_server.requests) == 1


def test_no_proxy_exempts_the_engine_host(stub_server: StubServer, proxy_env: pytest.MonkeyPatch) -> None:
    proxy_env.setenv("HTTP_PROXY", refused_url().removesuffix("/search"))
    proxy_env.setenv("NO_PROXY", "localhost,127.0.0.1")

    cfg = HarnessConfig(url=f"{stub_server.url}/search", trust_env=True, retries=0, **FAST)
    result = only(search_all_sync([q("a")], cfg))

    assert result.ok and len(stub_server.requests) == 1


def test_an_https_engine_is_reached_through_a_connect_tunnel_carrying_the_proxy_credentials(
    stub_server: StubServer, proxy_env: pytest.MonkeyPatch
) -> None:
    # The stub refuses the tunnel: what matters is what the proxy was asked, and how a refusal reads.
    stub_server.default = Reply(status=403)
    proxy_env.setenv("HTTPS_PROXY", f"http://scout:tiger@127.0.0.1:{stub_server.port}")
    port = free_port()
    cfg = HarnessConfig(url=f"https://127.0.0.1:{port}/search", trust_env=True, retries=0, **FAST)

    result = only(search_all_sync([q("a")], cfg))

    assert result.error == "proxy error: HTTP 403 Forbidden" and result.status is None
    (request,) = stub_server.requests
    assert request.method == "CONNECT" and request.path == f"127.0.0.1:{port}"
    assert request.headers["proxy-authorization"] == basic("scout", "tiger")


def test_a_proxy_the_transport_cannot_use_is_every_querys_error_naming_the_variable(
    stub_server: StubServer, proxy_env: pytest.MonkeyPatch
) -> None:
    proxy_env.setenv("HTTP_PROXY", "socks5://127.0.0.1:1080")
    cfg = HarnessConfig(url=f"{stub_server.url}/search", trust_env=True, **FAST)

    results = search_all_sync([q("a"), q("b")], cfg)

    message = "HTTP_PROXY socks5://127.0.0.1:1080: expected an http:// or https:// proxy URL"
    assert [r.error for r in results] == [message, message]
    assert all(r.attempts == 0 and r.status is None for r in results)
    assert stub_server.requests == []


def test_a_missing_trusted_ca_file_is_every_querys_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    missing = tmp_path / "no-such-bundle.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    url = f"https://127.0.0.1:{free_port()}/search"

    trusted = only(search_all_sync([q("a")], HarnessConfig(url=url, trust_env=True, retries=0)))
    untrusted = only(search_all_sync([q("a")], HarnessConfig(url=url, retries=0)))

    assert trusted.error == f"SSL_CERT_FILE {missing}: No such file or directory"
    assert trusted.attempts == 0
    # Without trust_env the variable is not read: the call is made (and refused: nothing listens).
    assert untrusted.error is not None and untrusted.error.startswith("connect error: ")
