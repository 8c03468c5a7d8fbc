"""Bounded work per reply: a reply larger than the cap, one that drips, one nested thousands of levels
deep and one with a 5000-digit number are each that query's error, with every other query answered, and
the client stops reading at the cap (tests/support/stub_server.py counts the bytes it got out before the
client closed). Nothing here asserts wall-clock time: the deadline is shown to apply by its words and by
how much of a dripping body was sent."""

from __future__ import annotations

import re
from typing import Any

import pytest

from assay.golden.model import GoldenQuery
from assay.harness import search_all_sync
from assay.harness_config import MAX_CONCURRENCY, HarnessConfig
from assay.replies import MIB, REPLY_MAX_DEPTH, ReplyError, decode_json_reply
from assay.results import QueryResult
from tests.support.stub_server import Reply, StubServer, hits_reply

# Far more than any socket buffer holds: if the client read on to the end, `sent` would reach it.
HUGE = 64 * MIB
HITS = b'{"hits": [{"id": "d1"}]}'
DEEP = b"[" * 100_000
LONG_NUMBER = b'{"hits": [{"id": 1' + b"0" * 5000 + b"}]}"


def run(stub: StubServer, texts: list[str], **config: Any) -> dict[str, QueryResult]:
    cfg = HarnessConfig(url=f"{stub.url}/search", retries=0, concurrency=4, **config)
    queries = [GoldenQuery(id=f"q-{t}", text=t) for t in texts]
    return {r.query_id: r for r in search_all_sync(queries, cfg)}


def test_each_hostile_reply_is_only_its_querys_error(stub_server: StubServer) -> None:
    stub_server.on("oversize", Reply(raw=HITS, content_type="application/json", pad=HUGE))
    stub_server.on("drip", Reply(raw=HITS, content_type="application/json", drip=0.1))
    stub_server.on("deep", Reply(raw=DEEP, content_type="application/json"))
    stub_server.on("digits", Reply(raw=LONG_NUMBER, content_type="application/json"))
    texts = ["fine 1", "oversize", "fine 2", "drip", "deep", "fine 3", "digits", "fine 4"]

    results = run(stub_server, texts, max_reply_bytes=MIB, timeout=0.5)

    errors = {qid: r.error for qid, r in results.items() if not r.ok}
    assert errors == {
        "q-oversize": "reply larger than the limit of 1 MB (HTTP 200, application/json)",
        "q-drip": "timeout after 0.5s (the reply was still arriving)",
        "q-deep": (
            "response is not JSON (application/json, 100000 bytes): "
            f"nested deeper than {REPLY_MAX_DEPTH} levels of arrays or objects"
        ),
        "q-digits": (
            f"response is not JSON (application/json, {len(LONG_NUMBER)} bytes): a number is too long to read"
        ),
    }
    for text in ("fine 1", "fine 2", "fine 3", "fine 4"):
        assert results[f"q-{text}"].ids == ("d1", "d2", "d3")
    # The drip was cut off by the deadline, not read to its end.
    (dripped,) = stub_server.requests_for("drip")
    assert dripped.sent < len(HITS)


@pytest.mark.parametrize("announce", [True, False], ids=["content-length", "until-close"])
def test_reading_stops_at_the_cap_whether_or_not_the_size_is_announced(
    stub_server: StubServer, announce: bool
) -> None:
    stub_server.on("big", Reply(raw=HITS, content_type="application/json", pad=HUGE, announce=announce))

    results = run(stub_server, ["big", "small"], max_reply_bytes=MIB)

    assert results["q-big"].error == "reply larger than the limit of 1 MB (HTTP 200, application/json)"
    assert results["q-big"].attempts == 1  # the same reply again would not fit either: no retry
    assert results["q-small"].ok
    (big,) = stub_server.requests_for("big")
    # The client closed at the cap: what went out is the cap and the sockets' buffers, far from 64 MiB.
    assert big.sent < 16 * MIB, big.sent


def test_a_reply_just_under_the_cap_is_read(stub_server: StubServer) -> None:
    stub_server.on("near", Reply(raw=HITS, content_type="application/json", pad=MIB - len(HITS)))

    results = run(stub_server, ["near"], max_reply_bytes=MIB)

    assert results["q-near"].ok and results["q-near"].ids == ("d1",)


def test_an_error_status_with_a_huge_body_is_still_that_querys_error(stub_server: StubServer) -> None:
    stub_server.on("boom", Reply(status=500, text="<html>", pad=HUGE))

    results = run(stub_server, ["boom"], max_reply_bytes=MIB)

    assert (
        results["q-boom"].error == "reply larger than the limit of 1 MB (HTTP 500, text/html; charset=utf-8)"
    )


def test_the_deadline_covers_a_reply_whose_headers_never_finish(stub_server: StubServer) -> None:
    # A server that accepts the request and then says nothing: the deadline, not the read timeout of
    # aiohttp (which is the same number), ends it; the words name the phase reached.
    stub_server.on("silent", hits_reply(["d1"], delay=5.0))

    results = run(stub_server, ["silent", "other"], timeout=0.3)

    assert results["q-silent"].error == "timeout after 0.3s"
    assert results["q-other"].ok


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>", "invalid JSON at line 1 column 1"),
        (b"[" * 2000 + b"]" * 2000, f"nested deeper than {REPLY_MAX_DEPTH} levels of arrays or objects"),
        # NaN sends the reply to the json module, which must hold the same depth.
        (
            b"[" * 1100 + b"NaN" + b"]" * 1100,
            f"nested deeper than {REPLY_MAX_DEPTH} levels of arrays or objects",
        ),
        (b"[" * 100_000, f"nested deeper than {REPLY_MAX_DEPTH} levels of arrays or objects"),
        (b"[1" + b"0" * 5000 + b"]", "a number is too long to read"),
        (b"\xff\xfe\x00", "not text in an encoding JSON allows"),
    ],
    ids=["html", "deep", "deep-with-nan", "unclosed", "digits", "bytes"],
)
def test_every_decode_failure_is_a_worded_reply_error_that_quotes_nothing(body: bytes, reason: str) -> None:
    with pytest.raises(ReplyError) as info:
        decode_json_reply(body)

    assert str(info.value).startswith(reason)
    assert "[[" not in str(info.value) and "html" not in str(info.value)


def test_concurrency_above_the_maximum_is_refused_in_words() -> None:
    with pytest.raises(ValueError, match=re.escape(f"concurrency 65: must be at most {MAX_CONCURRENCY}")):
        HarnessConfig(url="http://127.0.0.1:1/search", concurrency=MAX_CONCURRENCY + 1)
    with pytest.raises(ValueError, match=re.escape("max reply size 10 bytes: must be at least 1,024 bytes")):
        HarnessConfig(url="http://127.0.0.1:1/search", max_reply_bytes=10)
    assert HarnessConfig(url="http://127.0.0.1:1/search", concurrency=MAX_CONCURRENCY).concurrency == 64
