"""How the harness's requests leave this machine (pure, no Django; aiohttp): the proxy and TLS settings of a
run (`route_of`, read from the environment only when it is trusted), the connector that connects only
where `assay.netpolicy` allows (`public_connector`, also the judge client's), and transport failures in
words that name the phase without quoting a URL (`describe_transport_error`). Split from the harness
(`assay.harness_http` sends the requests)."""

from __future__ import annotations

import base64
import os
import socket
import ssl
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field

import aiohttp
import certifi
from aiohttp.http_exceptions import ContentEncodingError
from yarl import URL

from assay.netpolicy import AddressRefused, public_socket, resolved_problem
from assay.run_meta import redact_url


def _os_reason(error: OSError) -> str:
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"TLS certificate: {error.verify_message or error.reason}"
    if isinstance(error, ssl.SSLError):
        return f"TLS: {error.reason or error}"
    if isinstance(error, socket.gaierror):
        return f"name resolution failed: {error.strerror}"
    if error.errno:
        # asyncio words a refusal as "Connect call failed (host, port)"; the errno says why.
        return os.strerror(error.errno)
    return str(error) or type(error).__name__


def describe_transport_error(exc: BaseException, timeout: float) -> str:
    """A failure below HTTP in words that name the phase, whatever library raised it. Built from the
    exception's parts, not its text: aiohttp's texts can carry the URL, and with it an api key."""
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return f"connect timeout after {timeout:g}s"
    if isinstance(exc, TimeoutError):
        return f"timeout after {timeout:g}s"
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return f"connect error: the proxy for {exc.host}:{exc.port}: {_os_reason(exc.os_error)}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"connect error: {exc.host}:{exc.port}: {_os_reason(exc.os_error)}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "connection dropped: server disconnected without sending a response"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "connection dropped: the response body was cut short"
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        return f"proxy error: HTTP {exc.status} {exc.message}".rstrip()
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"invalid HTTP response: {exc.message}"
    if isinstance(exc, OSError):
        return f"connection dropped: {_os_reason(exc)}"
    if isinstance(exc, aiohttp.InvalidURL | UnicodeError):
        return "the URL cannot be called: aiohttp cannot build a request for it (check its host and port)"
    # Any other failure by its kind only: its text may quote the URL.
    return f"the request failed ({type(exc).__name__})"


def undecodable_reason(exc: aiohttp.ClientPayloadError) -> str | None:
    """The reason when the body arrived whole but its Content-Encoding could not be undone (a gzip
    header on a plain body): not the network, so a retry would not help."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ContentEncodingError):
            return cause.message
        cause = cause.__cause__
    return None


def basic_authorization(user: str, password: str) -> str:
    """An `Authorization` (or `Proxy-Authorization`) value for Basic auth, credentials UTF-8 encoded."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


@dataclass(frozen=True, slots=True)
class Route:
    """How every request of a run leaves this machine; `problem` set means none can.

    A proxy's credentials go where the proxy reads them: on the CONNECT request that opens a tunnel to
    an https engine (`proxy_headers`), on every request relayed to an http engine (`request_headers`).
    """

    proxy: URL | None = None
    proxy_headers: Mapping[str, str] | None = None
    request_headers: Mapping[str, str] = field(default_factory=dict)
    ssl: ssl.SSLContext | bool = False
    problem: str | None = None


def _env_proxy(url: URL) -> tuple[URL | None, str | None]:
    """The proxy that HTTP(S)_PROXY / ALL_PROXY name for `url` unless NO_PROXY exempts its host, and
    the Proxy-Authorization its credentials make. Read here rather than by aiohttp's `trust_env`, which
    would also read ~/.netrc and send the passwords it finds there."""
    proxies = urllib.request.getproxies()
    value = proxies.get(url.scheme) or proxies.get("all")
    if not value or (url.host and urllib.request.proxy_bypass(url.host)):
        return None, None
    variable = f"{url.scheme.upper()}_PROXY" if proxies.get(url.scheme) else "ALL_PROXY"
    try:
        proxy = URL(value if "://" in value else f"http://{value}")
    except ValueError as exc:
        raise ValueError(f"{variable}: {exc}") from None
    if proxy.scheme not in ("http", "https") or not proxy.host:
        raise ValueError(f"{variable} {redact_url(str(proxy))}: expected an http:// or https:// proxy URL")
    if proxy.user is None and proxy.password is None:
        return proxy, None
    return proxy.with_user(None), basic_authorization(proxy.user or "", proxy.password or "")


def _ssl_context(trust_env: bool) -> ssl.SSLContext:
    """certifi's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR when the environment is trusted. An explicit
    bundle even when untrusted: OpenSSL's default paths would read SSL_CERT_FILE regardless."""
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        path = os.environ.get(variable) if trust_env else None
        if path:
            try:
                if variable == "SSL_CERT_FILE":
                    return ssl.create_default_context(cafile=path)
                return ssl.create_default_context(capath=path)
            except OSError as exc:  # ssl.SSLError is one: a file that holds no certificate
                raise ValueError(f"{variable} {path}: {exc.strerror or exc}") from None
    return ssl.create_default_context(cafile=certifi.where())


def route_of(url_text: str, trust_env: bool) -> Route:
    """The run's proxy and TLS settings, resolved once: every request goes to the search URL's host
    (adapters only add a path). A setting that cannot work becomes every query's error, naming the
    environment variable at fault, rather than a traceback in the middle of a run."""
    url = URL(url_text)
    try:
        proxy, authorization = _env_proxy(url) if trust_env else (None, None)
        needs_tls = url.scheme == "https" or (proxy is not None and proxy.scheme == "https")
        # Loading a CA bundle costs tens of milliseconds: only when a TLS handshake can happen.
        context: ssl.SSLContext | bool = _ssl_context(trust_env) if needs_tls else False
    except ValueError as exc:
        return Route(problem=str(exc))
    if authorization is None:
        return Route(proxy=proxy, ssl=context)
    header = {"Proxy-Authorization": authorization}
    if url.scheme == "https":
        return Route(proxy=proxy, proxy_headers=header, ssl=context)
    return Route(proxy=proxy, request_headers=header, ssl=context)


class PublicResolver(aiohttp.abc.AbstractResolver):
    """DNS that answers only the addresses `assay.netpolicy` lets a target reach.

    The connector connects to exactly the addresses a resolver returns and asks again for each new
    connection once its short cache expires, so checking here (after resolution, not on the name) also
    holds when a name is re-pointed at a private address during a run. Address literals never reach a
    resolver: `public_connector`'s socket factory judges every address connected to, literals included.
    """

    def __init__(self) -> None:
        self._inner = aiohttp.DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[aiohttp.abc.ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        allowed = [r for r in found if resolved_problem(host, r["host"]) is None]
        if not allowed and found:
            raise AddressRefused(resolved_problem(host, found[0]["host"]) or f"host {host}: refused")
        return allowed

    async def close(self) -> None:
        await self._inner.close()


def public_connector(*, limit: int, allow_private: bool) -> aiohttp.TCPConnector:
    """A connector that connects only where `assay.netpolicy` allows (unless private addresses are
    allowed): names through `PublicResolver` (only their allowed addresses are tried, and the error names
    the host), and every address about to be connected to, literals included, through the policy's socket
    factory, which aiohttp calls after its parser and resolver have done their work: whatever a URL's host
    turned into, the address itself is judged."""
    if allow_private:
        return aiohttp.TCPConnector(limit=limit, limit_per_host=0)
    return aiohttp.TCPConnector(
        limit=limit, limit_per_host=0, resolver=PublicResolver(), socket_factory=public_socket
    )
