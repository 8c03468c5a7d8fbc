"""The search harness against a real loopback HTTP server (tests/support/stub_server.py).

Timing facts (a retry came after Retry-After, the rate limit spaced requests) are read from the server's
own arrival timestamps, never from the test's wall clock.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from assay import harness_http
from assay.golden.model import GoldenQuery
from assay.harness import search_all_sync
from assay.harness_config import HarnessConfig
from assay.harness_http import backoff_delay, field_path, parse_retry_after
from assay.results import QueryResult
from assay.run_meta import redact_url, run_meta
from tests.support.processes import refused_url
from tests.support.stub_server import Reply, StubServer, hits_reply

FAST: dict[str, Any] = {"backoff_base": 0.01, "backoff_max": 0.05}


def q(text: str, *, qid: str | None = None, **kwargs: Any) -> GoldenQuery:
    return GoldenQuery(id=qid or f"q-{text}", text=text, **kwargs)


def config(stub: StubServer, **kwargs: Any) -> HarnessConfig:
    return HarnessConfig(url=f"{stub.url}/search", **{**FAST, **kwargs})


def only(results: list[QueryResult]) -> QueryResult:
    assert len(results) == 1
    return results[0]


def test_it_sends_text_filters_size_locale_params_and_headers(stub_server: StubServer) -> None:
    query = q("refund policy", locale="de-DE", filters={"product": "billing", "status": ["published"]})
    cfg = config(
        stub_server,
        size=7,
        params={"rewrite": True, "reranker": "off"},
        headers={"X-Cache-Bypass": "1", "Authorization": "Bearer s3cret"},
    )

    result = only(search_all_sync([query], cfg))

    assert result.ok and result.ids == ("d1", "d2", "d3")
    (request,) = stub_server.requests
    assert request.method == "POST" and request.path == "/search"
    assert request.json == {
        "q": "refund policy",
        "filters": {"product": "billing", "status": ["published"]},
        "size": 7,
        "locale": "de-DE",
        "rewrite": True,
        "reranker": "off",
    }
    assert request.headers["accept-language"] == "de-DE"
    assert request.headers["x-cache-bypass"] == "1"
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["content-type"] == "application/json"


def test_it_omits_locale_when_the_query_has_none(stub_server: StubServer) -> None:
    search_all_sync([q("plain")], config(stub_server))

    (request,) = stub_server.requests
    assert "locale" not in request.json and "accept-language" not in request.headers
    assert request.json["filters"] == {}


def test_an_explicit_accept_language_header_wins_over_the_locale(stub_server: StubServer) -> None:
    search_all_sync([q("x", locale="fr-FR")], config(stub_server, headers={"accept-language": "en"}))

    (request,) = stub_server.requests
    assert request.headers["accept-language"] == "en"
    assert request.json["locale"] == "fr-FR"


def test_it_returns_results_in_golden_order_and_reports_each_once(stub_server: StubServer) -> None:
    # The first query answers last, so completion order differs from golden order.
    stub_server.on("slow", hits_reply(["s1"], delay=0.3))
    stub_server.on("fast", hits_reply(["f1"]))
    seen: list[str] = []

    results = search_all_sync(
        [q("slow"), q("fast")],
        config(stub_server, concurrency=2),
        on_result=lambda r: seen.append(r.query_id),
    )

    assert [r.query_id for r in results] == ["q-slow", "q-fast"]
    assert [r.ids for r in results] == [("s1",), ("f1",)]
    assert seen == ["q-fast", "q-slow"]


def test_it_converts_integer_ids_to_strings_and_keeps_titles(stub_server: StubServer) -> None:
    stub_server.on("t", Reply(json={"hits": [{"id": 12, "title": "Refunds"}, {"id": "d-2"}]}))

    result = only(search_all_sync([q("t")], config(stub_server)))

    assert result.ids == ("12", "d-2")
    assert result.titles == ("Refunds", "")


def test_it_retries_connect_errors_then_records_the_error() -> None:
    cfg = HarnessConfig(url=refused_url(), retries=2, **FAST)

    result = only(search_all_sync([q("anything")], cfg))

    assert not result.ok and result.ids == ()
    assert result.error is not None and result.error.startswith("connect error")
    assert "(3 attempts)" in result.error
    assert result.attempts == 3 and result.status is None


def test_it_retries_5xx_until_success(stub_server: StubServer) -> None:
    stub_server.on("flaky", Reply(status=503), Reply(status=500, text="oops"), hits_reply(["ok"]))

    result = only(search_all_sync([q("flaky")], config(stub_server, retries=3)))

    assert result.ok and result.ids == ("ok",) and result.status == 200
    assert result.attempts == 3
    assert len(stub_server.requests_for("flaky")) == 3


def test_it_gives_up_on_5xx_after_its_retries(stub_server: StubServer) -> None:
    stub_server.on("down", Reply(status=502, text="<html>bad gateway</html>"))

    result = only(search_all_sync([q("down")], config(stub_server, retries=2)))

    # The body is not echoed (it may be anything the URL reached): its content type and size are.
    assert result.error == "HTTP 502 (text/html; charset=utf-8, 24 bytes) (3 attempts)"
    assert result.status == 502 and result.attempts == 3 and result.ids == ()
    assert len(stub_server.requests) == 3


@pytest.mark.parametrize("status", [501, 507, 520, 524, 599])
def test_it_retries_every_5xx_not_only_the_common_ones(stub_server: StubServer, status: int) -> None:
    stub_server.on("edge", Reply(status=status, text="origin unreachable"), hits_reply(["d1"]))

    result = only(search_all_sync([q("edge")], config(stub_server, retries=1)))

    assert result.ok and result.ids == ("d1",) and result.attempts == 2
    assert len(stub_server.requests_for("edge")) == 2


def test_it_honours_retry_after_seconds_on_429(stub_server: StubServer) -> None:
    stub_server.on("busy", Reply(status=429, headers={"Retry-After": "1"}), hits_reply(["d9"]))

    result = only(search_all_sync([q("busy")], config(stub_server)))

    assert result.ok and result.ids == ("d9",) and result.attempts == 2
    first, second = stub_server.requests_for("busy")
    # FAST backoff would retry after ~10 ms: a gap of a second is the server's Retry-After honoured.
    assert second.received_at - first.received_at >= 1.0


def test_it_honours_retry_after_as_an_http_date(stub_server: StubServer) -> None:
    # Whole seconds, as an HTTP date carries them, far enough ahead that the first call comes before it.
    when = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    header = format_datetime(when, usegmt=True)
    stub_server.on("busy", Reply(status=429, headers={"Retry-After": header}), hits_reply(["d9"]))

    result = only(search_all_sync([q("busy")], config(stub_server)))

    assert result.ok and result.attempts == 2
    first, second = stub_server.requests_for("busy")
    assert first.received_wall < when.timestamp()
    # The retry came no earlier than the date the server named (the server's own clock says so).
    assert second.received_wall >= when.timestamp() - 0.01


def test_parse_retry_after_reads_seconds_and_dates() -> None:
    now = datetime(2026, 8, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("Sat, 01 Aug 2026 12:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("Sat, 01 Aug 2026 11:00:00 GMT", now=now) == 0.0  # in the past
    assert parse_retry_after("soon") is None
    assert parse_retry_after("²") is None  # str.isdigit() took it, and float() raised
    assert parse_retry_after("9" * 5000) is None
    assert parse_retry_after(None) is None


def test_backoff_doubles_with_small_jitter_and_is_capped() -> None:
    cfg = HarnessConfig(url="http://127.0.0.1:1/", backoff_base=0.5, backoff_max=3.0, retry_after_max=10)
    for retry, base in [(1, 0.5), (2, 1.0), (3, 2.0)]:
        delay = backoff_delay(cfg, retry, None)
        assert base <= delay <= base * 1.1
    assert backoff_delay(cfg, 4, None) == 3.0  # 4.0 capped
    assert backoff_delay(cfg, 1, 7.0) == 7.0  # Retry-After wins over the exponential schedule
    assert backoff_delay(cfg, 1, 3600.0) == 10.0  # ... capped at retry_after_max


@pytest.mark.parametrize("status", [400, 404, 401, 422])
def test_it_does_not_retry_other_4xx(stub_server: StubServer, status: int) -> None:
    stub_server.on("bad", Reply(status=status, json={"error": "q missing"}))

    result = only(search_all_sync([q("bad")], config(stub_server, retries=3)))

    assert result.error == f"HTTP {status} (application/json, 22 bytes)"
    assert result.attempts == 1 and result.status == status
    assert len(stub_server.requests) == 1


def test_a_timeout_is_an_error_after_retries(stub_server: StubServer) -> None:
    stub_server.on("slow", hits_reply(["late"], delay=2.0))

    result = only(search_all_sync([q("slow")], config(stub_server, timeout=0.2, retries=1)))

    assert result.error == "timeout after 0.2s (2 attempts)"
    assert result.ids == () and result.attempts == 2
    assert len(stub_server.requests_for("slow")) == 2


def test_a_connection_dropped_every_time_is_named_in_the_error(stub_server: StubServer) -> None:
    stub_server.on("drop", Reply(drop=True))

    result = only(search_all_sync([q("drop")], config(stub_server, retries=1)))

    assert result.error == "connection dropped: server disconnected without sending a response (2 attempts)"
    assert result.status is None and result.attempts == 2


def test_a_dropped_connection_is_retried(stub_server: StubServer) -> None:
    stub_server.on("drop", Reply(drop=True), hits_reply(["back"]))

    result = only(search_all_sync([q("drop")], config(stub_server)))

    assert result.ok and result.ids == ("back",) and result.attempts == 2


def test_an_html_reply_is_an_error_not_an_empty_list(stub_server: StubServer) -> None:
    stub_server.on("html", Reply(text="<html><body>Login required</body></html>"))

    result = only(search_all_sync([q("html")], config(stub_server)))

    assert not result.ok and result.ids == ()
    assert result.error is not None
    assert result.error == "response is not JSON (text/html; charset=utf-8, 40 bytes)"
    assert "Login required" not in result.error  # the body is never echoed
    assert result.attempts == 1  # a 200 with the wrong body will not improve by asking again


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"results": []}, "unexpected response: the response: missing 'hits'"),
        ({"hits": None}, "unexpected response: hits: expected a list, got null"),
        ({"hits": [{"id": "a"}, {"doc": "b"}]}, "unexpected response: hits[1]: missing 'id'"),
        (
            {"hits": [{"id": None}]},
            "unexpected response: hits[0].id: expected a string or integer id, got null",
        ),
        (
            {"hits": [{"id": True}]},
            "unexpected response: hits[0].id: expected a string or integer id, got a boolean",
        ),
        (
            {"hits": [{"id": 1.5}]},
            "unexpected response: hits[0].id: expected a string or integer id, got 1.5",
        ),
        ({"hits": ["a", "b"]}, "unexpected response: hits[0]: expected an object with 'id', got \"a\""),
        ([], "unexpected response: the response: expected a JSON object with 'hits', got a list"),
    ],
)
def test_a_reply_without_usable_hits_is_an_error(stub_server: StubServer, body: Any, message: str) -> None:
    stub_server.on("junk", Reply(json=body))

    result = only(search_all_sync([q("junk")], config(stub_server)))

    assert result.error == message
    assert result.ids == () and not result.ok


def test_an_empty_hit_list_is_a_real_empty_result(stub_server: StubServer) -> None:
    stub_server.on("nothing", hits_reply([]))

    result = only(search_all_sync([q("nothing")], config(stub_server)))

    assert result.ok and result.ids == () and result.error is None


def test_it_never_has_more_requests_in_flight_than_its_concurrency(stub_server: StubServer) -> None:
    stub_server.default = hits_reply(["d1"], delay=0.05)
    queries = [q(f"q{i}") for i in range(24)]

    results = search_all_sync(queries, config(stub_server, concurrency=3))

    assert all(r.ok for r in results)
    assert len(stub_server.requests) == 24
    assert stub_server.max_in_flight == 3


def test_the_rate_limit_spaces_request_starts(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = [q(f"q{i}") for i in range(6)]
    # When each request may start, on the client's clock: the server's arrival times can bunch up on a
    # busy machine (a late first arrival), but no start can come before its slot.
    starts: list[float] = []
    wait = harness_http._RateLimiter.wait

    async def recorded(self: Any) -> None:
        await wait(self)
        starts.append(time.monotonic())

    monkeypatch.setattr(harness_http._RateLimiter, "wait", recorded)

    search_all_sync(queries, config(stub_server, concurrency=6, rate_limit=10.0))

    assert len(starts) == 6 and len(stub_server.requests) == 6
    # 6 starts at 10/s: the first at once, each next one at its slot (0.1 s after the last) or later.
    starts.sort()
    assert starts[-1] - starts[0] >= 0.5 - 0.01


def test_it_reads_the_index_generation_from_a_header_and_the_model_id_from_the_body(
    stub_server: StubServer,
) -> None:
    stub_server.default = Reply(
        json={"hits": [{"id": "d1"}], "meta": {"model": {"id": "e5-large@3"}, "index_generation": 7}},
        headers={"X-Index-Generation": "gen-41"},
    )
    cfg = config(stub_server, generation_header="x-index-generation", model_id_field="meta.model.id")

    result = only(search_all_sync([q("a")], cfg))

    assert result.index_generation == "gen-41" and result.model_id == "e5-large@3"


def test_it_reads_the_index_generation_from_a_body_field(stub_server: StubServer) -> None:
    stub_server.default = Reply(json={"hits": [], "meta": {"index_generation": 7}})

    result = only(search_all_sync([q("a")], config(stub_server, generation_field="meta.index_generation")))

    assert result.index_generation == "7" and result.model_id is None


def test_field_path_finds_scalars_only() -> None:
    body = {"meta": {"gen": 3, "obj": {"x": 1}, "none": None}}
    assert field_path(body, "meta.gen") == "3"
    assert field_path(body, "meta.obj") is None
    assert field_path(body, "meta.none") is None
    assert field_path(body, "meta.missing") is None
    assert field_path([], "meta") is None


def test_run_meta_records_settings_without_header_values_and_flags_a_moving_index(
    stub_server: StubServer,
) -> None:
    stub_server.on("a", hits_reply(["d1"], headers={"X-Index-Generation": "g1"}))
    stub_server.on("b", hits_reply(["d1"], headers={"X-Index-Generation": "g2"}))
    stub_server.on("c", Reply(status=503), hits_reply(["d1"], headers={"X-Index-Generation": "g2"}))
    stub_server.on("d", Reply(status=404))
    cfg = HarnessConfig(
        url=f"http://user:pw@127.0.0.1:{stub_server.port}/search?api_key=k123&x=1",
        headers={"Authorization": "Bearer s3cret", "X-Cache-Bypass": "1"},
        params={"rewrite": True},
        generation_header="X-Index-Generation",
        concurrency=2,
        **FAST,
    )
    started = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)

    results = search_all_sync([q("a"), q("b"), q("c"), q("d")], cfg)
    meta = run_meta(cfg, results, started_at=started, duration=1.5)

    assert "s3cret" not in repr(meta) and "k123" not in repr(meta) and "pw" not in meta["url"]
    # The URL's credentials were sent as Basic auth (over the Authorization header), the api key as given.
    assert {r.headers["authorization"] for r in stub_server.requests} == {"Basic dXNlcjpwdw=="}
    assert {tuple(r.query) for r in stub_server.requests} == {(("api_key", "k123"), ("x", "1"))}
    assert meta["header_names"] == ["Authorization", "X-Cache-Bypass"]
    assert meta["url"] == f"http://127.0.0.1:{stub_server.port}/search?api_key=%2A%2A%2A&x=%2A%2A%2A"
    assert meta["params"] == {"rewrite": True}
    assert meta["adapter"] == "http_json" and meta["concurrency"] == 2 and meta["size"] == 10
    assert meta["started_at"] == "2026-08-01T12:00:00Z" and meta["duration_s"] == 1.5
    assert meta["index_generations"] == ["g1", "g2"] and meta["index_moved"] is True
    assert meta["model_ids"] == [] and meta["model_changed"] is False
    assert meta["queries"] == 4 and meta["errors"] == 1 and meta["retries"] == 1
    assert meta["latency_ms"]["p50"] <= meta["latency_ms"]["p95"] <= meta["latency_ms"]["max"]


def test_redact_url_keeps_ipv6_hosts_and_ports() -> None:
    assert redact_url("http://[::1]:9200/idx") == "http://[::1]:9200/idx"
    assert redact_url("https://search.internal/s?token=abc") == "https://search.internal/s?token=%2A%2A%2A"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "localhost:8000/search"}, "expected http(s)://host[:port]/path"),
        ({"concurrency": 0}, "concurrency 0: must be at least 1"),
        ({"timeout": 0}, "timeout 0: must be more than 0 seconds"),
        ({"retries": -1}, "retries -1: must be 0 or more"),
        ({"rate_limit": 0}, "rate limit 0: must be more than 0 requests per second"),
        ({"adapter": "bing"}, "unknown adapter 'bing'"),
        ({"params": {"size": 3}}, "params size: would overwrite the request's own fields"),
        ({"generation_field": "meta..gen"}, "generation-field 'meta..gen': expected a dotted path"),
        (
            {"url": "http://127.0.0.1:99999/search"},
            "search URL: the URL cannot be read: the port must be a number from 1 to 65535",
        ),
        ({"params": {"boost": float("nan")}}, "params: Out of range float values are not JSON compliant"),
    ],
)
def test_it_refuses_a_bad_config_naming_the_setting(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        HarnessConfig(**{"url": "http://127.0.0.1:1/search", **kwargs})


def test_a_failing_progress_callback_stops_the_run(stub_server: StubServer) -> None:
    def explode(result: QueryResult) -> None:
        raise RuntimeError("database went away")

    with pytest.raises(RuntimeError, match="database went away"):
        search_all_sync([q("a"), q("b")], config(stub_server), on_result=explode)


def test_an_undecodable_body_is_an_error_for_that_query_only(stub_server: StubServer) -> None:
    stub_server.on("gz", Reply(json={"hits": []}, headers={"Content-Encoding": "gzip"}))

    bad, good = search_all_sync([q("gz"), q("fine")], config(stub_server))

    assert bad.error == "undecodable response body: Can not decode content-encoding: gzip"
    assert bad.attempts == 1 and len(stub_server.requests_for("gz")) == 1  # not the network: no retry
    assert good.ok and good.ids == ("d1", "d2", "d3")
