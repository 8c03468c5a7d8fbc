"""Calling an OpenAI-compatible chat completions endpoint for many pairs (pure, no Django; aiohttp).

At most `concurrency` requests are in flight (an asyncio semaphore: the judge's limit for its endpoint);
429 (honouring `Retry-After`, in seconds or as an HTTP date, capped), every 5xx, timeouts and dropped
connections are retried with capped exponential backoff; other 4xx are not. Addresses follow
`assay.netpolicy` as search targets do (the harness's `public_connector` on every connection). Each
pair's reply is handed to `on_reply` as it finishes, so the caller can store it at once.

Each request has a deadline over connect, send and the whole reply (`Endpoint.timeout`), and its body a
size cap (`assay.replies`); a whole call of `judge_all` may have a deadline too (the try button's). A
reply over the cap, past the deadline or not readable JSON is that pair's failure, never the call's.

The API key goes into the `Authorization` header and nowhere else: errors are built from statuses, body
shapes (content type and size, `assay.netpolicy.body_shape`) and the exception's kind, never from a
reply's or an exception's text, which could echo the request. The model's text itself (a reason, or the
reply an error quotes) has the key masked before it is parsed (`assay.secrets.mask_secrets`): an
endpoint that echoes its request must not have the key stored or shown.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from assay.harness_config import http_url_problem
from assay.harness_http import is_transient_status, parse_retry_after
from assay.judge.answer import Answer, parse_answer
from assay.netpolicy import AddressRefused, body_shape, private_targets_allowed
from assay.replies import MAX_REPLY_BYTES, ReplyError, decode_json_reply, read_response
from assay.secrets import mask_secrets
from assay.transport import describe_transport_error, public_connector
from assay.urls import UrlError, split_url, url_credential_problems


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    retries: int = 3  # after the first attempt, for transient failures only
    backoff_base: float = 1.0  # seconds before the first retry; doubles each retry
    backoff_max: float = 30.0
    retry_after_max: float = 120.0  # cap on an honoured Retry-After

    def delay(self, retry: int, retry_after: float | None) -> float:
        """The sleep before retry number `retry` (1-based): the server's Retry-After when it named one
        (capped: it knows when it has capacity), else base * 2^(retry-1) with up to 10% jitter, capped."""
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        return min(self.backoff_max, self.backoff_base * 2 ** (retry - 1) * (1 + 0.1 * random.random()))


@dataclass(frozen=True, slots=True)
class Endpoint:
    base_url: str  # e.g. https://api.openai.com/v1 ; requests go to <base_url>/chat/completions
    model: str
    api_key: str | None = None  # the value, read from the environment by the caller; never stored
    temperature: float = 0.0
    concurrency: int = 4
    timeout: float = 120.0  # seconds per request: connect, send and the whole reply within it
    max_reply_bytes: int = MAX_REPLY_BYTES
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    allow_private: bool = field(default_factory=private_targets_allowed)

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


def endpoint_problem(base_url: str, *, allow_private: bool | None = None) -> str | None:
    """Why a judge may not call this base URL (None when it may): the URL its requests go to,
    <base_url>/chat/completions, judged as a search URL is (`assay.harness_config.http_url_problem`: readable,
    http(s) with a host, an address the network policy allows, one aiohttp will call)."""
    allowed = private_targets_allowed() if allow_private is None else allow_private
    return http_url_problem(base_url.rstrip("/") + "/chat/completions", allow_private=allowed)


# Where a judge's key goes instead of its URL (docs/judge.md, docs/deployment.md "Secrets").
_USE_KEY_VARIABLE = (
    "put the key in an environment variable granted to the set and name it in the API key variable "
    "field (it is sent as the Authorization header)"
)


def endpoint_credential_problems(base_url: str) -> list[str]:
    """Credentials in a base URL about to be saved (`assay.urls.url_credential_problems`): they would be
    stored and shown on the judge's page. Empty for a URL that cannot be read (`endpoint_problem` says)."""
    try:
        parts = split_url(base_url)
    except UrlError:
        return []
    return url_credential_problems(parts, _USE_KEY_VARIABLE)


@dataclass(frozen=True, slots=True)
class Call:
    key: Hashable  # the caller's name for the pair
    messages: Sequence[dict[str, str]]
    response_format: dict[str, Any] | None = None
    scale: range = range(0, 4)


@dataclass(frozen=True, slots=True)
class Reply:
    """One pair's outcome. `answer` is set when the model answered (a grade, or an answer that broke the
    contract: paid for either way); `failure` when no answer came (HTTP error, timeout after retries)."""

    key: Hashable
    answer: Answer | None = None
    failure: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    attempts: int = 0


class _Transient(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Permanent(Exception):
    pass


def _usage(body: dict[str, Any]) -> tuple[int, int]:
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return 0, 0
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return (
        prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else 0,
        completion if isinstance(completion, int) and not isinstance(completion, bool) else 0,
    )


def _content(body: Any) -> str:
    """The first choice's message text; _Permanent when the reply is not a chat completion."""
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise _Permanent("not a chat completion (no choices[0].message.content)") from None
    if not isinstance(content, str):
        raise _Permanent("not a chat completion (message content is not text)")
    return content


class _Judge:
    def __init__(self, endpoint: Endpoint, session: aiohttp.ClientSession) -> None:
        self.endpoint = endpoint
        self.session = session
        self.headers = {"Content-Type": "application/json"}
        if endpoint.api_key:
            self.headers["Authorization"] = f"Bearer {endpoint.api_key}"
        self.secrets = (endpoint.api_key,) if endpoint.api_key else ()

    def _body(self, call: Call) -> bytes:
        body: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": list(call.messages),
            "temperature": self.endpoint.temperature,
        }
        if call.response_format is not None:
            body["response_format"] = call.response_format
        return json.dumps(body, ensure_ascii=False).encode()

    async def _attempt(self, data: bytes) -> dict[str, Any]:
        endpoint = self.endpoint
        try:
            # The whole request within the deadline: aiohttp alone bounds only the time between reads.
            async with asyncio.timeout(endpoint.timeout):
                async with self.session.post(
                    endpoint.url, data=data, headers=self.headers, allow_redirects=False
                ) as response:
                    try:
                        raw = await read_response(response, endpoint.max_reply_bytes)
                    except ReplyError as exc:
                        raise _Permanent(str(exc)) from None
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, AddressRefused):
                raise _Permanent(str(exc.os_error)) from exc
            raise _Transient(describe_transport_error(exc, self.endpoint.timeout)) from exc
        except (
            ValueError
        ) as exc:  # a request aiohttp cannot build (InvalidURL, a host IDNA refuses): permanent
            raise _Permanent(describe_transport_error(exc, self.endpoint.timeout)) from exc
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _Transient(describe_transport_error(exc, self.endpoint.timeout)) from exc
        shape = body_shape(response.headers.get("Content-Type"), len(raw))
        if is_transient_status(response.status):
            wait = parse_retry_after(response.headers.get("Retry-After"))
            raise _Transient(f"HTTP {response.status} ({shape})", retry_after=wait)
        if response.status != 200:
            raise _Permanent(f"HTTP {response.status} ({shape})")
        try:
            body = decode_json_reply(raw)
        except ReplyError as exc:
            why = "" if exc.syntax else f": {exc}"
            raise _Permanent(f"reply is not JSON ({shape}){why}") from None
        if not isinstance(body, dict):
            raise _Permanent(f"reply is not a JSON object ({shape})")
        return body

    async def one(self, call: Call) -> Reply:
        data = self._body(call)
        attempts = 0
        started = time.perf_counter()
        while True:
            attempts += 1
            try:
                body = await self._attempt(data)
                content = mask_secrets(_content(body), self.secrets)
            except _Transient as exc:
                if attempts > self.endpoint.retry.retries:
                    return self._failed(call, f"{exc} ({attempts} attempts)", started, attempts)
                await asyncio.sleep(self.endpoint.retry.delay(attempts, exc.retry_after))
                continue
            except _Permanent as exc:
                return self._failed(call, str(exc), started, attempts)
            prompt_tokens, completion_tokens = _usage(body)
            return Reply(
                key=call.key,
                answer=parse_answer(content, call.scale),
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                latency_ms=(time.perf_counter() - started) * 1000,
                attempts=attempts,
            )

    @staticmethod
    def _failed(call: Call, failure: str, started: float, attempts: int) -> Reply:
        latency = (time.perf_counter() - started) * 1000
        return Reply(key=call.key, failure=failure, latency_ms=latency, attempts=attempts)


def _session(endpoint: Endpoint) -> aiohttp.ClientSession:
    timeout = aiohttp.ClientTimeout(
        total=None, connect=endpoint.timeout, sock_connect=endpoint.timeout, sock_read=endpoint.timeout
    )
    connector = public_connector(limit=endpoint.concurrency, allow_private=endpoint.allow_private)
    return aiohttp.ClientSession(
        connector=connector, timeout=timeout, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False
    )


def past_deadline(deadline: float) -> str:
    """The failure of a pair left unanswered when a whole call's deadline passed."""
    return f"no answer within {deadline:g} s (the limit for the whole call)"


async def judge_all(
    calls: Sequence[Call],
    endpoint: Endpoint,
    *,
    on_reply: Callable[[Reply], None] | None = None,
    deadline: float | None = None,
) -> list[Reply]:
    """One Reply per call, in the order given, with at most `endpoint.concurrency` requests in flight.
    A base URL the policy refuses fails every call without a request. With a `deadline` (seconds), the
    whole call ends by then, retries and waits included: each pair still unanswered fails with
    `past_deadline`'s words (the try button waits in a web request)."""
    problem = endpoint_problem(endpoint.base_url, allow_private=endpoint.allow_private)
    if problem is not None:
        replies = [Reply(key=c.key, failure=f"endpoint: {problem}") for c in calls]
        for reply in replies:
            if on_reply:
                on_reply(reply)
        return replies
    semaphore = asyncio.Semaphore(endpoint.concurrency)
    until = None if deadline is None else asyncio.get_running_loop().time() + deadline
    async with _session(endpoint) as session:
        judge = _Judge(endpoint, session)

        async def bounded(call: Call) -> Reply:
            try:
                async with asyncio.timeout_at(until):
                    async with semaphore:
                        reply = await judge.one(call)
            except TimeoutError:  # only the whole call's: one request's deadline is caught in `one`
                assert deadline is not None
                reply = Reply(key=call.key, failure=past_deadline(deadline))
            if on_reply:
                on_reply(reply)
            return reply

        return list(await asyncio.gather(*(bounded(c) for c in calls)))


def judge_all_sync(
    calls: Sequence[Call], endpoint: Endpoint, *, deadline: float | None = None
) -> list[Reply]:
    """`judge_all` on a fresh event loop (the page's try button, tests)."""
    return asyncio.run(judge_all(calls, endpoint, deadline=deadline))
