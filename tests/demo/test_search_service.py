"""The demo search service: the http_json contract, its query semantics, and its bad-input answers."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from demo.search_service import (
    MAX_CLAUSES,
    CorpusError,
    Document,
    RequestError,
    SearchIndex,
    SearchServer,
    SynonymsError,
    build_index,
    load_corpus,
    make_server,
    parse_synonyms,
    search,
)

REPO = Path(__file__).resolve().parents[2]

DOCS = [
    Document(
        id="doc-1",
        title="Refund policy for annual plans",
        body="We refund the unused part of an annual plan within 30 days of renewal.",
        fields={"product": "billing", "status": "published", "locale": "en-US"},
    ),
    Document(
        id="doc-2",
        title="Return a card reader",
        body="Start a ShipBack return for your card reader. The refund follows once the return arrives. "
        "ShipBack labels are free; every return needs a ShipBack label.",
        fields={
            "product": "billing",
            "status": "published",
            "locale": "en-US",
            "tags": ["hardware", "returns"],
        },
    ),
    Document(
        id="doc-3",
        title="Refund policy (2023)",
        body="The old refund policy for annual plans.",
        fields={"product": "billing", "status": "archived", "locale": "en-US"},
    ),
    Document(
        id="doc-4",
        title="Rückerstattung für Jahrespläne",
        body="Wir erstatten den ungenutzten Teil eines Jahresplans (refund).",
        fields={"product": "billing", "status": "published", "locale": "de-DE"},
    ),
    Document(
        id="doc-5",
        title="Cancel a subscription with the API",
        body="POST /v1/subscriptions/{id}/cancel ends a subscription at period end.",
        fields={"product": "developer", "status": "published", "locale": "en-US"},
    ),
    Document(id="doc-6", title="Refund webhooks", body="The refund.created event fires for every refund."),
]

PACK = parse_synonyms(
    {
        "name": "test-pack",
        "version": "7",
        "rules": [{"terms": ["refund", "refunds"], "expand": ["return", "chargeback", "shipback"]}],
    }
)


@pytest.fixture(scope="module")
def index() -> Iterator[SearchIndex]:
    built = build_index(DOCS, generation="gen-test")
    yield built
    built.close()


@pytest.fixture(scope="module")
def server(index: SearchIndex) -> Iterator[SearchServer]:
    srv = make_server(index, port=0, synonyms=PACK)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _ids(index: SearchIndex, q: str, **kwargs: Any) -> list[str]:
    return [hit.id for hit in search(index, q, synonyms=PACK, **kwargs).hits]


def _post(server: SearchServer, body: Any, *, raw: bytes | None = None) -> httpx.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx.post(server.url + "/search", content=content, headers={"Content-Type": "application/json"})


# ------------------------------------------------------------------------------------- semantics


def test_it_ranks_title_matches_above_body_matches_and_breaks_ties_by_id() -> None:
    built = build_index(
        [
            Document(id="body", title="Billing basics", body="How a refund works."),
            Document(id="title", title="How a refund works", body="Billing basics."),
            Document(id="twin-b", title="Invoices explained", body="Paying invoices."),
            Document(id="twin-a", title="Invoices explained", body="Paying invoices."),
        ]
    )
    assert [h.id for h in search(built, "refund").hits] == ["title", "body"]
    assert [h.id for h in search(built, "invoices").hits] == ["twin-a", "twin-b"]


def test_it_requires_every_word_of_a_short_query(index: SearchIndex) -> None:
    assert _ids(index, "refund reader") == ["doc-2"]
    assert _ids(index, "refund nonexistentword") == []


def test_it_needs_only_three_words_of_a_longer_question(index: SearchIndex) -> None:
    # Five content words; doc-1 has refund, annual, plan but not "unicorn" or "zebra".
    assert "doc-1" in _ids(index, "refund unicorn annual zebra plan")


def test_it_drops_stopwords_and_returns_nothing_for_a_query_of_stopwords(index: SearchIndex) -> None:
    assert _ids(index, "how do I refund") == _ids(index, "refund")
    assert _ids(index, "how do I") == []
    assert _ids(index, "") == []


def test_it_filters_on_fields_exactly_and_treats_a_list_as_any_of(index: SearchIndex) -> None:
    assert _ids(index, "refund", filters={"status": "archived"}) == ["doc-3"]
    assert set(
        _ids(index, "refund", filters={"status": ["archived", "published"], "product": "billing"})
    ) == {
        "doc-1",
        "doc-2",
        "doc-3",
        "doc-4",
    }
    # A document without the field never matches a filter on it.
    assert "doc-6" not in _ids(index, "refund", filters={"product": "billing"})
    # A list-valued field matches when any element does.
    assert _ids(index, "refund", filters={"tags": "returns"}) == ["doc-2"]
    assert _ids(index, "refund", filters={"status": "published", "product": "developer"}) == []


def test_it_restricts_to_the_locale_but_keeps_documents_without_one(index: SearchIndex) -> None:
    assert set(_ids(index, "refund", locale="de-DE")) == {"doc-4", "doc-6"}
    assert "doc-4" not in _ids(index, "refund", locale="en-US")
    assert "doc-4" in _ids(index, "refund", locale=None)


def test_it_cuts_the_list_at_size(index: SearchIndex) -> None:
    assert len(_ids(index, "refund", size=2)) == 2
    assert len(_ids(index, "refund", size=100)) == 5


def test_it_rewrites_only_when_asked_and_the_expansions_change_the_match(index: SearchIndex) -> None:
    off = search(index, "refund policy", synonyms=PACK)
    on = search(index, "refund policy", synonyms=PACK, rewrite=True)
    assert off.rewriter is None and off.rewritten_query is None
    assert on.rewriter == "test-pack@7"
    assert on.rewritten_query == "refund return chargeback shipback policy"
    # Five clauses need three matches: the policy pages match two and drop out, the return page stays.
    assert [h.id for h in off.hits] == ["doc-3", "doc-1"]
    assert [h.id for h in on.hits] == ["doc-2"]


def test_it_refuses_a_query_with_too_many_distinct_words(index: SearchIndex) -> None:
    many = " ".join(f"word{i}" for i in range(MAX_CLAUSES + 1))
    with pytest.raises(RequestError, match=f"q: {MAX_CLAUSES + 1} distinct words to search for; at most"):
        search(index, many)
    # Repeats do not count: the engine searches each word once.
    assert search(index, "refund " * (MAX_CLAUSES + 1)).hits


def test_it_refuses_a_rewrite_without_a_synonym_pack(index: SearchIndex) -> None:
    with pytest.raises(RequestError, match="no synonym pack"):
        search(index, "refund", rewrite=True)


def test_it_validates_arguments_of_the_python_api(index: SearchIndex) -> None:
    with pytest.raises(RequestError) as caught:
        search(index, "refund", size=0, filters={"a": {"nested": 1}})
    assert caught.value.problems == [
        "size: expected an integer from 1 to 100, got 0",
        "filters.a: expected a string, number, boolean, null or a list of those",
    ]


def test_it_writes_an_index_file_atomically(tmp_path: Path) -> None:
    target = tmp_path / "index.sqlite"
    target.write_text("an old file")
    built = build_index(DOCS, target)
    assert [h.id for h in search(built, "webhooks").hits] == ["doc-6"]
    built.close()
    assert list(tmp_path.iterdir()) == [target]


def test_it_derives_the_generation_from_the_content() -> None:
    first = build_index(DOCS).generation
    assert build_index(DOCS).generation == first
    edited = [*DOCS[:-1], Document(id="doc-6", title="Refund webhooks", body="changed")]
    assert build_index(edited).generation != first


# ---------------------------------------------------------------------------------------- corpus


def test_it_loads_a_cranfield_style_corpus_with_integer_ids(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": 1, "title": "wing flutter"}\n\n{"id": "2", "body": "slipstream lift"}\n')
    docs = load_corpus(path)
    assert [d.id for d in docs] == ["1", "2"]


def test_it_reports_every_bad_corpus_line_at_once(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(
        "\n".join(
            [
                '{"id": "a", "title": "ok"}',
                "not json",
                '{"title": "no id"}',
                '{"id": "b"}',
                '{"id": "a", "title": "again"}',
                '{"id": "c", "title": "x", "fields": {"f": {"x": 1}}}',
            ]
        )
    )
    with pytest.raises(CorpusError) as caught:
        load_corpus(path)
    assert [p.split(": ", 1)[0] for p in caught.value.problems] == [f"{path}:{n}" for n in (2, 3, 4, 5, 6)]
    assert "id: 'a' already used on line 1" in caught.value.problems[3]
    assert "fields.f: expected" in caught.value.problems[4]


def test_it_swaps_a_replaced_word_without_adding_a_clause(index: SearchIndex) -> None:
    pack = parse_synonyms(
        {
            "name": "typos",
            "version": "1",
            "rules": [{"terms": ["webhok"], "replace": ["webhooks"], "note": "x"}],
        }
    )
    assert search(index, "webhok", synonyms=pack).hits == ()
    fixed = search(index, "webhok", synonyms=pack, rewrite=True)
    assert fixed.rewritten_query == "webhooks"
    assert [h.id for h in fixed.hits] == ["doc-6"]


def test_it_rejects_a_synonym_rule_that_both_expands_and_replaces() -> None:
    with pytest.raises(SynonymsError) as caught:
        parse_synonyms(
            {
                "name": "p",
                "version": "1",
                "rules": [{"terms": ["a1"], "expand": ["b1"], "replace": ["c1"], "weight": 2}],
            }
        )
    assert caught.value.problems == [
        "synonyms: rules[0]: unknown keys ['weight']",
        "synonyms: rules[0]: needs exactly one of expand or replace",
    ]


def test_it_rejects_a_synonym_pack_with_bad_rules() -> None:
    with pytest.raises(SynonymsError) as caught:
        parse_synonyms({"name": "p", "version": "", "rules": [{"terms": ["two words"], "expand": ["the"]}]})
    assert caught.value.problems == [
        "synonyms: version: expected a non-empty string",
        "synonyms: rules[0].terms[0]: expected one word (letters and digits), got 'two words'",
        "synonyms: rules[0].expand[0]: 'the' is a stopword and would never match",
    ]


# ------------------------------------------------------------------------------------------ http


def test_it_answers_the_http_json_contract(server: SearchServer) -> None:
    reply = _post(
        server, {"q": "refund policy", "filters": {"product": "billing"}, "size": 2, "locale": "en-US"}
    )
    assert reply.status_code == 200
    assert reply.headers["X-Index-Generation"] == "gen-test"
    body = reply.json()
    # The archived page wins on its shorter title (BM25 length normalization).
    assert [h["id"] for h in body["hits"]] == ["doc-3", "doc-1"]
    assert body["hits"][1]["title"] == "Refund policy for annual plans"
    assert body["hits"][0]["score"] > body["hits"][1]["score"] > 0
    assert body["meta"]["index_generation"] == "gen-test"
    assert body["meta"]["rewriter"] is None
    assert body["meta"]["rewritten_query"] is None
    assert body["meta"]["took_ms"] >= 0


def test_it_records_the_rewriter_in_meta_when_rewrite_is_on(server: SearchServer) -> None:
    body = _post(server, {"q": "refund", "rewrite": True}).json()
    assert body["meta"]["rewriter"] == "test-pack@7"
    assert body["meta"]["rewritten_query"] == "refund return chargeback shipback"
    assert [h["id"] for h in body["hits"]] == ["doc-2"]


def test_it_ignores_unknown_body_keys(server: SearchServer) -> None:
    reply = _post(server, {"q": "webhooks", "rerank": True, "size": None, "filters": None})
    assert reply.status_code == 200
    assert [h["id"] for h in reply.json()["hits"]] == ["doc-6"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"size": 3}, "q: required"),
        ({"q": 5}, "q: expected a string"),
        ({"q": "x", "size": 0}, "size: expected an integer from 1 to 100, got 0"),
        ({"q": "x", "size": 101}, "size: expected an integer from 1 to 100, got 101"),
        ({"q": "x", "size": "10"}, "size: expected an integer from 1 to 100, got '10'"),
        ({"q": "x", "size": True}, "size: expected an integer from 1 to 100, got True"),
        ({"q": "x", "filters": ["product"]}, "filters: expected an object"),
        ({"q": "x", "locale": 7}, "locale: expected a string or null"),
        ({"q": "x", "rewrite": "yes"}, "rewrite: expected true or false"),
        ({"q": "x", "title_weight": 20.5}, "title_weight: expected a number from 0 to 20, got 20.5"),
        ({"q": "x", "title_weight": -1}, "title_weight: expected a number from 0 to 20, got -1"),
        ({"q": "x", "title_weight": "3"}, "title_weight: expected a number from 0 to 20, got '3'"),
        ({"q": "x", "title_weight": True}, "title_weight: expected a number from 0 to 20, got True"),
        ({"q": "x", "min_should_match": 0}, "min_should_match: expected an integer from 1 to 10, got 0"),
        ({"q": "x", "min_should_match": 11}, "min_should_match: expected an integer from 1 to 10, got 11"),
        ({"q": "x", "min_should_match": 2.0}, "min_should_match: expected an integer from 1 to 10, got 2.0"),
        (["q"], "body: expected a JSON object"),
    ],
)
def test_it_answers_400_naming_the_bad_field(server: SearchServer, body: Any, problem: str) -> None:
    reply = _post(server, body)
    assert reply.status_code == 400
    assert reply.json()["problems"] == [problem]
    assert reply.json()["error"] == problem


def test_a_title_weight_of_the_request_reorders_title_and_body_matches(server: SearchServer) -> None:
    docs = [
        Document(id="body", title="Billing basics", body="How a refund works. Refund refund."),
        Document(id="title", title="How a refund works", body="Billing basics."),
    ]
    built = build_index(docs)
    try:
        # The default weight (3) puts the title match first; without weight on titles the body's three
        # mentions win; the bounds themselves are accepted.
        assert [h.id for h in search(built, "refund").hits] == ["title", "body"]
        assert [h.id for h in search(built, "refund", title_weight=0).hits] == ["body", "title"]
        assert [h.id for h in search(built, "refund", title_weight=20).hits] == ["title", "body"]
    finally:
        built.close()


def test_a_min_should_match_of_the_request_overrides_the_servers(server: SearchServer) -> None:
    # "refund policy card reader" has four clauses: the server's 3 needs three of them, a request's 4
    # needs all four, a request's 1 any one.
    question = "refund policy card reader"
    default = [h["id"] for h in _post(server, {"q": question}).json()["hits"]]
    strict = [h["id"] for h in _post(server, {"q": question, "min_should_match": 4}).json()["hits"]]
    loose = [h["id"] for h in _post(server, {"q": question, "min_should_match": 1}).json()["hits"]]
    assert set(strict) <= set(default) <= set(loose)
    assert len(strict) < len(loose)
    # A null is the default, as for every optional field.
    nulls = _post(server, {"q": question, "min_should_match": None, "title_weight": None}).json()
    assert [h["id"] for h in nulls["hits"]] == default


def test_it_answers_400_to_a_body_that_is_not_json(server: SearchServer) -> None:
    reply = _post(server, None, raw=b"q=refund")
    assert reply.status_code == 400
    assert reply.json()["problems"] == ["body: not valid UTF-8 JSON"]


def test_it_answers_404_and_405_in_json(server: SearchServer) -> None:
    assert httpx.get(server.url + "/search").status_code == 405
    missing = httpx.post(server.url + "/nope", json={"q": "x"})
    assert missing.status_code == 404
    assert missing.json()["problems"] == ["path: no such endpoint '/nope'"]


def test_it_reports_health(server: SearchServer) -> None:
    reply = httpx.get(server.url + "/health")
    assert reply.status_code == 200
    assert reply.headers["X-Index-Generation"] == "gen-test"
    assert reply.json() == {
        "status": "ok",
        "documents": len(DOCS),
        "index_generation": "gen-test",
        "synonyms": "test-pack@7",
    }


def test_it_answers_concurrent_requests_each_with_its_own_result(server: SearchServer) -> None:
    queries = [("refund policy", "doc-3"), ("webhooks", "doc-6"), ("cancel subscription", "doc-5")] * 20

    # One client shared by all threads (httpx clients are thread-safe): requests really overlap.
    with httpx.Client() as client:

        def first_id(q: str) -> str:
            return str(client.post(server.url + "/search", json={"q": q}).json()["hits"][0]["id"])

        with ThreadPoolExecutor(max_workers=16) as pool:
            got = list(pool.map(first_id, [q for q, _ in queries]))
    assert got == [expected for _, expected in queries]


# ------------------------------------------------------------------------------------------- cli


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "demo.search_service", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def test_it_prints_the_listening_line_with_the_free_port_it_picked(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": d.id, "title": d.title, "body": d.body}) + "\n" for d in DOCS)
    )
    proc, line = _start("--corpus", str(corpus), "--port", "0", "--generation", "g-42", "--delay-ms", "5")
    try:
        assert line.startswith("listening on http://127.0.0.1:")
        url = line.removeprefix("listening on ")
        assert int(url.rsplit(":", 1)[1]) > 0
        reply = httpx.post(url + "/search", json={"q": "webhooks", "rewrite": True})
        assert reply.headers["X-Index-Generation"] == "g-42"
        assert [h["id"] for h in reply.json()["hits"]] == ["doc-6"]
        # The default pack is the demo's own.
        assert reply.json()["meta"]["rewriter"].startswith("help-center-synonyms@")
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_it_exits_2_naming_the_bad_corpus_line(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "title": "ok"}\n{"id": "a", "title": "dup"}\n')
    proc, line = _start("--corpus", str(corpus), "--port", "0")
    assert proc.wait(timeout=10) == 2
    assert line == ""
    assert proc.stderr is not None
    assert f"error: {corpus}:2: id: 'a' already used on line 1" in proc.stderr.read()


# ------------------------------------------------------------------------------------- jitter


@contextmanager
def _serving(index: SearchIndex, **options: Any) -> Iterator[SearchServer]:
    srv = make_server(index, port=0, synonyms=PACK, **options)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def _asked(server: SearchServer, body: dict[str, Any], times: int) -> list[tuple[list[str], Any]]:
    replies = [_post(server, body).json() for _ in range(times)]
    return [([h["id"] for h in reply["hits"]], reply["meta"].get("jittered")) for reply in replies]


def test_without_jitter_the_same_request_always_gets_the_same_hits(server: SearchServer) -> None:
    answers = _asked(server, {"q": "refund", "size": 5}, 20)

    assert len({tuple(ids) for ids, _ in answers}) == 1 and len(answers[0][0]) >= 2
    assert {jittered for _, jittered in answers} == {None}  # no jitter, no meta.jittered


def test_jitter_swaps_the_two_top_hits_of_some_askings_reproducibly_for_a_seed(index: SearchIndex) -> None:
    body = {"q": "refund", "size": 5}
    steady = _ids(index, "refund", size=5)
    swapped = [steady[1], steady[0], *steady[2:]]
    seen = []
    for _ in range(2):  # two fresh servers with the same seed
        with _serving(index, jitter=0.5, jitter_seed=3) as srv:
            seen.append(_asked(srv, body, 40))

    first = seen[0]
    # Every answer is the engine's own or its two top hits swapped, as meta.jittered says.
    assert all(ids == (swapped if jittered else steady) for ids, jittered in first)
    assert 5 <= sum(jittered for _, jittered in first) <= 35  # about half, and both kinds occur
    assert seen[1] == first  # the n-th asking of a request decides, not chance
    with _serving(index, jitter=0.5, jitter_seed=4) as srv:
        assert _asked(srv, body, 40) != first  # another seed, other askings swapped
    with _serving(index, jitter=1.0) as srv:
        assert {tuple(ids) for ids, _ in _asked(srv, body, 5)} == {tuple(swapped)}
        # A reply with fewer than two hits has nothing to swap.
        assert _asked(srv, {"q": "webhooks"}, 3) == [(["doc-6"], False)] * 3


def test_jitter_counts_each_configuration_of_a_sweep_on_its_own(index: SearchIndex) -> None:
    """A configuration's askings keep their own count: what it sees does not depend on how many other
    configurations (title_weight, min_should_match) were asked the same query before it."""
    config = {"q": "refund", "size": 5, "title_weight": 6, "min_should_match": 1}
    other = {"q": "refund", "size": 5, "title_weight": 1, "min_should_match": 2}
    with _serving(index, jitter=0.5, jitter_seed=3) as srv:
        alone = [jittered for _, jittered in _asked(srv, config, 20)]
    with _serving(index, jitter=0.5, jitter_seed=3) as srv:
        _asked(srv, other, 7)  # another configuration asked first
        after_another = [jittered for _, jittered in _asked(srv, config, 20)]

    assert after_another == alone
    assert 2 <= sum(alone) <= 18


def test_a_jitter_outside_0_to_1_is_refused(index: SearchIndex, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"jitter: expected a share from 0 to 1, got 1\.5"):
        make_server(index, port=0, jitter=1.5)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "title": "ok"}) + "\n")
    proc, line = _start("--corpus", str(corpus), "--port", "0", "--jitter", "nan")
    assert proc.wait(timeout=10) == 2 and line == ""
    assert proc.stderr is not None
    assert "--jitter: expected a number from 0 to 1, got nan" in proc.stderr.read()
