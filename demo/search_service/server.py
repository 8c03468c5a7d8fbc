"""The HTTP server (`POST /search`, `GET /health`) and the command line.

Part of `demo.search_service` (its docstring has the contract and the query semantics).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from demo.search_service.base import (
    DEFAULT_MIN_SHOULD_MATCH,
    DEFAULT_SYNONYMS_PATH,
    MAX_REQUEST_BYTES,
    ProblemsError,
    RequestError,
)
from demo.search_service.corpus import load_corpus
from demo.search_service.engine import search
from demo.search_service.index import SearchIndex, build_index
from demo.search_service.query import SearchRequest, parse_search_request
from demo.search_service.synonyms import SynonymPack, load_synonyms
from demo.serving import LISTEN_BACKLOG

# ---------------------------------------------------------------------------------------------- http


class SearchServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default of 5 drops a chunk's burst of connects (demo/serving.py).
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        *,
        index: SearchIndex,
        synonyms: SynonymPack | None,
        generation: str,
        delay_ms: int,
        min_should_match: int,
        jitter: float = 0.0,
        jitter_seed: int = 0,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, SearchHandler)
        self.index = index
        self.synonyms = synonyms
        self.generation = generation
        self.delay_ms = delay_ms
        self.min_should_match = min_should_match
        self.jitter = jitter
        self.jitter_seed = jitter_seed
        self._asked: dict[str, int] = {}  # request -> how many times it was asked (for the jitter)
        self._asked_lock = threading.Lock()

    def jittered(self, request: SearchRequest) -> bool:
        """Whether this asking of `request` swaps its two top hits (the module docstring, "Jitter")."""
        if self.jitter <= 0:
            return False
        # The tuning parameters are part of the request: keyed without them, the askings of a sweep's
        # configurations would share one count, and a configuration's jitter would depend on how many
        # others were asked the query before it (docs/experiments.md). A request that sends neither keeps
        # the key it always had, so the demo's documented noise floor (docs/metrics.md) stays what it is.
        asked_for: list[Any] = [request.q, request.filters, request.locale, request.rewrite, request.size]
        tuning = [request.title_weight, request.min_should_match]
        if any(value is not None for value in tuning):
            asked_for.append(tuning)
        key = json.dumps(asked_for, sort_keys=True)
        with self._asked_lock:
            asked = self._asked.get(key, 0)
            self._asked[key] = asked + 1
        digest = hashlib.sha256(f"{self.jitter_seed}\0{key}\0{asked}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.jitter

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class SearchHandler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections alive for harnesses that pool them; every reply sets Content-Length.
    protocol_version = "HTTP/1.1"
    # Headers and body leave in separate writes; with Nagle on, the body waits ~40 ms for a delayed ACK.
    disable_nagle_algorithm = True
    server: SearchServer

    def log_message(self, format: str, *args: Any) -> None:
        # Quiet by default: evaluation runs send thousands of requests and stdout is the readiness channel.
        return

    def _send(self, status: int, payload: Mapping[str, Any], *, close: bool = False) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Index-Generation", self.server.generation)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, problems: Sequence[str], *, close: bool = False) -> None:
        self._send(status, {"error": "; ".join(problems), "problems": list(problems)}, close=close)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/health":
            synonyms = self.server.synonyms
            self._send(
                200,
                {
                    "status": "ok",
                    "documents": len(self.server.index),
                    "index_generation": self.server.generation,
                    "synonyms": synonyms.label if synonyms else None,
                },
            )
        elif path == "/search":
            self._error(405, ["method: use POST for /search"])
        else:
            self._error(404, [f"path: no such endpoint {path!r}"])

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        length_header = self.headers.get("Content-Length")
        # isascii too: "²".isdigit() is true and int() refuses it.
        if length_header is None or not (length_header.isascii() and length_header.isdigit()):
            self._error(411 if length_header is None else 400, ["body: Content-Length required"], close=True)
            return
        length = int(length_header)
        if length > MAX_REQUEST_BYTES:
            self._error(413, [f"body: larger than {MAX_REQUEST_BYTES} bytes"], close=True)
            return
        raw = self.rfile.read(length)
        if path != "/search":
            self._error(404, [f"path: no such endpoint {path!r}"])
            return
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            self._error(400, ["body: not valid UTF-8 JSON"])
            return
        try:
            request = parse_search_request(payload)
            result = search(
                self.server.index,
                request.q,
                filters=request.filters,
                size=request.size,
                locale=request.locale,
                rewrite=request.rewrite,
                synonyms=self.server.synonyms,
                min_should_match=self.server.min_should_match,
                title_weight=request.title_weight,
                request_min_should_match=request.min_should_match,
            )
        except RequestError as exc:
            self._error(400, exc.problems)
            return
        if self.server.delay_ms:
            time.sleep(self.server.delay_ms / 1000)
        hits = list(result.hits)
        jittered = len(hits) >= 2 and self.server.jittered(request)
        if jittered:
            hits[0], hits[1] = hits[1], hits[0]
        meta: dict[str, Any] = {
            "index_generation": self.server.generation,
            "rewriter": result.rewriter,
            "rewritten_query": result.rewritten_query,
            "took_ms": result.took_ms,
        }
        if self.server.jitter > 0:
            meta["jittered"] = jittered
        self._send(
            200, {"hits": [{"id": h.id, "title": h.title, "score": h.score} for h in hits], "meta": meta}
        )


def make_server(
    index: SearchIndex,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    synonyms: SynonymPack | None = None,
    generation: str | None = None,
    delay_ms: int = 0,
    min_should_match: int = DEFAULT_MIN_SHOULD_MATCH,
    jitter: float = 0.0,
    jitter_seed: int = 0,
) -> SearchServer:
    """A bound (not yet serving) server; call `serve_forever()` in a thread, `shutdown()` to stop.
    `jitter`: the share of askings whose two top hits are swapped (the module docstring, "Jitter")."""
    if delay_ms < 0:
        raise ValueError(f"delay_ms: expected 0 or more, got {delay_ms}")
    if not 0 <= jitter <= 1:
        raise ValueError(f"jitter: expected a share from 0 to 1, got {jitter}")
    if min_should_match < 1:
        raise ValueError(f"min_should_match: expected at least 1, got {min_should_match}")
    return SearchServer(
        (host, port),
        index=index,
        synonyms=synonyms,
        generation=generation or index.generation,
        delay_ms=delay_ms,
        min_should_match=min_should_match,
        jitter=jitter,
        jitter_seed=jitter_seed,
    )


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo.search_service", description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True, help="JSONL, one document per line")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=_non_negative, default=8765, help="0 picks a free port")
    parser.add_argument(
        "--synonyms", default=str(DEFAULT_SYNONYMS_PATH), help="synonym pack for rewrite=true requests"
    )
    parser.add_argument("--generation", default=None, help="index generation id (default: content hash)")
    parser.add_argument("--delay-ms", type=_non_negative, default=0, help="added to every search reply")
    parser.add_argument("--min-should-match", type=_positive, default=DEFAULT_MIN_SHOULD_MATCH)
    parser.add_argument(
        "--jitter",
        type=_share,
        default=0.0,
        help="share of askings whose two top hits are swapped (default 0: off)",
    )
    parser.add_argument("--jitter-seed", type=int, default=0, help="seed of the jitter's choice")
    args = parser.parse_args(argv)
    try:
        docs = load_corpus(args.corpus)
        synonyms = load_synonyms(args.synonyms)
    except (OSError, ProblemsError) as exc:
        problems = exc.problems if isinstance(exc, ProblemsError) else [str(exc)]
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    index = build_index(docs)
    try:
        server = make_server(
            index,
            host=args.host,
            port=args.port,
            synonyms=synonyms,
            generation=args.generation,
            delay_ms=args.delay_ms,
            min_should_match=args.min_should_match,
            jitter=args.jitter,
            jitter_seed=args.jitter_seed,
        )
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"listening on {server.url}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        index.close()
    return 0
