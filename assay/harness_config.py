"""What the search harness is given (pure, no Django): a target's settings (`HarnessConfig`, plain data a
Celery task carries as JSON), every invalid one named before any call (`config_problems`, a trial request
for the params by `params_problem`), the queries it reads (`SearchQuery`) and a request's body as bytes
(`encode_body`). The calls themselves are `assay.harness_http`; the pool of workers, `assay.harness`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlencode

from yarl import URL

from assay.adapters import Adapter, AdapterError, SearchCall, SearchRequest, make_adapter
from assay.netpolicy import private_targets_allowed, url_problem
from assay.replies import MAX_REPLY_BYTES
from assay.urls import SplitUrl, UrlError, split_url

# Requests in flight per run (or per chunk task on the server). More buys no speed from any engine worth
# measuring and multiplies what one run may hold: `concurrency` replies of up to `max_reply_bytes` each.
MAX_CONCURRENCY = 64


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
