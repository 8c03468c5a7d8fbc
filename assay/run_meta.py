"""The artifact's `run` block (`run_meta`: how the results were obtained) and `redact_url`, the form in
which a search URL is shown or stored anywhere (credentials dropped, query-string values masked). Pure,
no Django. Split from `assay.harness`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlencode

from assay.results import QueryResult
from assay.urls import UrlError, split_url


class RunSettings(Protocol):
    """What `run_meta` reads of a run's settings (`assay.harness_config.HarnessConfig`; the harness's
    transport imports this module: a protocol rather than an import back)."""

    @property
    def url(self) -> str: ...
    @property
    def adapter(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def params(self) -> Mapping[str, Any]: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def timeout(self) -> float: ...
    @property
    def retries(self) -> int: ...
    @property
    def rate_limit(self) -> float | None: ...


UNREADABLE_URL = "(a URL that cannot be read)"


def redact_url(url: str) -> str:
    """The URL without credentials and with query-string values masked: api keys live there too. A URL
    that cannot be read (`assay.urls.split_url`) is shown as UNREADABLE_URL, not quoted."""
    try:
        parts = split_url(url)
    except UrlError:
        return UNREADABLE_URL
    netloc = parts.host
    if ":" in netloc:  # an IPv6 literal
        netloc = f"[{netloc}]"
    if parts.port is not None:
        netloc += f":{parts.port}"
    query = urlencode([(k, "***") for k in parts.query_names])
    return parts.joined(netloc=netloc, query=query, fragment="")


def run_meta(
    config: RunSettings,
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
