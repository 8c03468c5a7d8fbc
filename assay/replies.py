"""Reading a remote reply within bounds (pure, no Django): at most so many bytes, and its JSON decoded
with every failure worded.

Every reply Assay reads comes from an address someone typed (a search target, a judge's endpoint, a
webhook), and the far end decides what it sends. So no reply is read whole on trust: the body is read in
chunks and refused as soon as it passes the cap (a `Content-Length` above the cap is refused before any
of the body is read), and its JSON is decoded so that nothing the far end can send (nesting thousands of
levels deep, an integer of thousands of digits, bytes that are no text) raises anything but
`ReplyError`, whose words say what was wrong and never quote the reply (what an address answers can be
an admin page or a metadata service's keys, and errors are shown on pages; `assay.netpolicy.body_shape`).
The caller records a `ReplyError` as that one query's or pair's error.

The time a reply may take is bounded by the caller: a deadline on the whole request (connect, send and
the whole body), not only on the time between two reads, so a server that drips a byte at a time cannot
hold a worker.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from assay.jsonin import json_depth_over
from assay.problems import size_text

if TYPE_CHECKING:
    import aiohttp

MIB = 1024 * 1024
# A search reply of 100 hits with whole documents in `_source` is a few megabytes; a judge's chat
# completion is a few kilobytes. 8 MB leaves room for both and keeps a worker's memory bounded:
# `concurrency` replies in flight at most (docs/runs.md, "Limits").
MAX_REPLY_MB = 8
MAX_REPLY_BYTES = MAX_REPLY_MB * MIB
# Deeper than any reply Assay reads; orjson refuses deeper replies itself, and the json module (read
# for what orjson refuses) is held to the same depth.
REPLY_MAX_DEPTH = 1024


class ReplyError(ValueError):
    """A reply that cannot be used: larger than the cap, or not readable JSON. Its text is the reason
    only, never any of the reply; `syntax` is set when the body is simply not JSON (an HTML page), where
    the reason adds nothing to saying so."""

    def __init__(self, reason: str, *, syntax: bool = False) -> None:
        super().__init__(reason)
        self.syntax = syntax


def too_large(limit: int) -> ReplyError:
    return ReplyError(f"reply larger than the limit of {size_text(limit)}")


class CappedBody:
    """A body read chunk by chunk that refuses to grow past `limit` bytes (`ReplyError`)."""

    def __init__(self, limit: int, announced: int | None = None) -> None:
        if announced is not None and announced > limit:
            raise too_large(limit)  # the server said so itself: nothing is read
        self.limit = limit
        self._parts: list[bytes] = []
        self.size = 0

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            raise too_large(self.limit)
        self._parts.append(chunk)

    def data(self) -> bytes:
        return b"".join(self._parts)


async def read_capped(chunks: AsyncIterable[bytes], limit: int, *, announced: int | None = None) -> bytes:
    """The body from an async stream of chunks (aiohttp's `response.content.iter_any()`), at most
    `limit` bytes; `announced` is the reply's Content-Length, when it gave one."""
    body = CappedBody(limit, announced)
    async for chunk in chunks:
        body.add(chunk)
    return body.data()


async def read_response(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """An aiohttp response's body, at most `limit` bytes; the `ReplyError` names the reply's status and
    content type. Leaving the response's block after it closes the connection: the rest is never read."""
    try:
        return await read_capped(response.content.iter_any(), limit, announced=response.content_length)
    except ReplyError as exc:
        kind = response.headers.get("Content-Type") or "no content type"
        raise ReplyError(f"{exc} (HTTP {response.status}, {kind})") from None


def read_capped_sync(chunks: Iterable[bytes], limit: int, *, announced: int | None = None) -> bytes:
    """`read_capped` for a blocking stream (httpx's `response.iter_bytes()`)."""
    body = CappedBody(limit, announced)
    for chunk in chunks:
        body.add(chunk)
    return body.data()


def until(chunks: Iterable[bytes], deadline: float) -> Iterator[bytes]:
    """The chunks of a blocking stream, raising TimeoutError once `time.monotonic()` passes `deadline`:
    a blocking client bounds each read only, which a server dripping a byte at a time never exceeds."""
    for chunk in chunks:
        if time.monotonic() > deadline:
            raise TimeoutError
        yield chunk


def content_length(value: str | None) -> int | None:
    """A Content-Length header's value as a number; None when absent or not a number."""
    text = (value or "").strip()
    return int(text) if text.isdigit() and len(text) < 20 else None


def decode_json_reply(body: bytes) -> Any:
    """A reply's JSON. orjson reads the common reply (UTF-8) in a fraction of the json module's time;
    what it refuses goes to the json module, which reads the raw bytes as before (it detects UTF-16
    and 32 and a byte-order mark, accepts NaN and integers of any size up to Python's digit limit).
    Raises `ReplyError` naming the problem (a syntax error's place, nesting too deep, a number too long
    to read, bytes that are no text), never quoting the reply."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ReplyError(f"invalid JSON at line {exc.lineno} column {exc.colno}", syntax=True) from None
    except UnicodeDecodeError:
        raise ReplyError("not text in an encoding JSON allows", syntax=True) from None
    except RecursionError:
        raise ReplyError(_TOO_DEEP) from None
    except ValueError:  # the only other: an integer literal beyond Python's digit limit
        raise ReplyError("a number is too long to read") from None
    if json_depth_over(value, REPLY_MAX_DEPTH):
        raise ReplyError(_TOO_DEEP)
    return value


_TOO_DEEP = f"nested deeper than {REPLY_MAX_DEPTH} levels of arrays or objects"
