"""Nothing a person sends is written before the columns are known to hold it (assay.storable): a value
longer than its column, a NUL, a lone surrogate (and, in ids, titles, URLs and names, any control
character but tab, LF and CR) is refused with the row and field named, and nothing is written. On
PostgreSQL each of these was a 500 ("value too long for type character varying", "unsupported Unicode
escape sequence"); SQLite stored them. The same assertions hold on both: run this module with
DATABASE_URL=sqlite:///... as well (docs/deployment.md, "SQLite or PostgreSQL")."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from assay.labels import querylog
from evaluation.models import Baseline, BudgetSet, EvaluationRun, SearchTarget
from golden_io.models import GoldenVersion
from labeling.models import Assignment, Document, GoldenSet, Judgment, Query
from tests import factories
from tests.support.evaluation import bearer
from tests.support.import_files import doc

pytestmark = pytest.mark.django_db

NUL = "the control character \\u0000, which cannot be stored"
BELL = "the control character \\u0001, which cannot be stored"


def _client(user: User) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def _text(response: Any) -> str:
    return html.unescape(response.content.decode())


def _problems(response: Any) -> list[str]:
    """An import report's problems as `where: message`, as the page's table lists them."""
    rows = re.findall(r"<tr><td><code>(.*?)</code></td><td>(.*?)</td></tr>", response.content.decode())
    return [html.unescape(f"{where}: {message}") for where, message in rows]


# --- documents ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "says"),
    [
        ({"id": "d" * 201}, "line 2: id: is 201 characters long; at most 200 can be stored"),
        ({"key": "k" * 501}, "line 2: key: is 501 characters long; at most 500 can be stored"),
        ({"title": "t" * 501}, "line 2: title: is 501 characters long; at most 500 can be stored"),
        ({"url": "u" * 1001}, "line 2: url: is 1,001 characters long; at most 1,000 can be stored"),
        ({"title": "a\u0000b"}, f"line 2: title: contains {NUL}"),
        ({"title": "a\u0001b"}, f"line 2: title: contains {BELL}"),
        ({"body": "a\u0000b"}, f"line 2: body: contains {NUL}"),
        ({"snippet": "a\u0000b"}, f"line 2: snippet: contains {NUL}"),
        ({"fields": {"a": ["x", "\u0000"]}}, f"line 2: fields.a[1]: contains {NUL}"),
        ({"fields": {"a\u0000": 1}}, f"line 2: fields: the name 'a\\x00' contains {NUL}"),
        ({"title": "\ud800"}, "line 2: title: contains a lone surrogate \\ud800 (not valid Unicode)"),
    ],
)
def test_a_document_the_columns_cannot_hold_is_refused_by_line_and_field(
    row: dict[str, Any], says: str, golden_set: GoldenSet, rita: User
) -> None:
    lines = [json.dumps(doc("d1")), json.dumps({**doc("d2"), **row})]
    upload = SimpleUploadedFile("docs.jsonl", "\n".join(lines).encode())
    url = reverse("labeling:import_upload", args=[golden_set.slug, "documents"])
    response = _client(rita).post(url, {"file": upload})
    assert response.status_code == 400
    assert _problems(response) == [says]
    assert not Document.objects.exists()


def test_a_document_at_every_limit_is_stored(golden_set: GoldenSet, rita: User) -> None:
    row = {"id": "d" * 200, "key": "k" * 500, "title": "t" * 500, "url": "u" * 1000, "body": "tab\there\f"}
    upload = SimpleUploadedFile("docs.jsonl", json.dumps({**doc("x"), **row}).encode())
    url = reverse("labeling:import_upload", args=[golden_set.slug, "documents"])
    assert _client(rita).post(url, {"file": upload}).status_code == 200
    assert Document.objects.get().title == "t" * 500


# --- query logs --------------------------------------------------------------------------------------


def test_the_query_logs_limits_are_the_columns() -> None:
    fields = ("text", "locale", "stratum")
    columns = {name: getattr(Query._meta.get_field(name), "max_length", None) for name in fields}
    assert columns == {
        "text": querylog.MAX_QUERY,
        "locale": querylog.MAX_LOCALE,
        "stratum": querylog.MAX_VERTICAL,
    }


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("q" * 1001 + ",5,en-US,", "line 3: query: is 1,001 characters long; at most 1,000 can be stored"),
        ("a\x00b,5,en-US,", f"line 3: query: contains {NUL}"),
        ("a\x07b,5,en-US,", "line 3: query: contains the control character \\u0007, which cannot be stored"),
        ("ab,5," + "l" * 36 + ",", "line 3: locale: is 36 characters long; at most 35 can be stored"),
        ("ab,5,en\x00US,", f"line 3: locale: contains {NUL}"),
        ("ab,5,en-US,bill\x00ing", f"line 3: vertical: contains {NUL}"),
    ],
)
def test_a_query_log_row_the_columns_cannot_hold_is_refused_by_line_and_field(
    line: str, says: str, golden_set: GoldenSet, rita: User
) -> None:
    data = f"query,count,locale,vertical\nfine,3,en-US,billing\n{line}\n".encode()
    url = reverse("labeling:import_upload", args=[golden_set.slug, "query-log"])
    form = {"cap": 10, "reserve_share": 0.1, "zero_hit_min_share": 0.5, "seed": 0}
    response = _client(rita).post(url, {"file": SimpleUploadedFile("log.csv", data), **form})
    assert response.status_code == 400
    assert _problems(response) == [says]
    assert not Query.objects.exists()


def test_a_query_whose_spaces_collapse_within_the_limit_is_stored(golden_set: GoldenSet, rita: User) -> None:
    text = "refund " + " " * 2000 + "policy"
    data = f"query,count,locale\n{text},3,en-US\n".encode()
    url = reverse("labeling:import_upload", args=[golden_set.slug, "query-log"])
    form = {"cap": 10, "reserve_share": 0.1, "zero_hit_min_share": 0.5, "seed": 0}
    assert _client(rita).post(url, {"file": SimpleUploadedFile("log.csv", data), **form}).status_code == 200
    assert Query.objects.get().text == "refund policy"


# --- the grading endpoint ----------------------------------------------------------------------------


@pytest.mark.parametrize("note", ["a\u0000b", "\ud800"])
def test_a_note_no_column_holds_is_a_worded_400(note: str, assignment: Assignment, alice: User) -> None:
    candidate = assignment.query.candidates.order_by("best_rank").first()
    assert candidate is not None
    url = reverse("labeling:grades", args=[assignment.pk])
    body = json.dumps({"candidate": factories.token(assignment, candidate), "grade": 2, "note": note})
    response = _client(alice).post(url, body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "bad_request"
    assert response.json()["message"].startswith("the note contains ")
    assert response.json()["message"].endswith("; your grade was not saved")
    assert not Judgment.objects.exists()


# --- the API's run bodies, and every other writer of params ------------------------------------------


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"boost": "a\u0000"}, f"params.boost: contains {NUL}"),
        ({"boost": ["x", {"deep": "\u0000"}]}, f"params.boost[1].deep: contains {NUL}"),
        ({"bo\u0000ost": 1}, f"params: the name 'bo\\x00ost' contains {NUL}"),
        ({"boost": "\ud800"}, "params.boost: contains a lone surrogate \\ud800 (not valid Unicode)"),
    ],
)
def test_run_params_no_column_holds_are_a_worded_400(
    params: dict[str, Any],
    says: str,
    version: GoldenVersion,
    target: SearchTarget,
    golden_set: GoldenSet,
    rita: User,
    token_for: Any,
) -> None:
    body = json.dumps({"golden_set": golden_set.slug, "target": target.name, "params": params})
    client = Client(raise_request_exception=False)
    response = client.post(
        "/api/v1/runs/", body, content_type="application/json", **bearer(token_for(rita, "runs:write"))
    )
    assert response.status_code == 400
    assert response.json() == {"detail": "the run cannot start", "problems": [says]}
    assert not EvaluationRun.objects.exists()


# --- budgets, targets, baselines, forms ---------------------------------------------------------------


def test_budgets_naming_a_stratum_with_a_nul_are_refused(golden_set: GoldenSet, rita: User) -> None:
    url = reverse("evaluation:budgets", args=[golden_set.slug])
    budgets = {"strata": {"bill\u0000ing": {"ndcg": {"warn": 0.01, "fail": 0.02}}}}
    response = _client(rita).post(url, {"budgets": json.dumps(budgets)})
    assert response.status_code == 422
    assert "budgets.strata: the name 'bill\\x00ing' contains the control character" in _text(response)
    assert not BudgetSet.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("params", '{"boost": "\\u0000"}', f"params.boost: contains {NUL}"),
        ("headers", '{"X-Tenant\\u0000": "a"}', "headers: the name 'X-Tenant\\x00' contains"),
        ("es_template", '{"query": ["\\u0000"]}', f"es_template.query[0]: contains {NUL}"),
    ],
)
def test_target_settings_no_column_holds_are_refused_by_field(
    field: str, value: str, says: str, target: SearchTarget, golden_set: GoldenSet, rita: User
) -> None:
    form = {
        "name": target.name,
        "adapter": "http_json",
        "url": target.url,
        "timeout": 5,
        "concurrency": 4,
        "retries": 0,
        "solr_method": "GET",
        "golden_sets": [golden_set.pk],
        field: value,
    }
    url = reverse("evaluation:target_edit", args=[target.pk])
    response = _client(rita).post(url, form)
    assert response.status_code == 422
    assert says in _text(response)
    target.refresh_from_db()
    assert target.params == {} and target.headers == {}


def test_a_target_name_over_its_column_is_refused_by_the_service(golden_set: GoldenSet) -> None:
    from assay.targets import TargetError
    from evaluation.runs.services import target_create

    with pytest.raises(TargetError) as caught:
        target_create(name="n" * 101, url="http://127.0.0.1:9/search", golden_sets=[golden_set])
    assert caught.value.problems == ["name: is 101 characters long; at most 100 can be stored"]
    assert not SearchTarget.objects.exists()


def test_a_rationale_with_a_nul_is_refused(finished: Any, rita: User) -> None:
    run = finished()
    url = reverse("evaluation:run_promote", args=[run.pk])
    response = _client(rita).post(url, {"rationale": "ok", "action": "promote"}, follow=True)
    assert response.status_code == 200 and Baseline.objects.count() == 1
    Baseline.objects.all().delete()
    from evaluation.runs.services import BaselineError, baseline_promote

    with pytest.raises(BaselineError) as caught:
        baseline_promote(run=run, by=rita, rationale="why\u0000")
    assert caught.value.problems == [f"rationale: contains {NUL}"]
    assert not Baseline.objects.exists()


def test_a_nul_in_any_posted_form_field_is_a_worded_400(finished: Any, rita: User) -> None:
    run = finished()
    url = reverse("evaluation:run_promote", args=[run.pk])
    response = _client(rita).post(url, {"rationale": "why\u0000", "action": "promote"})
    assert response.status_code == 400
    assert "The form field 'rationale' contains a NUL byte, which no page accepts." in _text(response)
    assert not Baseline.objects.exists()
