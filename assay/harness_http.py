"""One query's HTTP call for the search harness (pure, no Django; aiohttp): the request built once
(`Prepared`: the adapter's request with the caller's and the route's headers, credentials in the URL made
Basic auth), sent with a deadline on the whole request (connect, send and the whole reply), a cap on the
reply's size (`assay.replies`), retries with capped exponential backoff and a little jitter on transient
failures (connect errors, timeouts, dropped connections, 5xx, 429 honouring `Retry-After`), no retry on
other 4xx, an optional rate limit shared by the workers; the reply read (masked of the secret headers'
values before it is parsed) into the query's result or its error (`Runner`), and the run's one session
(`run_session`). The pool of workers that drives it is `assay.harness`.

The transport is aiohttp rather than httpx because of its CPU cost per request: measured on the
benchmark's loopback server, httpx spent about 2.5 ms of client CPU per request and aiohttp under 0.5 ms,
which decides whether 32 requests in flight keep a 20 ms engine busy (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from assay.adapters import AdapterError, SearchCall, SearchRequest
from assay.harness_config import HarnessConfig, SearchQuery, encode_body
from assay.inputs import whole_number
from assay.netpolicy import AddressRefused
from assay.replies import ReplyError, decode_json_reply, read_response
from assay.results import QueryResult
from assay.secrets import mask_secrets_bytes
from assay.transport import (
    Route,
    basic_authorization,
    describe_transport_error,
    public_connector,
    undecodable_reason,
)


def is_transient_status(status: int) -> bool:
    """429 and every 5xx are retried: besides 500/502/503/504, proxies and CDNs in front of a busy or
    restarting engine answer with others (507, 520-524, 529), and a 5xx that is in fact permanent costs
    only the retries before it is recorded as that query's error."""
    return status == 429 or 500 <= status <= 599


class _RateLimiter:
    """Spaces request starts at least 1/rate apart; shared by every worker of one run."""

    def __init__(self, rate: float) -> None:
        self._interval = 1.0 / rate
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self._interval
        if start > now:
            await asyncio.sleep(start - now)


class _Transient(Exception):
    """A failure worth retrying; `retry_after` is the server's requested wait, if it named one."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class _Permanent(Exception):
    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP date; None if unusable."""
    if value is None:
        return None
    value = value.strip()
    seconds = whole_number(value)  # not str.isdigit(), which takes "²" (and float would then raise)
    if seconds is not None:
        return float(seconds)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_delay(config: HarnessConfig, retry: int, retry_after: float | None) -> float:
    """The sleep before retry number `retry` (1-based). A server's Retry-After wins (capped): it knows
    when it will have capacity; otherwise base * 2^(retry-1) plus up to 10% jitter so that workers that
    failed together do not retry in lockstep, capped at backoff_max."""
    if retry_after is not None:
        return min(retry_after, config.retry_after_max)
    delay = config.backoff_base * 2 ** (retry - 1)
    return min(config.backoff_max, delay * (1 + 0.1 * random.random()))


def field_path(body: Any, path: str) -> str | None:
    """The scalar at a dotted path (`meta.index_generation`) as text, or None when absent."""
    node = body
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    if isinstance(node, bool) or node is None or isinstance(node, dict | list):
        return None
    return str(node)


def _body_shape(response: aiohttp.ClientResponse, body: bytes) -> str:
    """What an error says of a reply's body: its content type and size, never its text. The text may be
    whatever the URL reached (an admin page, a metadata service's keys), and errors are shown on pages."""
    kind = response.headers.get("Content-Type", "no content type")
    return f"{kind}, {len(body)} bytes"


# The whole-request deadline ends this much after the timeout, so that a connection that is never made
# is ended by aiohttp's connect timeout (the same number, started a moment later) and named as such.
_DEADLINE_GRACE_S = 0.05


@dataclass(slots=True)
class _Outcome:
    hits_ids: tuple[str, ...]
    titles: tuple[str, ...]
    status: int
    generation: str | None
    model_id: str | None


@dataclass(frozen=True, slots=True)
class Prepared:
    """One query's request, encoded once and sent as is on every attempt."""

    method: str
    url: URL
    params: tuple[tuple[str, str], ...]
    headers: CIMultiDict[str]
    body: bytes | None


def _prepare(
    request: SearchRequest, extra_headers: Mapping[str, str], route_headers: Mapping[str, str]
) -> Prepared:
    """Raises ValueError (or TypeError) when the body cannot be encoded as JSON."""
    body, content_type = encode_body(request)
    # Caller headers after the adapter's: an explicit Accept-Language or auth header wins (CIMultiDict
    # replaces case-insensitively, so no header is sent twice).
    headers = CIMultiDict(request.headers)
    for name, value in extra_headers.items():
        headers[name] = value
    if content_type == "application/json":
        headers.setdefault("Content-Type", content_type)  # a caller's own JSON media type wins
    elif content_type is not None:
        headers["Content-Type"] = content_type  # the form's encoding is ours, whatever was asked
    url = URL(request.url)
    if url.user is not None or url.password is not None:
        # Credentials in the URL become Basic auth, over any Authorization header (as httpx did before
        # the move to aiohttp), and the URL sent carries none.
        headers["Authorization"] = basic_authorization(url.user or "", url.password or "")
        url = url.with_user(None)
    headers.update(route_headers)
    return Prepared(request.method, url, request.params, headers, body)


class Runner:
    def __init__(self, config: HarnessConfig, route: Route) -> None:
        self.config = config
        self.route = route
        self.adapter = config.make_adapter()
        self.limiter = _RateLimiter(config.rate_limit) if config.rate_limit else None

    async def run_one(self, session: aiohttp.ClientSession, query: SearchQuery) -> QueryResult:
        prepared = self.prepare(query, self.config.params)
        if isinstance(prepared, QueryResult):
            return prepared
        return await self.send(session, query.id, prepared)

    def prepare(self, query: SearchQuery, params: Mapping[str, Any]) -> Prepared | QueryResult:
        """The query's request with these extra parameters, encoded; or the query's error when it cannot
        be sent at all (a route refused, a body the adapter or JSON refuses)."""
        config = self.config
        if self.route.problem is not None:
            return QueryResult(query_id=query.id, error=self.route.problem, attempts=0)
        try:
            request = self.adapter.build_request(
                SearchCall(config.url, query.text, query.filters or {}, query.locale, config.size, params)
            )
            return _prepare(request, config.headers, self.route.request_headers)
        except AdapterError as exc:
            return QueryResult(query_id=query.id, error=str(exc), attempts=0)
        except (TypeError, ValueError) as exc:
            return QueryResult(query_id=query.id, error=f"request body: {exc}", attempts=0)

    async def send(self, session: aiohttp.ClientSession, query_id: str, prepared: Prepared) -> QueryResult:
        """Send one prepared request, with its retries: the query's result or its error."""
        config = self.config
        attempts = 0
        while True:
            attempts += 1
            if self.limiter:
                await self.limiter.wait()
            started = time.perf_counter()
            try:
                outcome = await self._attempt(session, prepared)
            except _Transient as exc:
                latency = (time.perf_counter() - started) * 1000
                if attempts > config.retries:
                    tries = f" ({attempts} attempts)" if attempts > 1 else ""
                    return QueryResult(
                        query_id=query_id,
                        error=f"{exc}{tries}",
                        status=exc.status,
                        latency_ms=latency,
                        attempts=attempts,
                    )
                await asyncio.sleep(backoff_delay(config, attempts, exc.retry_after))
                continue
            except _Permanent as exc:
                return QueryResult(
                    query_id=query_id,
                    error=str(exc),
                    status=exc.status,
                    latency_ms=(time.perf_counter() - started) * 1000,
                    attempts=attempts,
                )
            return QueryResult(
                query_id=query_id,
                ids=outcome.hits_ids,
                titles=outcome.titles,
                status=outcome.status,
                latency_ms=(time.perf_counter() - started) * 1000,
                attempts=attempts,
                index_generation=outcome.generation,
                model_id=outcome.model_id,
            )

    async def _attempt(self, session: aiohttp.ClientSession, prepared: Prepared) -> _Outcome:
        config, route = self.config, self.route
        answered = False
        sent: dict[str, bool] = {}  # set by the session's trace once the request's headers are sent
        try:
            # The deadline covers the whole request: aiohttp's own timeouts bound each phase and the time
            # between two reads only, which a server dripping a byte at a time never exceeds.
            async with asyncio.timeout(config.timeout + _DEADLINE_GRACE_S):
                async with session.request(
                    prepared.method,
                    prepared.url,
                    params=prepared.params or None,
                    data=prepared.body,
                    headers=prepared.headers,
                    allow_redirects=False,  # a redirect is the engine's answer to report, not to follow
                    proxy=route.proxy,
                    proxy_headers=route.proxy_headers,
                    ssl=route.ssl,
                    trace_request_ctx=sent,
                ) as response:
                    answered = True
                    try:
                        body = await read_response(response, config.max_reply_bytes)
                    except ReplyError as exc:
                        raise _Permanent(str(exc), status=response.status) from None
        except aiohttp.ClientPayloadError as exc:
            reason = undecodable_reason(exc)
            if reason is not None:
                raise _Permanent(f"undecodable response body: {reason}") from exc
            raise _Transient(describe_transport_error(exc, config.timeout)) from exc
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, AddressRefused):
                raise _Permanent(str(exc.os_error)) from exc  # the same on every retry
            raise _Transient(describe_transport_error(exc, config.timeout)) from exc
        except TimeoutError as exc:
            if isinstance(exc, aiohttp.ClientError):  # one of aiohttp's own timeouts
                raise _Transient(describe_transport_error(exc, config.timeout)) from exc
            if not sent:
                # The whole-request deadline ran out before a connection carried the request: aiohttp's
                # connect timeout would have said so a moment later (a loaded loop can start it late).
                raise _Transient(f"connect timeout after {config.timeout:g}s") from exc
            late = " (the reply was still arriving)" if answered else ""
            raise _Transient(f"timeout after {config.timeout:g}s{late}") from exc
        except (
            ValueError
        ) as exc:  # a request aiohttp cannot build (InvalidURL, a host IDNA refuses): permanent
            raise _Permanent(describe_transport_error(exc, config.timeout)) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise _Transient(describe_transport_error(exc, config.timeout)) from exc
        status = response.status
        if is_transient_status(status):
            wait = parse_retry_after(response.headers.get("Retry-After"))
            raise _Transient(
                f"HTTP {status} ({_body_shape(response, body)})", status=status, retry_after=wait
            )
        if status >= 400:
            raise _Permanent(f"HTTP {status} ({_body_shape(response, body)})", status=status)
        if not 200 <= status < 300:
            raise _Permanent(f"HTTP {status}: expected a 2xx reply", status=status)
        try:
            parsed = decode_json_reply(mask_secrets_bytes(body, config.secrets))
        except ReplyError as exc:
            why = "" if exc.syntax else f": {exc}"  # an HTML page is simply "not JSON"
            raise _Permanent(
                f"response is not JSON ({_body_shape(response, body)}){why}", status=status
            ) from None
        try:
            hits = self.adapter.parse_response(parsed)
        except AdapterError as exc:
            raise _Permanent(f"unexpected response: {exc}", status=status) from None
        return _Outcome(
            hits_ids=hits.ids,
            titles=hits.titles,
            status=status,
            generation=_read_marker(
                response.headers, parsed, config.generation_header, config.generation_field
            ),
            model_id=_read_marker(response.headers, parsed, config.model_id_header, config.model_id_field),
        )


def _read_marker(
    headers: CIMultiDictProxy[str], body: Any, header: str | None, path: str | None
) -> str | None:
    if header and header in headers:
        return headers[header]
    if path:
        return field_path(body, path)
    return None


async def _headers_sent(
    session: aiohttp.ClientSession, context: SimpleNamespace, params: aiohttp.TraceRequestHeadersSentParams
) -> None:
    """Marks the request's `trace_request_ctx` (a dict, `Runner._attempt`'s) once its headers are sent:
    from then on a timeout is the engine's, before it the connection's."""
    if isinstance(context.trace_request_ctx, dict):
        context.trace_request_ctx["sent"] = True


_HEADERS_SENT = aiohttp.TraceConfig()
_HEADERS_SENT.on_request_headers_sent.append(_headers_sent)


def run_session(config: HarnessConfig) -> aiohttp.ClientSession:
    """One session per run: a pool of at most `concurrency` keep-alive connections (the workers never
    outnumber it, so none waits for a connection), per-phase timeouts as `--timeout` documents, no
    cookies kept (one query's answer must not depend on which queries came before it), environment
    settings only through `route_of`."""
    timeout = aiohttp.ClientTimeout(
        total=None, connect=config.timeout, sock_connect=config.timeout, sock_read=config.timeout
    )
    connector = public_connector(limit=config.concurrency, allow_private=config.allow_private)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        trace_configs=[_HEADERS_SENT],
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
        raise_for_status=False,
    )
