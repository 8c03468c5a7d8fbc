"""The search harness: call a search system for every golden query and record what came back (pure, no
Django; async httpx).

Bounded concurrency (a fixed pool of workers), a per-request timeout, retries with capped exponential
backoff and a little jitter on transient failures (connect errors, timeouts, dropped connections, 5xx,
429 honouring `Retry-After`), no retry on other 4xx, an optional rate limit. Every failure is recorded
on its query as `QueryResult(error=...)`: METRICS.md never counts an errored query as empty.

Used by the `assay run` command, the Celery chunk tasks and candidate-pool building:

    results = search_all_sync(golden.queries, HarnessConfig(url=..., size=golden.k))
    report = build_report(golden, {r.query_id: r for r in results}, run=run_meta(config, results, ...))
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib.util
import json
import math
import random
import ssl
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from evaluation.adapters import Adapter, AdapterError, SearchCall, SearchRequest, make_adapter
from evaluation.results import QueryResult

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_SNIPPET = 120


class SearchQuery(Protocol):
    """What the harness reads from a query; `golden_io.golden.GoldenQuery` is one."""

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
    concurrency: int = 8
    timeout: float = 10.0  # seconds, per request (connect, read, write and pool each)
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

    def __post_init__(self) -> None:
        problems = config_problems(self)
        if problems:
            raise ValueError("; ".join(problems))

    def make_adapter(self) -> Adapter:
        return make_adapter(self.adapter, template=self.es_template, solr_method=self.solr_method)


def config_problems(config: HarnessConfig) -> list[str]:
    """Every invalid setting, named like the `assay run` option that sets it."""
    problems: list[str] = []
    parts = urlsplit(config.url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        problems.append(f"search URL {config.url!r}: expected http(s)://host[:port]/path")
    if config.size < 1:
        problems.append(f"size {config.size}: must be at least 1")
    if config.concurrency < 1:
        problems.append(f"concurrency {config.concurrency}: must be at least 1")
    if not config.timeout > 0:
        problems.append(f"timeout {config.timeout}: must be more than 0 seconds")
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
    try:
        # A trial request surfaces params that clash with the request's own fields before any call.
        config.make_adapter().build_request(SearchCall(config.url, "", params=config.params))
    except AdapterError as exc:
        problems.append(str(exc))
    return problems


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
    if value.isdigit():
        return float(value)
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


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 3] + "..."


def _describe_transport_error(exc: httpx.TransportError, timeout: float) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return f"connect timeout after {timeout:g}s"
    if isinstance(exc, httpx.TimeoutException):
        return f"timeout after {timeout:g}s"
    if isinstance(exc, httpx.ConnectError):
        return f"connect error: {str(exc) or type(exc).__name__}"
    return f"{type(exc).__name__}: {str(exc) or 'connection dropped'}"


@dataclass(slots=True)
class _Outcome:
    hits_ids: tuple[str, ...]
    titles: tuple[str, ...]
    status: int
    generation: str | None
    model_id: str | None


class _Runner:
    def __init__(self, config: HarnessConfig) -> None:
        self.config = config
        self.adapter = config.make_adapter()
        self.limiter = _RateLimiter(config.rate_limit) if config.rate_limit else None

    async def run_one(self, client: httpx.AsyncClient, query: SearchQuery) -> QueryResult:
        config = self.config
        try:
            request = self.adapter.build_request(
                SearchCall(
                    config.url, query.text, query.filters or {}, query.locale, config.size, config.params
                )
            )
        except AdapterError as exc:
            return QueryResult(query_id=query.id, error=str(exc), attempts=0)
        # Caller headers last: an explicit Accept-Language or auth header wins over the adapter's
        # (httpx.Headers replaces case-insensitively, so no header is sent twice).
        headers = httpx.Headers(dict(request.headers))
        headers.update(config.headers)
        attempts = 0
        while True:
            attempts += 1
            if self.limiter:
                await self.limiter.wait()
            started = time.perf_counter()
            try:
                outcome = await self._attempt(client, request, headers)
            except _Transient as exc:
                latency = (time.perf_counter() - started) * 1000
                if attempts > config.retries:
                    tries = f" ({attempts} attempts)" if attempts > 1 else ""
                    return QueryResult(
                        query_id=query.id,
                        error=f"{exc}{tries}",
                        status=exc.status,
                        latency_ms=latency,
                        attempts=attempts,
                    )
                await asyncio.sleep(backoff_delay(config, attempts, exc.retry_after))
                continue
            except _Permanent as exc:
                return QueryResult(
                    query_id=query.id,
                    error=str(exc),
                    status=exc.status,
                    latency_ms=(time.perf_counter() - started) * 1000,
                    attempts=attempts,
                )
            return QueryResult(
                query_id=query.id,
                ids=outcome.hits_ids,
                titles=outcome.titles,
                status=outcome.status,
                latency_ms=(time.perf_counter() - started) * 1000,
                attempts=attempts,
                index_generation=outcome.generation,
                model_id=outcome.model_id,
            )

    async def _attempt(
        self, client: httpx.AsyncClient, request: SearchRequest, headers: httpx.Headers
    ) -> _Outcome:
        config = self.config
        content: str | None = None
        if request.form:
            # Encoded by hand: Solr repeats `fq`, which a dict `data=` cannot express.
            content = urlencode(request.form)
            headers = httpx.Headers(headers)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            response = await client.request(
                request.method,
                request.url,
                headers=headers,
                params=list(request.params) or None,
                json=request.json_body,
                content=content,
            )
        except httpx.TransportError as exc:
            raise _Transient(_describe_transport_error(exc, config.timeout)) from exc
        except httpx.HTTPError as exc:
            # Not the network: a body that cannot be decoded (bad gzip) will not improve on a retry.
            raise _Permanent(f"{type(exc).__name__}: {exc}") from exc
        status = response.status_code
        if status in RETRY_STATUSES:
            wait = parse_retry_after(response.headers.get("Retry-After"))
            raise _Transient(f"HTTP {status}: {_snippet(response.text)}", status=status, retry_after=wait)
        if status >= 400:
            raise _Permanent(f"HTTP {status}: {_snippet(response.text)}", status=status)
        if not 200 <= status < 300:
            raise _Permanent(f"HTTP {status}: expected a 2xx reply", status=status)
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            kind = response.headers.get("content-type", "no content type")
            raise _Permanent(
                f"response is not JSON ({kind}): {_snippet(response.text)!r}", status=status
            ) from None
        try:
            hits = self.adapter.parse_response(body)
        except AdapterError as exc:
            raise _Permanent(f"unexpected response: {exc}", status=status) from None
        return _Outcome(
            hits_ids=hits.ids,
            titles=hits.titles,
            status=status,
            generation=_read_marker(response, body, config.generation_header, config.generation_field),
            model_id=_read_marker(response, body, config.model_id_header, config.model_id_field),
        )


def _read_marker(response: httpx.Response, body: Any, header: str | None, path: str | None) -> str | None:
    if header and header in response.headers:
        return response.headers[header]
    if path:
        return field_path(body, path)
    return None


def _skip_sniffio_probe() -> None:
    """httpcore 1.0 runs `import sniffio` each time it sets up a lock (several times per request). When
    sniffio is not installed, every one of those failed imports searches sys.path again; measured here,
    that is most of the harness's CPU time. Recording the absence once makes the import fail at once,
    exactly as it would have. A no-op when sniffio is installed."""
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


def _client(config: HarnessConfig, ssl_context: ssl.SSLContext) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=httpx.Timeout(config.timeout),
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        trust_env=config.trust_env,
        verify=ssl_context,
    )


async def search_all(
    queries: Sequence[SearchQuery],
    config: HarnessConfig,
    *,
    on_result: Callable[[QueryResult], None] | None = None,
) -> list[QueryResult]:
    """One QueryResult per query, in the order given (golden order), each with its error if it failed.

    `config.concurrency` workers pull the next query from a shared cursor, so at most that many requests
    are in flight, and no task waits per query (100,000 queries cost 32 tasks, not 100,000). Each worker
    owns a one-connection client: httpcore scans every connection of a pool on each request, so 32 small
    pools are far cheaper than one pool of 32. `on_result` is called once per finished query, in
    completion order, from the event loop (keep it quick; an exception it raises stops the run and
    propagates).
    """
    _skip_sniffio_probe()
    runner = _Runner(config)
    results: list[QueryResult | None] = [None] * len(queries)
    cursor = iter(range(len(queries)))  # shared: next() never awaits, so no two workers get one index
    workers = min(config.concurrency, len(queries))
    # One SSL context for all workers: loading the CA bundle costs ~50 ms per client.
    ssl_context = httpx.create_ssl_context(trust_env=config.trust_env)
    clients = [_client(config, ssl_context) for _ in range(workers)]

    async def work(worker_client: httpx.AsyncClient) -> None:
        for index in cursor:
            result = await runner.run_one(worker_client, queries[index])
            results[index] = result
            if on_result is not None:
                on_result(result)

    tasks = [asyncio.ensure_future(work(c)) for c in clients]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        # A failing callback (or a cancelled caller) stops the run: no request outlives its client.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)
    done = [r for r in results if r is not None]
    assert len(done) == len(queries)  # every index was taken by exactly one worker
    return done


def search_all_sync(
    queries: Sequence[SearchQuery],
    config: HarnessConfig,
    *,
    on_result: Callable[[QueryResult], None] | None = None,
) -> list[QueryResult]:
    """`search_all` for callers without an event loop (the CLI, Celery tasks, management commands)."""
    return asyncio.run(search_all(queries, config, on_result=on_result))


def redact_url(url: str) -> str:
    """The URL without credentials and with query-string values masked: api keys live there too."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if ":" in netloc:  # an IPv6 literal
        netloc = f"[{netloc}]"
    if parts.port is not None:
        netloc += f":{parts.port}"
    query = urlencode([(k, "***") for k, _ in parse_qsl(parts.query, keep_blank_values=True)])
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def run_meta(
    config: HarnessConfig,
    results: Sequence[QueryResult],
    *,
    started_at: datetime,
    duration: float,
) -> dict[str, Any]:
    """The artifact's `run` block: how the results were obtained, for explaining odd diffs later.

    Header NAMES only (their values may be secrets). More than one index generation or model id seen
    means the index moved during the run: `index_moved` / `model_changed` flag it.
    """
    generations = sorted({r.index_generation for r in results if r.index_generation is not None})
    model_ids = sorted({r.model_id for r in results if r.model_id is not None})
    latencies = sorted(r.latency_ms for r in results if r.ok and r.latency_ms is not None)
    return {
        "url": redact_url(config.url),
        "adapter": config.adapter,
        "size": config.size,
        "params": dict(config.params),
        "header_names": sorted(config.headers, key=str.lower),
        "concurrency": config.concurrency,
        "timeout_s": config.timeout,
        "max_retries": config.retries,
        "rate_limit_rps": config.rate_limit,
        "started_at": started_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "duration_s": duration,
        "queries": len(results),
        "errors": sum(1 for r in results if not r.ok),
        "retries": sum(max(0, r.attempts - 1) for r in results),
        "index_generations": generations,
        "index_moved": len(generations) > 1,
        "model_ids": model_ids,
        "model_changed": len(model_ids) > 1,
        "latency_ms": _latency_summary(latencies),
    }


def _latency_summary(sorted_ms: Sequence[float]) -> dict[str, float] | None:
    if not sorted_ms:
        return None

    def pct(p: float) -> float:
        # Nearest rank: a real observed latency, never an interpolation between two.
        return sorted_ms[max(0, math.ceil(p * len(sorted_ms)) - 1)]

    return {"p50": pct(0.50), "p95": pct(0.95), "max": sorted_ms[-1]}
