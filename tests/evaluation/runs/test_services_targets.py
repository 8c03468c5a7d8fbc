"""Search targets: validation, secrets by env var name, the harness configuration they make, and a run
through each adapter against a loopback server speaking that engine's request and response format."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User

from assay.targets import (
    REDACTED,
    TargetError,
    TargetSpec,
    harness_config,
    is_secret_header,
    shown_headers,
    spec_problems,
)
from evaluation.models import EvaluationRun, QueryRunResult, SearchTarget
from evaluation.runs.services import RunError, run_create, target_update
from labeling.models import GoldenSet
from tests.support.runs import eager_celery, golden_file, make_target, make_version
from tests.support.stub_server import Reply, StubServer

pytestmark = pytest.mark.django_db


def spec(**fields: Any) -> TargetSpec:
    fields.setdefault("name", "t")
    fields.setdefault("url", "http://127.0.0.1:9/search")
    return TargetSpec(**fields)


# ----------------------------------------------------------------------------------------- pure


def test_it_refuses_a_literal_credential_and_names_the_header() -> None:
    problems = spec_problems(spec(headers={"Authorization": "Bearer abc", "X-Api-Key": "k"}))

    assert len(problems) == 2
    assert problems[0].startswith("headers.Authorization: looks like a credential")
    assert problems[1].startswith("headers.X-Api-Key: looks like a credential")


def test_it_refuses_credentials_in_the_url_and_in_params_so_none_is_stored() -> None:
    problems = spec_problems(
        spec(
            url="https://svc:hunter2@search.example/search?api_key=k1&tenant=acme",
            params={"access_token": "k2", "tokenizer_off": True, "rows_hint": "10"},
        )
    )

    assert problems[0].startswith("url: credentials in the URL (user:password@) would be stored")
    assert problems[1].startswith("url: query parameter api_key looks like a credential")
    assert problems[2].startswith("params.access_token: looks like a credential")
    assert len(problems) == 3  # tenant, a boolean toggle and a plain value are not credentials
    assert all('{"env": "VARIABLE_NAME"}' in p for p in problems)
    assert all("hunter2" not in p and "k1" not in p and "k2" not in p for p in problems)


def test_a_run_override_named_like_a_credential_is_refused(golden_set: GoldenSet, rita: User) -> None:
    version = make_version(golden_set, golden_file(2))
    target = make_target("http://127.0.0.1:9/search", golden_set)

    with pytest.raises(RunError, match=r"params\.api_key: looks like a credential"):
        run_create(golden_version=version, target=target, triggered_by=rita, params={"api_key": "k1"})
    assert not EvaluationRun.objects.exists()


def test_it_lists_every_bad_field_at_once() -> None:
    problems = spec_problems(
        spec(
            url="ftp://x",
            headers={"bad name": "x", "Tok": {"env": "1BAD"}},
            stages={"rewrite": "yes"},
            params={"rewrite": True},
            cache_bypass_header="no colon",
            es_template={"query": "{{q}}"},
            solr_method="PUT",
        )
    )

    text = "\n".join(problems)
    assert "headers.bad name: 'bad name' is not a valid header name" in text
    assert 'headers.Tok: expected {"env": "VARIABLE_NAME"}' in text
    assert "stages.rewrite: expected true or false, got 'yes'" in text
    assert "stages rewrite: also given in params" in text
    assert "cache_bypass_header: 'no colon' is not 'Name: value'" in text
    assert "es_template: a query template applies to elasticsearch/opensearch, not http_json" in text
    assert "solr_method: 'PUT' is not GET or POST" in text


def test_the_harness_checks_what_it_knows() -> None:
    # The words never quote the URL (it may hold a secret): the scheme is named instead.
    assert spec_problems(spec(url="ftp://x")) == [
        "search URL: expected http(s)://host[:port]/path, got ftp://"
    ]
    assert spec_problems(spec(concurrency=0)) == ["concurrency 0: must be at least 1"]
    assert spec_problems(spec(concurrency=65)) == ["concurrency 65: must be at most 64 requests in flight"]
    assert spec_problems(spec(params={"q": "x"})) == ["params q: would overwrite the request's own fields"]
    assert spec_problems(spec(adapter="lucene")) == [
        "adapter: 'lucene' is not one of http_json, elasticsearch, opensearch, solr"
    ]
    assert spec_problems(spec(adapter="elasticsearch", es_template={"size": 3})) == [
        "es_template: query template: no {{q}} placeholder for the query text"
    ]


def test_it_builds_the_harness_config_with_secrets_from_the_environment() -> None:
    target = spec(
        headers={"Authorization": {"env": "ASSAY_SECRET_TOKEN_VAR"}, "X-Tenant": "acme"},
        params={"mode": "hybrid"},
        stages={"rewrite": False, "rerank": True},
        cache_bypass_header="Cache-Control: no-cache",
        timeout=2.5,
        concurrency=3,
        retries=1,
        rate_limit=20.0,
        generation_header="X-Index-Generation",
        model_id_field="meta.model",
    )

    config = harness_config(
        target, size=7, params={"rewrite": True}, environ={"ASSAY_SECRET_TOKEN_VAR": "Bearer t"}
    )

    assert dict(config.headers) == {
        "Authorization": "Bearer t",
        "X-Tenant": "acme",
        "Cache-Control": "no-cache",
    }
    assert dict(config.params) == {"mode": "hybrid", "rewrite": True, "rerank": True}
    assert (config.size, config.timeout, config.concurrency, config.retries, config.rate_limit) == (
        7,
        2.5,
        3,
        1,
        20.0,
    )
    assert (config.generation_header, config.generation_field) == ("X-Index-Generation", None)
    assert config.model_id_field == "meta.model"
    assert dict(harness_config(target, redact=True).headers)["Authorization"] == REDACTED
    assert shown_headers(target) == {"Authorization": "$ASSAY_SECRET_TOKEN_VAR", "X-Tenant": "acme"}


def test_a_missing_variable_is_named() -> None:
    target = spec(
        headers={
            "Authorization": {"env": "ASSAY_SECRET_NOPE_VAR"},
            "X-Key-Id": {"env": "ASSAY_SECRET_ALSO_NOPE"},
        }
    )

    with pytest.raises(TargetError) as error:
        harness_config(target, environ={})

    assert error.value.problems == [
        "headers.Authorization: environment variable ASSAY_SECRET_NOPE_VAR is not set on this worker",
        "headers.X-Key-Id: environment variable ASSAY_SECRET_ALSO_NOPE is not set on this worker",
    ]


def test_a_snapshot_round_trips_and_refuses_unknown_fields() -> None:
    target = spec(headers={"Authorization": {"env": "ASSAY_SECRET_T"}}, stages={"rewrite": True})

    assert TargetSpec.from_dict(target.to_dict()) == target
    with pytest.raises(TargetError, match="unknown field colour"):
        TargetSpec.from_dict({**target.to_dict(), "colour": "red"})


# ----------------------------------------------------------------------------------------- services


def test_create_refuses_a_bad_target_and_stores_nothing(golden_set: GoldenSet) -> None:
    with pytest.raises(TargetError) as error:
        make_target("http://127.0.0.1:9/search", golden_set, headers={"Authorization": "Bearer abc"})

    assert "headers.Authorization: looks like a credential" in str(error.value)
    assert not SearchTarget.objects.exists()


def test_create_refuses_a_taken_name_and_an_unknown_setting(golden_set: GoldenSet) -> None:
    make_target("http://127.0.0.1:9/search", golden_set)

    with pytest.raises(
        TargetError, match="name: golden set help-center has a target named 'staging' already"
    ):
        make_target("http://127.0.0.1:9/other", golden_set)
    with pytest.raises(TargetError, match="colour: not a target setting"):
        make_target("http://127.0.0.1:9/search", golden_set, name="x", colour="red")


def test_update_keeps_runs_on_the_snapshot_they_were_created_with(golden_set: GoldenSet, rita: User) -> None:
    target = make_target("http://127.0.0.1:9/search", golden_set, stages={"rewrite": False})
    run = run_create(golden_version=make_version(golden_set), target=target, triggered_by=rita)

    target_update(target=target, stages={"rewrite": True}, url="http://127.0.0.1:9/v2")

    assert target.stages == {"rewrite": True} and target.url == "http://127.0.0.1:9/v2"
    run.refresh_from_db()
    assert run.target_snapshot["stages"] == {"rewrite": False}
    assert run.target_snapshot["url"] == "http://127.0.0.1:9/search"
    with pytest.raises(TargetError, match="concurrency 0"):
        target_update(target=target, concurrency=0)
    target.refresh_from_db()
    assert target.concurrency == 4


# ------------------------------------------------------------------------------- adapters, end to end


@pytest.fixture
def engine() -> Iterator[StubServer]:
    with StubServer(key=lambda r: r.path) as server:
        yield server


def _run(target: SearchTarget, golden_set: GoldenSet, rita: User, capture: Any) -> EvaluationRun:
    version = make_version(golden_set, golden_file(2))
    with eager_celery(), capture(execute=True):
        run = run_create(golden_version=version, target=target, triggered_by=rita)
    run.refresh_from_db()
    return run


@pytest.mark.parametrize("adapter", ["elasticsearch", "opensearch"])
def test_an_elasticsearch_target_sends_the_template_and_reads_hits_hits(
    adapter: str,
    engine: StubServer,
    golden_set: GoldenSet,
    rita: User,
    django_capture_on_commit_callbacks: Any,
) -> None:
    engine.on(
        "/products/_search",
        Reply(json={"took": 3, "hits": {"total": {"value": 2}, "hits": [{"_id": "d1"}, {"_id": "d4"}]}}),
    )
    target = make_target(
        f"{engine.url}/products",
        golden_set,
        adapter=adapter,
        es_template={
            "size": "{{size}}",
            "query": {"match": {"title": "{{q}}"}},
            "post_filter": {"bool": {"filter": "{{filters}}"}},
        },
        params={"request_cache": False},
    )

    run = _run(target, golden_set, rita, django_capture_on_commit_callbacks)

    assert run.status == EvaluationRun.Status.SUCCEEDED and run.errors == 0
    bodies = sorted((r.json for r in engine.requests), key=lambda b: b["query"]["match"]["title"])
    assert bodies[0] == {
        "size": 10,
        "query": {"match": {"title": "query 1"}},
        "post_filter": {"bool": {"filter": [{"term": {"product": "billing"}}]}},
    }
    assert {tuple(r.query) for r in engine.requests} == {(("request_cache", "false"),)}
    assert [r.ids for r in QueryRunResult.objects.filter(run=run)] == [["d1", "d4"], ["d1", "d4"]]


def test_a_solr_target_sends_select_with_q_fq_rows_and_reads_response_docs(
    engine: StubServer, golden_set: GoldenSet, rita: User, django_capture_on_commit_callbacks: Any
) -> None:
    engine.on(
        "/solr/help/select",
        Reply(json={"responseHeader": {"status": 0}, "response": {"numFound": 1, "docs": [{"id": "d2"}]}}),
    )
    target = make_target(
        f"{engine.url}/solr/help", golden_set, name="solr", adapter="solr", params={"defType": "edismax"}
    )

    run = _run(target, golden_set, rita, django_capture_on_commit_callbacks)

    assert run.status == EvaluationRun.Status.SUCCEEDED and run.errors == 0
    first = next(r for r in engine.requests if r.param("q") == ["query 1"])
    assert first.method == "GET"
    assert first.param("fq") == ['product:"billing"']
    assert first.param("rows") == ["10"] and first.param("defType") == ["edismax"]
    assert [r.ids for r in QueryRunResult.objects.filter(run=run)] == [["d2"], ["d2"]]


def test_a_reply_without_the_engines_shape_is_an_error_not_an_empty(
    engine: StubServer, golden_set: GoldenSet, rita: User, django_capture_on_commit_callbacks: Any
) -> None:
    engine.on("/solr/help/select", Reply(json={"error": {"msg": "undefined field"}}))
    target = make_target(f"{engine.url}/solr/help", golden_set, name="solr", adapter="solr")

    run = _run(target, golden_set, rita, django_capture_on_commit_callbacks)

    errors = list(QueryRunResult.objects.filter(run=run).values_list("error", flat=True))
    assert errors == ["unexpected response: the response: missing 'response'"] * 2
    assert run.report is not None and run.report["empty_rate"] is None  # nothing answered, nothing empty
    assert run.verdict == EvaluationRun.Verdict.FAIL


def test_a_secret_header_may_only_name_a_prefixed_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Otherwise whoever edits a target could send the worker's own secrets to a server of theirs."""
    target = spec(headers={"Authorization": {"env": "DJANGO_SECRET_KEY"}})
    assert spec_problems(target) == [
        "headers.Authorization: DJANGO_SECRET_KEY does not start with ASSAY_SECRET_: stored settings may "
        "only read secrets from environment variables named ASSAY_SECRET_... (so they cannot send the "
        "server's own secrets anywhere); set the secret on the workers as ASSAY_SECRET_DJANGO_SECRET_KEY "
        "and name that"
    ]
    # A row stored before the rule is refused when called, and the variable is never read.
    with pytest.raises(TargetError, match="does not start with ASSAY_SECRET_"):
        harness_config(target, size=10, environ={"DJANGO_SECRET_KEY": "s3cret"})
    # The operator may choose another prefix.
    monkeypatch.setenv("ASSAY_SECRET_ENV_PREFIX", "SEARCH_")
    assert spec_problems(spec(headers={"Authorization": {"env": "SEARCH_TOKEN"}})) == []


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        *((n, True) for n in ("Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "X-API-KEY")),
        *(
            (n, True)
            for n in ("api_key", "apiKey", "apikey", "X-Auth-Token", "access_token", "client_secret")
        ),
        *(
            (n, False)
            for n in ("max_tokens", "X-Api-Version", "tokenizer", "keyword", "sort_key", "X-Tenant")
        ),
    ],
)
def test_credential_names_are_matched_by_whole_words(name: str, secret: bool) -> None:
    assert is_secret_header(name) is secret
