"""A scriptable HTTP/1.1 stub search server on a free loopback port (asyncio, in a thread or a process).

Per query text it can answer late, with any status, HTML, a body without hits, junk hits, a 429 with
Retry-After, fail N times then succeed, or drop the connection; it adds any headers (X-Index-Generation)
and records every request it received (method, path, query string, headers, body, arrival time) plus the
most requests it had in flight at once, so tests assert what was sent rather than what was meant.

    with StubServer() as stub:
        stub.on("refund", Reply(status=503), Reply(json={"hits": [{"id": "d1"}]}))
        ... harness call against stub.url ...
        assert [r.key for r in stub.requests] == ["refund", "refund"]

Also runnable as its own process (the harness benchmark):
`python -m tests.support.stub_server --delay-ms 20 [--port 0] [--hits 10]` prints `listening on URL`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `json` is serialised; `text` is sent as is (HTML, junk), UTF-8 encoded, and
    `raw` byte for byte (another encoding); none of them means an empty body. `drop` closes the
    connection without answering (after `delay`).

    Hostile replies: `pad` adds that many spaces after the body (still valid JSON, sent in 64 KiB
    writes, so a test sees how much went out before the client closed: `Recorded.sent`), without a
    Content-Length when `announce` is off (the body then ends when the connection closes); `drip` sends
    the body one byte at a time, that many seconds apart, after the headers."""

    status: int = 200
    json: Any = None
    text: str | None = None
    raw: bytes | None = None
    content_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    pad: int = 0
    announce: bool = True
    drip: float = 0.0

    def encode(self, *, keep_alive: bool) -> bytes:
        head, body = self.parts(keep_alive=keep_alive)
        return head + body

    def parts(self, *, keep_alive: bool) -> tuple[bytes, bytes]:
        """The head (status line and headers) and the body, without the padding."""
        if self.raw is not None:
            body, content_type = self.raw, self.content_type or "application/octet-stream"
        elif self.text is not None:
            body = self.text.encode()
            content_type = self.content_type or "text/html; charset=utf-8"
        elif self.json is not None:
            body = json.dumps(self.json).encode()
            content_type = self.content_type or "application/json"
        else:
            body, content_type = b"", self.content_type or "text/plain"
        try:
            reason = HTTPStatus(self.status).phrase
        except ValueError:
            reason = "Status"
        head = [f"HTTP/1.1 {self.status} {reason}", f"Content-Type: {content_type}"]
        if self.announce:
            head.append(f"Content-Length: {len(body) + self.pad}")
        head.append(f"Connection: {'keep-alive' if keep_alive and self.announce else 'close'}")
        head += [f"{k}: {v}" for k, v in self.headers.items()]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1"), body

    async def send(
        self,
        writer: asyncio.StreamWriter,
        request: Recorded,
        *,
        keep_alive: bool,
        gone: Callable[[], bool] = lambda: False,
    ) -> None:
        """Write the reply, counting the body bytes sent in `request.sent` as they go; a drip stops
        when `gone` says the client has closed its side."""
        head, body = self.parts(keep_alive=keep_alive)
        if not (self.pad or self.drip):
            writer.write(head + body)
            await writer.drain()
            request.sent = len(body)
            return
        writer.write(head)
        await writer.drain()
        if self.drip:
            for i in range(len(body)):
                if gone():
                    return
                writer.write(body[i : i + 1])
                await writer.drain()
                request.sent += 1
                await asyncio.sleep(self.drip)
        else:
            writer.write(body)
            await writer.drain()
            request.sent += len(body)
        block = b" " * 65536
        left = self.pad
        while left > 0:
            piece = block[: min(left, len(block))]
            writer.write(piece)
            await writer.drain()
            request.sent += len(piece)
            left -= len(piece)


def hits_reply(ids: Sequence[str | int], **kwargs: Any) -> Reply:
    """The http_json answer for these ids (docs/cli.md)."""
    return Reply(json={"hits": [{"id": i} for i in ids]}, **kwargs)


@dataclass
class Recorded:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]  # names lower-cased
    body: bytes
    received_at: float  # time.monotonic() when the request was read, for ordering and spacing checks
    received_wall: float  # time.time() at the same moment, for checks against HTTP dates
    key: str | None = None
    sent: int = 0  # body bytes of the reply written (and drained) before it ended or the client left

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def form(self) -> list[tuple[str, str]]:
        return parse_qsl(self.body.decode(), keep_blank_values=True)

    def param(self, name: str) -> list[str]:
        """Every value of `name` in the query string or form body (Solr repeats fq)."""
        pairs = self.query + (self.form if "form-urlencoded" in self.headers.get("content-type", "") else [])
        return [v for k, v in pairs if k == name]


def default_key(request: Recorded) -> str | None:
    """The query text: http_json's body `q`, Solr's `q` parameter, else None."""
    try:
        body = request.json
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("q"), str):
        return body["q"]
    values = request.param("q")
    return values[0] if values else None


class StubServer:
    """See the module docstring. Scripts are per key (by default the query text); a key's replies are
    used in order and the last one repeats; keys without a script get `default`."""

    def __init__(
        self,
        *,
        default: Reply | Callable[[Recorded], Reply] | None = None,
        key: Callable[[Recorded], str | None] = default_key,
        host: str = "127.0.0.1",
        port: int = 0,
        record: bool = True,
    ) -> None:
        self.default = default or hits_reply(["d1", "d2", "d3"])
        self.key = key
        self.host, self.port = host, port
        # Off in process mode (the benchmarks): nothing reads the requests there, and 10^5 kept requests
        # would slow the server down (the cyclic collector walks them) as a long benchmark goes on.
        self.record = record
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._scripts: dict[str | None, list[Reply]] = {}
        self._served: dict[str | None, int] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def on(self, key: str | None, *replies: Reply) -> StubServer:
        with self._lock:
            self._scripts[key] = list(replies)
            self._served[key] = 0
        return self

    def requests_for(self, key: str) -> list[Recorded]:
        return [r for r in self.requests if r.key == key]

    def _reply_for(self, request: Recorded) -> Reply:
        with self._lock:
            script = self._scripts.get(request.key)
            if script:
                n = self._served[request.key]
                self._served[request.key] = n + 1
                return script[min(n, len(script) - 1)]
        return self.default(request) if callable(self.default) else self.default

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line.strip():
                    return
                method, target, _version = line.decode("latin-1").split()
                headers: dict[str, str] = {}
                while (raw := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = raw.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                parts = urlsplit(target)
                request = Recorded(
                    method=method,
                    path=parts.path,
                    query=parse_qsl(parts.query, keep_blank_values=True),
                    headers=headers,
                    body=body,
                    received_at=time.monotonic(),
                    received_wall=time.time(),
                )
                request.key = self.key(request)
                if self.record:
                    self.requests.append(request)
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    reply = self._reply_for(request)
                    if reply.delay:
                        await asyncio.sleep(reply.delay)
                    if reply.drop:
                        return
                    keep_alive = headers.get("connection", "").lower() != "close"
                    await reply.send(writer, request, keep_alive=keep_alive, gone=reader.at_eof)
                finally:
                    self.in_flight -= 1
                if not keep_alive or not reply.announce:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            return  # the client went away or sent something this stub does not speak
        finally:
            writer.close()

    async def serve(self, ready: Callable[[], None] | None = None) -> None:
        """Serve until cancelled (process mode) after calling `ready` with the port bound."""
        self._server = await asyncio.start_server(self._handle, self.host, self.port, backlog=512)
        self.port = self._server.sockets[0].getsockname()[1]
        if ready:
            ready()
        async with self._server:
            await self._server.serve_forever()

    def start(self) -> StubServer:
        started = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            task = self._loop.create_task(self.serve(started.set))
            try:
                self._loop.run_until_complete(task)
            except asyncio.CancelledError:
                pass
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, name="stub-server", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("stub server did not start within 10 s")
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        loop = self._loop

        def cancel_all() -> None:
            for task in asyncio.all_tasks(loop):
                task.cancel()

        loop.call_soon_threadsafe(cancel_all)
        self._thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--hits", type=int, default=10)
    args = parser.parse_args(argv)
    server = StubServer(
        default=hits_reply([f"d{i}" for i in range(1, args.hits + 1)], delay=args.delay_ms / 1000),
        host=args.host,
        port=args.port,
        record=False,
    )
    asyncio.run(server.serve(lambda: print(f"listening on {server.url}", flush=True)))


if __name__ == "__main__":
    main()
