"""The API's behaviour beyond permissions: triggering runs (and every refusal named), status, report,
verdict with its markdown, cancel, downloads, tokens (revoked, malformed, last used, the command),
CSRF for session callers, the pagination rule, and the OpenAPI schema and Swagger UI."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from assay.changes import report_seed
from assay.overlap import report_overlap
from evaluation.models import ApiToken, EvaluationRun, SearchTarget
from evaluation.runs.api.pagination import OrderedLimitOffsetPagination
from evaluation.runs.services import target_create
from golden_io.models import GoldenVersion
from golden_io.selectors import VERSION_FILES
from labeling.models import GoldenSet
from tests import factories
from tests.support.evaluation import (
    Scene,
    TokenFor,
    bearer,
)
from tests.support.runs import eager_celery, make_version

pytestmark = pytest.mark.django_db


# What a runs:write reply (start, cancel) says of a run: which run of what, its status, where to follow it.
RECEIPT = (
    "id",
    "golden_set",
    "golden_version",
    "target",
    "rebaseline",
    "rescore_baseline",
    "status",
    "final",
    "created",
    "links",
)


def _post(client: Client, path: str, body: Any, **headers: Any) -> Any:
    return client.post(path, data=json.dumps(body), content_type="application/json", **headers)


# --- triggering -----------------------------------------------------------------------------------


def test_it_starts_a_run_as_the_tokens_user_and_the_run_finishes(
    version: GoldenVersion,
    target: SearchTarget,
    golden_set: GoldenSet,
    rita: User,
    token_for: TokenFor,
    django_capture_on_commit_callbacks: Any,
) -> None:
    client = Client()
    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        response = _post(
            client,
            "/api/v1/runs/",
            {
                "golden_set": golden_set.slug,
                "target": target.name,
                "params": {"rewrite": True},
                "trigger": "ci",
            },
            **bearer(token_for(rita)),
        )

    assert response.status_code == 201, response.content
    body = response.json()
    run = EvaluationRun.objects.get(pk=body["id"])
    assert response["Location"] == f"http://testserver/api/v1/runs/{run.pk}/"
    assert (run.triggered_by, run.trigger, run.params) == (rita, "ci", {"rewrite": True})
    assert body["golden_version"] == version.name and body["target"] == target.name
    assert body["links"]["page"] == f"http://testserver/runs/{run.pk}/"
    assert set(body) == set(RECEIPT)  # which run and where: what it does is the run link's
    status = client.get(f"/api/v1/runs/{run.pk}/", **bearer(token_for(rita))).json()
    assert (status["status"], status["final"], status["verdict"]) == ("succeeded", True, "none")
    assert status["progress"] == {"done": 6, "total": 6, "errored": 0, "percent": 100.0}
    assert status["effective_params"] == {"rewrite": True}


def test_it_uses_the_named_version_instead_of_the_newest(
    version: GoldenVersion, target: SearchTarget, golden_set: GoldenSet, rita: User, token_for: TokenFor
) -> None:
    make_version(golden_set, name="2026-09-01")
    response = _post(
        Client(),
        "/api/v1/runs/",
        {"golden_set": golden_set.slug, "target": target.name, "version": version.name},
        **bearer(token_for(rita)),
    )
    assert response.status_code == 201
    assert EvaluationRun.objects.get(pk=response.json()["id"]).golden_version == version


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"golden_set": "nope", "target": "staging"}, 404, "no such golden set"),
        ({"golden_set": "help-center", "target": "nope"}, 404, "no target named 'nope'"),
        (
            {"golden_set": "help-center", "target": "staging", "version": "1999-01-01"},
            404,
            "no such golden version",
        ),
        ({"golden_set": "help-center", "target": "staging", "params": ["rewrite"]}, 400, "params"),
        ({"golden_set": "help-center", "target": "staging", "trigger": "schedule"}, 400, "trigger"),
        ({"target": "staging"}, 400, "golden_set"),
        ({"golden_set": "help-center", "target": "unlisted"}, 400, "not set up for golden set help-center"),
    ],
)
def test_it_refuses_a_bad_trigger_and_says_why(
    body: dict[str, Any],
    status: int,
    says: str,
    version: GoldenVersion,
    target: SearchTarget,
    rita: User,
    token_for: TokenFor,
) -> None:
    target_create(name="unlisted", url=target.url, owner=rita)  # rita owns it, no set lists it
    response = _post(Client(), "/api/v1/runs/", body, **bearer(token_for(rita)))
    assert response.status_code == status, response.content
    assert says in response.content.decode()
    assert not EvaluationRun.objects.exists()


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ('{"golden_set": ' + "[" * 5000 + "]" * 5000 + "}", "nested deeper than 64 levels"),  # was a 500
        ('{"golden_set": "help-center", "params": ' + '{"a":' * 70 + "1" + "}" * 71, "nested deeper"),
        ('{"golden_set": "help-center",', "invalid JSON at line 1"),
    ],
)
def test_a_malformed_or_too_deep_body_is_a_worded_400(
    raw: str, says: str, version: GoldenVersion, target: SearchTarget, rita: User, token_for: TokenFor
) -> None:
    response = Client().post(
        "/api/v1/runs/", data=raw, content_type="application/json", **bearer(token_for(rita))
    )
    assert response.status_code == 400, response.content
    assert says in response.json()["detail"]
    assert not EvaluationRun.objects.exists()


def test_a_set_without_a_version_gets_a_400_naming_the_freeze(
    target: SearchTarget, golden_set: GoldenSet, rita: User, token_for: TokenFor
) -> None:
    response = _post(
        Client(),
        "/api/v1/runs/",
        {"golden_set": golden_set.slug, "target": target.name},
        **bearer(token_for(rita)),
    )
    assert response.status_code == 400
    assert response.json()["problems"] == ["golden set help-center has no version yet: freeze one first"]


# --- reading ----------------------------------------------------------------------------------------


def test_the_report_is_the_stored_artifact_and_a_run_without_one_is_a_409(
    scene: Scene, target: SearchTarget, version: GoldenVersion, rita: User, token_for: TokenFor
) -> None:
    client, headers = Client(), bearer(token_for(rita))
    report = client.get(f"/api/v1/runs/{scene.current.pk}/report/", **headers)
    assert report.status_code == 200 and report.json() == scene.current.report

    queued = _post(
        client, "/api/v1/runs/", {"golden_set": "help-center", "target": target.name}, **headers
    ).json()
    missing = client.get(f"/api/v1/runs/{queued['id']}/report/", **headers)
    assert missing.status_code == 409
    assert missing.json()["problems"] == [
        f"run {queued['id']} is queued: a report is written when a run succeeds"
    ]


def test_the_verdict_names_what_tripped_it_with_top_losers_and_markdown(
    scene: Scene, rita: User, token_for: TokenFor
) -> None:
    verdict = Client().get(f"/api/v1/runs/{scene.current.pk}/verdict/", **bearer(token_for(rita))).json()

    assert (verdict["verdict"], verdict["status"], verdict["final"]) == ("fail", "succeeded", True)
    assert verdict["baseline_run"] == scene.baseline.pk
    kinds = {(f["kind"], f["scope"]) for f in verdict["failures"]}
    assert ("errors", "all") in kinds and ("budget", "core") in kinds
    assert [loser["id"] for loser in verdict["top_losers"]][:2] == ["q-3", "q-1"]
    markdown = verdict["summary_markdown"]
    assert markdown.startswith("### Relevance gate: **FAIL**")
    assert "| q-3 |" in markdown
    assert f"[Full report](http://testserver/runs/{scene.current.pk}/)" in markdown
    # how much the lists moved, beside the verdict (docs/metrics.md, "Overlap")
    expected = report_overlap(
        scene.current.report, scene.baseline.report, seed=report_seed(scene.current.report)
    )
    assert expected is not None and verdict["overlap"] == expected.to_dict()
    assert "Overlap with the baseline (Jaccard@" in markdown


def test_the_verdict_of_a_run_without_a_baseline_says_so(
    finished: Any, rita: User, token_for: TokenFor
) -> None:
    run = finished()
    verdict = Client().get(f"/api/v1/runs/{run.pk}/verdict/", **bearer(token_for(rita))).json()
    assert verdict["verdict"] == "none" and verdict["baseline_run"] is None
    assert verdict["overlap"] is None
    assert verdict["summary_markdown"].startswith("### Relevance gate: **no baseline**")
    assert "| nDCG@k | " in verdict["summary_markdown"]


def test_cancel_stops_a_queued_run_and_says_when_it_had_finished(
    scene: Scene, target: SearchTarget, rita: User, token_for: TokenFor
) -> None:
    client, headers = Client(), bearer(token_for(rita))
    queued = _post(
        client, "/api/v1/runs/", {"golden_set": "help-center", "target": target.name}, **headers
    ).json()

    cancelled = client.post(f"/api/v1/runs/{queued['id']}/cancel/", **headers).json()
    again = client.post(f"/api/v1/runs/{queued['id']}/cancel/", **headers).json()
    finished = client.post(f"/api/v1/runs/{scene.current.pk}/cancel/", **headers).json()

    assert cancelled["cancelled"] is True and cancelled["run"]["status"] == "cancelled"
    # The reply says which run and where; what happened to it is read's (docs/api.md).
    assert set(cancelled["run"]) == set(RECEIPT)
    status = client.get(cancelled["run"]["links"]["run"], **headers).json()
    assert status["error_message"] == "cancelled by rita"
    assert again["cancelled"] is False
    assert finished["cancelled"] is False and finished["run"]["status"] == "succeeded"


def test_a_runs_write_token_learns_nothing_a_run_found(
    scene: Scene,
    version: GoldenVersion,
    target: SearchTarget,
    rita: User,
    token_for: TokenFor,
) -> None:
    """Starting and cancelling need the run's id, status and links; its verdict, progress, params,
    baseline and errors are `read`'s, which this token lacks."""
    client, headers = Client(), bearer(token_for(rita, "runs:write"))
    body = {"golden_set": "help-center", "target": target.name}
    started = _post(client, "/api/v1/runs/", body, **headers)
    # The failing run of the scene, cancelled too late: the reply holds no trace of its verdict.
    cancelled = client.post(f"/api/v1/runs/{scene.current.pk}/cancel/", **headers)

    assert started.status_code == 201 and cancelled.status_code == 200
    assert set(started.json()) == set(RECEIPT) and started.json()["status"] == "queued"
    assert cancelled.json()["cancelled"] is False and set(cancelled.json()["run"]) == set(RECEIPT)
    assert (cancelled.json()["run"]["status"], cancelled.json()["run"]["final"]) == ("succeeded", True)
    for reply in (started.json(), cancelled.json()["run"]):
        assert set(reply["links"]) == {"run", "report", "verdict", "cancel", "page"}
    # Following the links is read's: this token gets 403 naming the scope.
    for link in ("run", "report", "verdict"):
        refused = client.get(started.json()["links"][link], **headers)
        assert refused.status_code == 403 and "'read'" in refused.json()["detail"]


def test_runs_list_filters_and_pages(scene: Scene, rita: User, token_for: TokenFor) -> None:
    client, headers = Client(), bearer(token_for(rita))
    page = client.get("/api/v1/runs/?limit=1", **headers).json()
    assert page["count"] == 2 and [r["id"] for r in page["results"]] == [scene.current.pk]
    assert page["next"].endswith("limit=1&offset=1")
    succeeded = client.get("/api/v1/runs/?status=succeeded&target=staging&golden_set=help-center", **headers)
    assert [r["id"] for r in succeeded.json()["results"]] == [scene.current.pk, scene.baseline.pk]
    assert client.get("/api/v1/runs/?target=other", **headers).json()["count"] == 0


def test_version_files_are_the_frozen_bytes_and_their_derivatives(
    version: GoldenVersion, rita: User, token_for: TokenFor
) -> None:
    client, headers = Client(), bearer(token_for(rita, "golden:read"))
    base = f"/api/v1/golden-sets/help-center/versions/{version.name}/"
    detail = client.get(base, **headers).json()
    as_json = client.get(base + "files/json/", **headers)
    qrels = client.get(base + "files/qrels/", **headers)
    unknown = client.get(base + "files/xml/", **headers)

    assert detail["files"]["json"] == f"http://testserver{base}files/json/"
    assert detail["files"] == {fmt: f"http://testserver{base}files/{fmt}/" for fmt in VERSION_FILES}
    beir = client.get(base + "files/beir/", **headers)
    assert beir["Content-Type"] == "application/zip"
    assert beir["Content-Disposition"] == f'attachment; filename="help-center@{version.name}.beir.zip"'
    assert detail["sha256"] == version.sha256 and detail["scale"] == {"min": 0, "max": 3}
    assert as_json.content == version.content_bytes
    assert as_json["X-Content-SHA256"] == version.sha256
    assert qrels.content.decode().splitlines()[0] == "q-1 0 d1 3"
    assert unknown.status_code == 404


def test_targets_show_secret_headers_as_env_names_and_urls_without_credentials(
    golden_set: GoldenSet, rita: User, token_for: TokenFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_SECRET_SEARCH_TOKEN", "hunter2")
    factories.grant_secrets(golden_set, "ASSAY_SECRET_SEARCH_TOKEN")
    target = target_create(
        name="prod",
        url="https://search.example/search?tenant=abc",
        headers={"Authorization": {"env": "ASSAY_SECRET_SEARCH_TOKEN"}, "X-Tenant": "acme"},
        golden_sets=[golden_set],
    )
    body = Client().get(f"/api/v1/targets/{target.pk}/", **bearer(token_for(rita))).json()
    assert body["headers"] == {"Authorization": {"env": "ASSAY_SECRET_SEARCH_TOKEN"}, "X-Tenant": "acme"}
    assert body["url"] == "https://search.example/search?tenant=%2A%2A%2A"
    assert "hunter2" not in json.dumps(body) and body["golden_sets"] == ["help-center"]


# --- tokens and sessions ----------------------------------------------------------------------------


def test_revoked_malformed_and_unknown_tokens_are_401(rita: User, token_for: TokenFor) -> None:
    raw = token_for(rita)
    token = ApiToken.objects.get(user=rita)
    client = Client()
    assert client.get("/api/v1/runs/", **bearer(raw)).status_code == 200
    token.refresh_from_db()
    assert token.last_used is not None
    for bad in (raw[:-1] + ("x" if raw[-1] != "x" else "y"), "assay_nothing", "garbage", raw + " extra"):
        assert client.get("/api/v1/runs/", HTTP_AUTHORIZATION=f"Bearer {bad}").status_code == 401, bad
    ApiToken.objects.filter(pk=token.pk).update(revoked="2026-01-01T00:00:00Z")
    response = client.get("/api/v1/runs/", **bearer(raw))
    assert response.status_code == 401
    assert response.json()["detail"] == "invalid, revoked or expired token"


def test_a_token_of_a_deactivated_user_is_refused(rita: User, token_for: TokenFor) -> None:
    raw = token_for(rita)
    User.objects.filter(pk=rita.pk).update(is_active=False)
    assert Client().get("/api/v1/runs/", **bearer(raw)).status_code == 401


def test_only_a_hash_of_the_token_is_stored(rita: User, token_for: TokenFor) -> None:
    raw = token_for(rita, "read")
    token = ApiToken.objects.get(user=rita)
    assert raw not in json.dumps([token.prefix, token.hashed, token.name, token.scopes])
    assert raw.startswith(f"assay_{token.prefix}_") and len(token.hashed) == 64


def test_a_session_caller_needs_the_csrf_token_to_write(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(rita)
    assert client.get("/api/v1/runs/").status_code == 200
    body = {"golden_set": "help-center", "target": target.name}
    refused = _post(client, "/api/v1/runs/", body)
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    client.get("/runs/")  # any page sets the CSRF cookie
    accepted = _post(client, "/api/v1/runs/", body, HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value)
    assert accepted.status_code == 201


def test_the_command_prints_a_working_token_once(rita: User) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "api_token_create", user="rita", name="CI", scope=["read", "runs:write"], stdout=out, stderr=err
    )
    raw = out.getvalue().strip()
    assert ApiToken.objects.get(user=rita).scopes == ["read", "runs:write"]
    assert "shown once" in err.getvalue()
    assert Client().get("/api/v1/runs/", **bearer(raw)).status_code == 200
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("api_token_create", user="nobody", name="CI", stdout=out, stderr=err)
    with pytest.raises(CommandError, match="name: say what the token is for"):
        call_command("api_token_create", user="rita", name="  ", stdout=out, stderr=err)


# --- settings-level rules ---------------------------------------------------------------------------


def test_the_pagination_refuses_an_unordered_queryset(rita: User) -> None:
    request = Request(APIRequestFactory().get("/api/v1/runs/"))
    paginator = OrderedLimitOffsetPagination()
    with pytest.raises(ImproperlyConfigured, match="unordered EvaluationRun queryset"):
        paginator.paginate_queryset(EvaluationRun.objects.order_by(), request)
    assert paginator.paginate_queryset(EvaluationRun.objects.order_by("id"), request) == []


def test_a_view_that_names_no_scope_refuses_tokens(rita: User, token_for: TokenFor) -> None:
    # PUT is not an operation of the runs endpoint; for a token the scope check answers first.
    response = Client().put("/api/v1/runs/", **bearer(token_for(rita)))
    assert response.status_code == 403
    assert response.json()["detail"] == "PUT here is not open to API tokens"


def test_the_openapi_schema_validates(tmp_path: Path) -> None:
    out = tmp_path / "schema.json"
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", "--file", str(out)
    )
    schema = json.loads(out.read_text())
    paths = set(schema["paths"])
    assert {
        "/api/v1/golden-sets/",
        "/api/v1/golden-sets/{slug}/versions/{name}/files/{fmt}/",
        "/api/v1/targets/{id}/",
        "/api/v1/runs/",
        "/api/v1/runs/{id}/report/",
        "/api/v1/runs/{id}/verdict/",
        "/api/v1/runs/{id}/cancel/",
    } <= paths
    assert schema["components"]["securitySchemes"]["apiToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["apiToken"]["description"],
    }


def test_swagger_ui_is_served_from_local_files_to_signed_in_users(ada: User, token_for: TokenFor) -> None:
    stranger = Client()
    page = stranger.get("/api/docs/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert stranger.get("/api/schema/").status_code == 401
    client = Client()
    client.force_login(ada)
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower() and "jsdelivr" not in html
    assert client.get("/api/schema/").status_code == 200
    assert Client().get("/api/schema/", **bearer(token_for(ada, "read"))).status_code == 200
    bundle = client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    assert bundle.status_code == 200


def test_golden_sets_are_hidden_from_a_set_reviewer_without_the_reviewer_role(
    golden_set: GoldenSet, token_for: TokenFor
) -> None:
    # In the set's reviewer list but not in the reviewers group: as on the golden version pages, nothing.
    loose = factories.UserFactory.create(username="loose")
    golden_set.reviewers.add(loose)
    assert Client().get("/api/v1/golden-sets/", **bearer(token_for(loose))).json()["results"] == []
