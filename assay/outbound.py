"""The network policy's hook in each blocking HTTP client (pure, no Django): httpx for run-notification
webhooks, urllib3 under dulwich for git export remotes over http(s). aiohttp's (search targets, pools,
judges) is `assay.transport.public_connector`.

Each hook replaces only the client's "open a TCP connection to host:port" step with
`assay.netpolicy.public_connection`, which resolves the host once, drops the addresses the policy refuses
and connects to an allowed address itself: whatever the client's URL parser made of the host, the address
actually connected to is judged. TLS, HTTP and the client's own errors stay the client's. Imported only
where a webhook is posted or a remote pushed to (httpx and urllib3 are not loaded otherwise).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx
import urllib3
from httpcore._backends.sync import SyncStream  # the stream SyncBackend wraps its sockets in
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError

from assay.netpolicy import public_connection


class _PublicBackend(httpcore.SyncBackend):
    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        source = None if local_address is None else (local_address, 0)
        # httpcore's own mapping: a timeout is ConnectTimeout, any other OSError (AddressRefused is one)
        # ConnectError, both httpx.TransportError to the caller.
        try:
            sock = public_connection((host, port), timeout, source, socket_options)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return SyncStream(sock)


def public_httpx_transport() -> httpx.HTTPTransport:
    """An httpx transport whose direct connections go through the policy. (Through a proxy named by the
    environment, httpx connects to the proxy, and the proxy to the host.)"""
    transport = httpx.HTTPTransport()
    # httpcore takes a network backend; httpx does not pass one through, so it is set on its pool.
    transport._pool._network_backend = _PublicBackend()
    return transport


class _PublicConnect:
    """urllib3's `_new_conn` with the policy's connection in place of `urllib3.util.connection`'s."""

    host: str
    port: int
    timeout: Any
    source_address: tuple[str, int] | None
    socket_options: Any
    _dns_host: str

    def _new_conn(self) -> socket.socket:
        try:
            return public_connection(
                (self._dns_host, self.port), self.timeout, self.source_address, self.socket_options
            )
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc  # type: ignore[arg-type]
        except TimeoutError as exc:
            raise ConnectTimeoutError(self, f"Connection to {self.host} timed out") from exc
        except OSError as exc:
            raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc  # type: ignore[arg-type]


class _PublicHTTPConnection(_PublicConnect, HTTPConnection):
    pass


class _PublicHTTPSConnection(_PublicConnect, HTTPSConnection):
    pass


class _PublicHTTPPool(HTTPConnectionPool):
    ConnectionCls = _PublicHTTPConnection


class _PublicHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _PublicHTTPSConnection


class PublicPoolManager(urllib3.PoolManager):
    """A urllib3 pool manager whose connections go through the policy (dulwich's `pool_manager_cls`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pool_classes_by_scheme = {"http": _PublicHTTPPool, "https": _PublicHTTPSPool}
