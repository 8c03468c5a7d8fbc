"""The search harness: call a search system for every golden query and record what came back (pure, no
Django; aiohttp).

Bounded concurrency (a fixed pool of workers, at most MAX_CONCURRENCY), a deadline on each request
(connect, send and the whole reply), a cap on each reply's size (`assay.replies`), retries with capped
exponential backoff and a little jitter on transient failures (connect errors, timeouts, dropped
connections, 5xx, 429 honouring `Retry-After`), no retry on other 4xx, an optional rate limit. Every
failure is recorded on its query as `QueryResult(error=...)`: docs/metrics.md never counts an errored
query as empty, and a reply that is too large, too slow or not readable JSON is that query's error only.
The values of the secret headers sent (`HarnessConfig.secrets`) are masked in each reply before it is
parsed and in each result (`assay.secrets.mask_secrets`): an engine that echoes its request must not have
them stored in ids, titles, markers or errors.

Used by the `assay run` command, the Celery chunk tasks and candidate-pool building:

    results = search_all_sync(golden.queries, HarnessConfig(url=..., size=golden.k))
    report = build_report(golden, {r.query_id: r for r in results}, run=run_meta(config, results, ...))

The transport is aiohttp rather than httpx because of its CPU cost per request: measured on the
benchmark's loopback server, httpx spent about 2.5 ms of client CPU per request and aiohttp under 0.5 ms,
which decides whether 32 requests in flight keep a 20 ms engine busy (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, Literal, Protocol
from urllib.parse import urlencode

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from assay.adapters import Adapter, AdapterError, SearchCall, SearchRequest, make_adapter
from assay.inputs import whole_number
from assay.netpolicy import (
    AddressRefused,
    private_targets_allowed,
    url_problem,
)
from assay.replies import MAX_REPLY_BYTES, ReplyError, decode_json_reply, read_response
from assay.results import QueryResult
from assay.secrets import mask_secrets, mask_secrets_bytes
from assay.transport import (
    Route,
    basic_authorization,
    describe_transport_error,
    public_connector,
    route_of,
    undecodable_reason,
)
from assay.urls import SplitUrl, UrlError, split_url

# Requests in flight per run (or per chunk task on the server). More buys no speed from any engine worth
# measuring and multiplies what one run may hold: `concurrency` replies of up to `max_reply_bytes` each.
MAX_CONCURRENCY = 64


def is_transient_status(status: int) -> bool:
    """429 and every 5xx are retried: besides 500/502/503/504, proxies and CDNs in front of a busy or
    restarting engine answer with others (507, 520-524, 529), and a 5xx that is in fact permanent costs
    only the retries before it is recorded as that query's error."""
    return status == 429 or 500 <= status <= 599


class SearchQuery(Protocol):
    """What the harness reads from a query; `assay.golden.model.GoldenQuery` is one."""

    @property
    def id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def locale(self) -> str | None: ...
    @property
    def filters(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True, slots=True)
class HarnessConfig:
    """One target: where to send queries and how. Plain data, so a Celery task can carry it as JSON
    (`dataclasses.asdict`) and rebuild it with `HarnessConfig(**data)`."""

    url: str
    adapter: str = "http_json"
    size: int = 10  # the golden file's k: the engine is asked for k results
    params: Mapping[str, Any] = field(default_factory=dict)  # stage toggles, e.g. {"rewrite": True}
    headers: Mapping[str, str] = field(default_factory=dict)  # cache bypass, auth (values never recorded)
    # The secret header values among `headers` (read from the environment): masked in every reply.
    secrets: tuple[str, ...] = ()
    concurrency: int = 8  # at most MAX_CONCURRENCY
    timeout: float = 10.0  # seconds, per request: connect, send and the whole reply within it
    max_reply_bytes: int = MAX_REPLY_BYTES  # a larger reply is that query's error (assay.replies)
    retries: int = 3  # retries after the first attempt, for transient failures only
    backoff_base: float = 0.25  # seconds before the first retry; doubles each retry
    backoff_max: float = 8.0  # cap on one backoff sleep
    retry_after_max: float = 60.0  # cap on an honoured Retry-After
    rate_limit: float | None = None  # requests per second over all workers (retries included)
    generation_header: str | None = None  # e.g. "X-Index-Generation"
    generation_field: str | None = None  # dotted body path, e.g. "meta.index_generation"
    model_id_header: str | None = None
    model_id_field: str | None = None
    es_template: Mapping[str, Any] | None = None  # elasticsearch/opensearch query template
    solr_method: Literal["GET", "POST"] = "GET"
    # Off by default so HTTP(S)_PROXY in a CI environment cannot reroute calls meant for a staging host.
    trust_env: bool = False
    # Loopback, link-local, private and unspecified addresses (assay.netpolicy); by default as
    # ASSAY_TARGET_ALLOW_PRIVATE says.
    allow_private: bool = field(default_factory=private_targets_allowed)

    def __post_init__(self) -> None:
        problems = config_problems(self)
        if problems:
            raise ValueError("; ".join(problems))

    def make_adapter(self) -> Adapter:
        return make_adapter(self.adapter, template=self.es_template, solr_method=self.solr_method)


def http_url_problem(url: str, *, allow_private: bool) -> str | None:
    """Why an http(s) URL (a search target's, a judge's) cannot be called, in words that never quote it:
    malformed (`assay.urls.split_url`), not http(s)://host, refused by the network policy (the host as
    yarl, aiohttp's parser, reads it, and as split_url does), or one yarl will not read."""
    try:
        parts = split_url(url)
    except UrlError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https") or not parts.host:
        return f"expected http(s)://host[:port]/path, got {_scheme_of(parts)}"
    if refused := url_problem(url, clients=("aiohttp",), allow_private=allow_private):
        return refused
    try:
        URL(url)  # what the transport parses: a URL it refuses fails here, not per query
    except ValueError:
        return "the URL cannot be read: aiohttp's parser refuses it (check the host and the port)"
    return None


def _scheme_of(parts: SplitUrl) -> str:
    if not parts.scheme:
        return "no scheme"
    return f"no host after {parts.scheme}://" if parts.scheme in ("http", "https") else f"{parts.scheme}://"


def config_problems(config: HarnessConfig) -> list[str]:
    """Every invalid setting, named like the `assay run` option that sets it."""
    problems: list[str] = []
    if refused := http_url_problem(config.url, allow_private=config.allow_private):
        problems.append(f"search URL: {refused}")
    if config.size < 1:
        problems.append(f"size {config.size}: must be at least 1")
    if config.concurrency < 1:
        problems.append(f"concurrency {config.concurrency}: must be at least 1")
    elif config.concurrency > MAX_CONCURRENCY:
        problems.append(
            f"concurrency {config.concurrency}: must be at most {MAX_CONCURRENCY} requests in flight"
        )
    if not config.timeout > 0:
        problems.append(f"timeout {config.timeout}: must be more than 0 seconds")
    if config.max_reply_bytes < 1024:
        problems.append(f"max reply size {config.max_reply_bytes} bytes: must be at least 1,024 bytes")
    if config.retries < 0:
        problems.append(f"retries {config.retries}: must be 0 or more")
    if config.backoff_base < 0 or config.backoff_max < 0 or config.retry_after_max < 0:
        problems.append("backoff and Retry-After caps must be 0 or more seconds")
    if config.rate_limit is not None and not config.rate_limit > 0:
        problems.append(f"rate limit {config.rate_limit}: must be more than 0 requests per second")
    for name in ("generation_field", "model_id_field"):
        path = getattr(config, name)
        if path is not None and (not path or any(not part for part in path.split("."))):
            problems.append(f"{name.replace('_', '-')} {path!r}: expected a dotted path such as meta.model")
    # A trial request surfaces params that clash with the request's own fields (or that JSON cannot carry,
    # such as NaN) before any call.
    if refused := params_problem(config, config.params):
        problems.append(refused)
    return problems


def encode_body(request: SearchRequest) -> tuple[bytes | None, str | None]:
    """The request body as bytes and its content type (None, None without a body).

    JSON is compact UTF-8 and refuses NaN and infinities (ValueError), which no JSON parser accepts.
    A form is encoded by hand because Solr repeats `fq`, which a mapping cannot express.
    """
    if request.form:
        return urlencode(request.form).encode(), "application/x-www-form-urlencoded"
    if request.json_body is not None:
        text = json.dumps(request.json_body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode(), "application/json"
    return None, None


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
class _Prepared:
    """One query's request, encoded once and sent as is on every attempt."""

    method: str
    url: URL
    params: tuple[tuple[str, str], ...]
    headers: CIMultiDict[str]
    body: bytes | None


def _prepare(
    request: SearchRequest, extra_headers: Mapping[str, str], route_headers: Mapping[str, str]
) -> _Prepared:
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
    return _Prepared(request.method, url, request.params, headers, body)


class _Runner:
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

    def prepare(self, query: SearchQuery, params: Mapping[str, Any]) -> _Prepared | QueryResult:
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

    async def send(self, session: aiohttp.ClientSession, query_id: str, prepared: _Prepared) -> QueryResult:
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

    async def _attempt(self, session: aiohttp.ClientSession, prepared: _Prepared) -> _Outcome:
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
    """Marks the request's `trace_request_ctx` (a dict, `_Runner._attempt`'s) once its headers are sent:
    from then on a timeout is the engine's, before it the connection's."""
    if isinstance(context.trace_request_ctx, dict):
        context.trace_request_ctx["sent"] = True


_HEADERS_SENT = aiohttp.TraceConfig()
_HEADERS_SENT.on_request_headers_sent.append(_headers_sent)


def _session(config: HarnessConfig) -> aiohttp.ClientSession:
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


async def search_all(
    queries: Sequence[SearchQuery],
    config: HarnessConfig,
    *,
    on_result: Callable[[QueryResult], None] | None = None,
) -> list[QueryResult]:
    """One QueryResult per query, in the order given (golden order), each with its error if it failed.

    `config.concurrency` workers pull the next query from a shared cursor, so at most that many requests
    are in flight, and no task waits per query (100,000 queries cost 32 tasks, not 100,000). The workers
    share one aiohttp session and its connection pool. `on_result` is called once per finished query, in
    completion order, from the event loop (keep it quick; an exception it raises stops the run and
    propagates).
    """
    if not queries:
        return []
    runner = _Runner(config, route_of(config.url, config.trust_env))
    results: list[QueryResult | None] = [None] * len(queries)
    cursor = iter(range(len(queries)))  # shared: next() never awaits, so no two workers get one index

    async def work(session: aiohttp.ClientSession) -> None:
        for index in cursor:
            result = _masked(await runner.run_one(session, queries[index]), config.secrets)
            results[index] = result
            if on_result is not None:
                on_result(result)

    async with _session(config) as session:
        await _all_workers([work(session) for _ in range(min(config.concurrency, len(queries)))])
    done = [r for r in results if r is not None]
    assert len(done) == len(queries)  # every index was taken by exactly one worker
    return done


async def _all_workers(workers: Sequence[Coroutine[Any, Any, None]]) -> None:
    """Run the pool's workers to the end. A failing one (a callback that raised) or a cancelled caller
    stops them all, so no request outlives the session they share."""
    tasks = [asyncio.ensure_future(worker) for worker in workers]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class SharedSearch:
    """Several parameter sets of one target searched over one session and one pool of
    `config.concurrency` workers (`assay sweep`): `config.params` are the fixed parameters, each job's
    own are merged over them.

    A request is sent once: every job's request is encoded first, and jobs whose encoded requests are
    identical (method, URL, query string, headers and body: two configurations the adapter encodes alike,
    or one configuration asked twice) share one answer, also across calls of `search` on one instance.
    `sent` counts the requests sent (each with its retries).

        async with SharedSearch(config) as shared:
            tuning = await shared.search([(params, queries) for params in grid])
    """

    def __init__(self, config: HarnessConfig) -> None:
        self.config = config
        self.runner = _Runner(config, route_of(config.url, config.trust_env))
        self.sent = 0
        self._answers: dict[tuple[Any, ...], QueryResult] = {}
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> SharedSearch:
        self._session = _session(self.config)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _plan(
        self, jobs: Sequence[tuple[Mapping[str, Any], Sequence[SearchQuery]]]
    ) -> tuple[list[list[tuple[str, tuple[Any, ...] | QueryResult]]], dict[tuple[Any, ...], _Prepared]]:
        plan: list[list[tuple[str, tuple[Any, ...] | QueryResult]]] = []
        to_send: dict[tuple[Any, ...], _Prepared] = {}
        for params, queries in jobs:
            merged = {**self.config.params, **params}
            row: list[tuple[str, tuple[Any, ...] | QueryResult]] = []
            for query in queries:
                prepared = self.runner.prepare(query, merged)
                if isinstance(prepared, QueryResult):
                    row.append((query.id, prepared))
                    continue
                key = (
                    prepared.method,
                    str(prepared.url),
                    prepared.params,
                    tuple(prepared.headers.items()),
                    prepared.body,
                )
                if key not in self._answers:
                    to_send.setdefault(key, prepared)
                row.append((query.id, key))
            plan.append(row)
        return plan, to_send

    async def search(
        self,
        jobs: Sequence[tuple[Mapping[str, Any], Sequence[SearchQuery]]],
        *,
        progress: Callable[[int], Callable[[QueryResult], None] | None] | None = None,
        on_answer: Callable[[int, QueryResult], None] | None = None,
    ) -> list[list[QueryResult]]:
        """Per job (extra params, queries), one QueryResult per query in the order given. `progress` is
        called with the number of requests to send before the first one, and may return a callback
        called once per request sent, as `search_all` calls `on_result`. `on_answer(job, result)` is
        called once per job and query as soon as its answer is known (at once for a request the adapter
        refused or an answer shared from an earlier call), so a caller can keep each as it comes (the
        app's experiment chunks write them as runs' chunks do)."""
        assert self._session is not None, "use SharedSearch as an async context manager"
        session = self._session
        plan, to_send = self._plan(jobs)
        pending = list(to_send.items())
        on_result = progress(len(pending)) if progress is not None else None
        cursor = iter(pending)
        waiting: dict[tuple[Any, ...], list[tuple[int, str]]] = {}
        for job, row in enumerate(plan):
            for query_id, entry in row:
                if isinstance(entry, QueryResult):
                    if on_answer is not None:
                        on_answer(job, entry)
                elif entry in to_send:
                    waiting.setdefault(entry, []).append((job, query_id))
                elif on_answer is not None:
                    on_answer(job, replace(self._answers[entry], query_id=query_id))

        async def work() -> None:
            for key, prepared in cursor:
                result = _masked(await self.runner.send(session, "", prepared), self.config.secrets)
                self._answers[key] = result
                self.sent += 1
                if on_result is not None:
                    on_result(result)
                if on_answer is not None:
                    for job, query_id in waiting[key]:
                        on_answer(job, replace(result, query_id=query_id))

        await _all_workers([work() for _ in range(min(self.config.concurrency, len(pending)))])
        return [
            [
                entry if isinstance(entry, QueryResult) else replace(self._answers[entry], query_id=query_id)
                for query_id, entry in row
            ]
            for row in plan
        ]


def params_problem(config: HarnessConfig, params: Mapping[str, Any]) -> str | None:
    """Why the adapter (or JSON) would refuse these extra parameters on `config`'s target, or None: a
    trial request, before any call."""
    try:
        trial = config.make_adapter().build_request(SearchCall(config.url, "", params=params))
        encode_body(trial)
    except AdapterError as exc:
        return str(exc)
    except ValueError as exc:
        return f"{'params or query template' if config.es_template else 'params'}: {exc}"
    return None


def _masked(result: QueryResult, secrets: Sequence[str]) -> QueryResult:
    """The result with the secrets masked in every text a reply gave it (a marker from a reply header, an
    error), after the body's own masking before it was parsed."""
    if not secrets:
        return result

    def mask(text: str | None) -> str | None:
        return None if text is None else mask_secrets(text, secrets)

    return replace(
        result,
        ids=tuple(mask_secrets(i, secrets) for i in result.ids),
        titles=tuple(mask_secrets(t, secrets) for t in result.titles),
        error=mask(result.error),
        index_generation=mask(result.index_generation),
        model_id=mask(result.model_id),
    )


def search_all_sync(
    queries: Sequence[SearchQuery],
    config: HarnessConfig,
    *,
    on_result: Callable[[QueryResult], None] | None = None,
) -> list[QueryResult]:
    """`search_all` for callers without an event loop (the CLI, Celery tasks, management commands)."""
    return asyncio.run(search_all(queries, config, on_result=on_result))
