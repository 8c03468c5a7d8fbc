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

The parts: what it is given, `assay.harness_config` (`HarnessConfig`, `MAX_CONCURRENCY`); one query's call
with its retries, `assay.harness_http`; here, the pool of workers that calls them for every query
(`search_all`, and `SharedSearch` for several parameter sets over one session).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import replace
from typing import Any

import aiohttp

from assay.harness_config import HarnessConfig, SearchQuery
from assay.harness_http import Prepared, Runner, run_session
from assay.results import QueryResult
from assay.secrets import mask_secrets
from assay.transport import route_of


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
    runner = Runner(config, route_of(config.url, config.trust_env))
    results: list[QueryResult | None] = [None] * len(queries)
    cursor = iter(range(len(queries)))  # shared: next() never awaits, so no two workers get one index

    async def work(session: aiohttp.ClientSession) -> None:
        for index in cursor:
            result = _masked(await runner.run_one(session, queries[index]), config.secrets)
            results[index] = result
            if on_result is not None:
                on_result(result)

    async with run_session(config) as session:
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
        self.runner = Runner(config, route_of(config.url, config.trust_env))
        self.sent = 0
        self._answers: dict[tuple[Any, ...], QueryResult] = {}
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> SharedSearch:
        self._session = run_session(self.config)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _plan(
        self, jobs: Sequence[tuple[Mapping[str, Any], Sequence[SearchQuery]]]
    ) -> tuple[list[list[tuple[str, tuple[Any, ...] | QueryResult]]], dict[tuple[Any, ...], Prepared]]:
        plan: list[list[tuple[str, tuple[Any, ...] | QueryResult]]] = []
        to_send: dict[tuple[Any, ...], Prepared] = {}
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
