"""Engine adapters: the request each engine receives and real-shaped responses, through a loopback server
speaking that engine's wire format (no Elasticsearch or Solr runs here; the stub answers as they do)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from assay.adapters import (
    AdapterError,
    ElasticsearchAdapter,
    HttpJsonAdapter,
    SearchCall,
    SolrAdapter,
    check_template,
    es_filter_clauses,
    make_adapter,
    solr_filter_queries,
)
from assay.golden.model import GoldenQuery
from assay.harness import search_all_sync
from assay.harness_config import HarnessConfig
from tests.support.stub_server import Recorded, Reply, StubServer

QUERY = GoldenQuery(
    id="q-0471",
    text='refund "annual" plan',
    locale="en-US",
    filters={"product": "billing", "status": ["published", "draft"]},
)

# Shapes copied from Elasticsearch 8 and Solr 9 replies (values shortened).
ES_REPLY = {
    "took": 4,
    "timed_out": False,
    "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
    "hits": {
        "total": {"value": 3, "relation": "eq"},
        "max_score": 7.1,
        "hits": [
            {"_index": "help", "_id": "doc-8821", "_score": 7.1, "_source": {"title": "Refund policy"}},
            {"_index": "help", "_id": "doc-4410", "_score": 5.0, "_source": {"body": "no title here"}},
            {"_index": "help", "_id": "doc-1199", "_score": 2.2},
        ],
    },
}
SOLR_REPLY = {
    "responseHeader": {"status": 0, "QTime": 2, "params": {"q": "refund", "wt": "json"}},
    "response": {
        "numFound": 2,
        "start": 0,
        "numFoundExact": True,
        "docs": [{"id": "doc-8821", "title": ["Refund policy"]}, {"id": 4410}],
    },
}


def run(stub: StubServer, path: str, **kwargs: Any) -> Any:
    config = HarnessConfig(url=f"{stub.url}{path}", size=5, backoff_base=0.01, **kwargs)
    (result,) = search_all_sync([QUERY], config)
    return result


def test_elasticsearch_posts_the_default_template_to_search(stub_server: StubServer) -> None:
    stub_server.default = Reply(json=ES_REPLY)

    result = run(stub_server, "/help", adapter="elasticsearch", params={"request_cache": False})

    assert result.ok, result.error
    assert result.ids == ("doc-8821", "doc-4410", "doc-1199")
    assert result.titles == ("Refund policy", "", "")
    (request,) = stub_server.requests
    assert request.method == "POST" and request.path == "/help/_search"
    assert request.query == [("request_cache", "false")]
    assert request.headers["accept-language"] == "en-US"
    assert request.json == {
        "size": 5,
        "query": {
            "bool": {
                "must": {"multi_match": {"query": 'refund "annual" plan', "fields": ["title^2", "body"]}},
                "filter": [{"term": {"product": "billing"}}, {"terms": {"status": ["published", "draft"]}}],
            }
        },
    }


def test_opensearch_uses_a_custom_template_with_the_locale(stub_server: StubServer) -> None:
    stub_server.default = Reply(json=ES_REPLY)
    template = {
        "size": "{{size}}",
        "_source": ["title"],
        "query": {
            "bool": {
                "must": [{"match": {"title_{{locale}}": "{{q}}"}}],
                "filter": "{{filters}}",
            }
        },
    }

    result = run(stub_server, "/help/_search", adapter="opensearch", es_template=template)

    assert result.ids[0] == "doc-8821"
    (request,) = stub_server.requests
    assert request.path == "/help/_search"
    body = request.json
    assert body["query"]["bool"]["must"] == [{"match": {"title_en-US": 'refund "annual" plan'}}]
    assert body["size"] == 5 and body["_source"] == ["title"]


def test_solr_gets_select_with_q_fq_rows_and_wt(stub_server: StubServer) -> None:
    stub_server.default = Reply(json=SOLR_REPLY)

    result = run(
        stub_server, "/solr/help", adapter="solr", params={"defType": "edismax", "qf": "title^2 body"}
    )

    assert result.ok, result.error
    assert result.ids == ("doc-8821", "4410") and result.titles == ("Refund policy", "")
    (request,) = stub_server.requests
    assert request.method == "GET" and request.path == "/solr/help/select"
    assert request.param("q") == ['refund "annual" plan']
    assert request.param("fq") == ['product:"billing"', 'status:("published" OR "draft")']
    assert request.param("rows") == ["5"] and request.param("wt") == ["json"]
    assert request.param("defType") == ["edismax"] and request.param("qf") == ["title^2 body"]
    assert request.headers["accept-language"] == "en-US"


def test_solr_can_post_the_same_parameters_as_a_form(stub_server: StubServer) -> None:
    stub_server.default = Reply(json=SOLR_REPLY)

    result = run(stub_server, "/solr/help/select", adapter="solr", solr_method="POST")

    assert result.ok, result.error
    (request,) = stub_server.requests
    assert request.method == "POST" and request.path == "/solr/help/select" and request.query == []
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert request.param("fq") == ['product:"billing"', 'status:("published" OR "draft")']
    assert request.param("q") == ['refund "annual" plan']


def test_http_json_against_an_echoing_engine(stub_server: StubServer) -> None:
    # The engine answers with ids derived from what it received, so the round trip is checked end to end.
    def echo(request: Recorded) -> Reply:
        body = request.json
        ids = [f"{body['filters']['product']}-{i}" for i in range(body["size"])]
        return Reply(json={"hits": [{"id": i} for i in ids], "took_ms": 1})

    stub_server.default = echo

    result = run(stub_server, "/search")

    assert result.ids == tuple(f"billing-{i}" for i in range(5))


@pytest.mark.parametrize(
    ("adapter", "body", "message"),
    [
        ("elasticsearch", {"hits": []}, "hits: expected a JSON object with 'hits', got a list"),
        ("elasticsearch", {"error": {"type": "index_not_found"}}, "the response: missing 'hits'"),
        ("elasticsearch", {"hits": {"hits": [{"_score": 1}]}}, "hits.hits[0]: missing '_id'"),
        (
            "elasticsearch",
            {"hits": {"hits": [{"_id": None}]}},
            "hits.hits[0]._id: expected a string or integer",
        ),
        ("solr", {"responseHeader": {}}, "the response: missing 'response'"),
        ("solr", {"response": {"numFound": 0}}, "response: missing 'docs'"),
        ("solr", {"response": {"docs": [{"title": "x"}]}}, "response.docs[0]: missing 'id' (is it in fl?)"),
        (
            "solr",
            {"response": {"docs": [["x"]]}},
            "response.docs[0]: expected an object with 'id', got a list",
        ),
        ("http_json", {"hits": {"hits": []}}, "hits: expected a list, got an object"),
    ],
)
def test_each_adapter_names_what_is_missing_from_a_response(adapter: str, body: Any, message: str) -> None:
    with pytest.raises(AdapterError, match=re.escape(message)):
        make_adapter(adapter).parse_response(body)


def test_an_empty_engine_reply_is_an_empty_result_not_an_error() -> None:
    assert make_adapter("elasticsearch").parse_response({"hits": {"hits": []}}).ids == ()
    assert make_adapter("solr").parse_response({"response": {"docs": []}}).ids == ()


def test_es_filters_become_term_and_terms_clauses_in_key_order() -> None:
    assert es_filter_clauses({"b": 1, "a": [True, "x"]}) == [
        {"terms": {"a": [True, "x"]}},
        {"term": {"b": 1}},
    ]


def test_solr_filter_values_are_quoted_and_escaped() -> None:
    assert solr_filter_queries({"title": 'say "hi" \\ bye', "flag": True, "n": 3}) == [
        'flag:"true"',
        'n:"3"',
        'title:"say \\"hi\\" \\\\ bye"',
    ]


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ({"query": {"match": {"title": "{{text}}"}}}, "unknown placeholder {{text}}"),
        ({"size": "{{size}}"}, "no {{q}} placeholder"),
        (["{{q}}"], "expected a JSON object, got a list"),
    ],
)
def test_a_bad_query_template_is_refused_before_any_request(template: Any, message: str) -> None:
    with pytest.raises(AdapterError, match=re.escape(message)):
        check_template(template)
    with pytest.raises(ValueError, match=re.escape(message)):
        HarnessConfig(url="http://127.0.0.1:1/i", adapter="elasticsearch", es_template=template)


def test_a_template_is_refused_for_engines_without_templates() -> None:
    with pytest.raises(AdapterError, match="applies to elasticsearch/opensearch, not solr"):
        make_adapter("solr", template={"q": "{{q}}"})


def test_params_may_not_overwrite_the_request_fields() -> None:
    with pytest.raises(AdapterError, match="params q: would overwrite"):
        HttpJsonAdapter().build_request(SearchCall("http://h/s", "t", params={"q": 1}))
    with pytest.raises(AdapterError, match="params fq, rows: would overwrite"):
        SolrAdapter().build_request(SearchCall("http://h/s", "t", params={"rows": 1, "fq": "x"}))


def test_the_es_template_is_filled_without_touching_the_original() -> None:
    adapter = ElasticsearchAdapter()
    first = adapter.build_request(SearchCall("http://h/i", "one", size=3))
    second = adapter.build_request(SearchCall("http://h/i", "two", {"a": 1}, size=4))

    assert first.json_body["query"]["bool"]["must"]["multi_match"]["query"] == "one"
    assert first.json_body["query"]["bool"]["filter"] == []
    assert second.json_body["size"] == 4 and second.json_body["query"]["bool"]["filter"] == [
        {"term": {"a": 1}}
    ]
    assert adapter.template["size"] == "{{size}}"


def test_it_adds_the_engine_path_before_the_urls_query_string() -> None:
    from assay.adapters import _endpoint

    assert _endpoint("http://es:9200/idx?routing=x", "/_search") == "http://es:9200/idx/_search?routing=x"
    assert _endpoint("http://solr:8983/solr/core/?a=1", "/select") == "http://solr:8983/solr/core/select?a=1"
    assert _endpoint("http://es:9200/idx/_search", "/_search") == "http://es:9200/idx/_search"


HIT_LISTS: list[list[Any]] = [
    [{"id": "a"}, {"id": "b", "title": "B"}],
    [{"id": "a", "title": ["First", "second"]}, {"id": "b", "title": []}],
    [{"id": 7}, {"id": "b"}],
    [{"id": True}],
    [{"id": None, "title": "x"}],
    [{"id": "a"}, "b"],
    [{"id": "a"}, {"title": "no id"}],
    [{"id": "a", "title": 3}, {"id": "b", "title": None}],
    [["a"]],
    [],
]


@pytest.mark.parametrize("hits", HIT_LISTS)
def test_the_bulk_read_of_hits_agrees_with_the_hit_by_hit_walk(hits: list[Any]) -> None:
    # The common reply is read in bulk; every other goes through the walk, which names the bad hit.
    from assay.adapters import _collect, _collect_walk

    def title(hit: dict[str, Any]) -> Any:
        return hit.get("title")

    def outcome(read: Any) -> Any:
        try:
            return read()
        except AdapterError as exc:
            return str(exc)

    bulk = outcome(lambda: _collect(hits, "hits", "id", title))
    walked = outcome(lambda: _collect_walk(hits, "hits", "id", title, hint=""))
    assert bulk == walked
