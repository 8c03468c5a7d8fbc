"""The reviewers' import page and the admin: uploads call the same services and show the report. The
golden file's upload on the same page is golden_io's: tests/golden_io/test_golden_import.py."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from labeling import services
from labeling.models import Candidate, Document, GoldenSet, Query
from tests import factories


@pytest.fixture
def as_rita(client: Client, rita: User) -> Client:
    client.force_login(rita)
    return client


def _upload(client: Client, golden_set: GoldenSet, kind: str, name: str, data: bytes, **fields: object):
    url = reverse("labeling:import_upload", args=[golden_set.slug, kind])
    return client.post(url, {"file": SimpleUploadedFile(name, data), **fields})


def test_the_import_page_offers_every_import(as_rita: Client, golden_set: GoldenSet) -> None:
    body = as_rita.get(reverse("labeling:import", args=[golden_set.slug])).content.decode()
    for section in ("import-documents", "import-golden", "import-query-log", "import-run"):
        assert f'id="{section}"' in body
    assert 'name="cap"' in body and 'name="reserve_share"' in body and 'name="system"' in body


def test_a_failed_upload_lists_every_problem_with_400_and_imports_nothing(
    as_rita: Client, golden_set: GoldenSet
) -> None:
    data = b'{"id": "d1", "title": "A"}\n{"id": "d1", "title": "B"}\nnot json\n'
    response = _upload(as_rita, golden_set, "documents", "docs.jsonl", data)
    assert response.status_code == 400
    body = response.content.decode()
    assert "not imported — 2 problems; nothing was changed" in body
    assert "line 2: id" in body and "duplicate id" in body and "line 3" in body
    assert not Document.objects.exists()


def test_a_file_with_thousands_of_problems_lists_the_first_thousand_and_counts_the_rest(
    as_rita: Client, golden_set: GoldenSet
) -> None:
    data = b"not json\n" * 1500
    response = _upload(as_rita, golden_set, "documents", "docs.jsonl", data)
    assert response.status_code == 400
    body = response.content.decode()
    assert "not imported — 1500 problems; nothing was changed" in body
    assert body.count("<tr><td><code>line ") == 1000
    assert "... and 500 more (1,500 problems in all)" in body
    assert not Document.objects.exists()


DEEP = "[" * 100_000
HUGE = "9" * 5000  # past Python's int-string digit limit (4,300)


@pytest.mark.parametrize(
    ("kind", "name", "data", "says"),
    [
        # A RecursionError (deep nesting) or a ValueError (the digit limit) before: each a 500.
        (
            "documents",
            "d.jsonl",
            '{"id": "d1", "title": "A", "fields": ' + DEEP,
            "line 1 nested deeper than 64",
        ),
        (
            "documents",
            "d.jsonl",
            '{"id": "d1", "title": "A", "n": ' + HUGE + "}",
            "line 1 a number is too long",
        ),
        ("query-log", "log.jsonl", '{"query": "a", "count": ' + DEEP, "line 1 nested deeper than 64"),
        ("query-log", "log.jsonl", '{"query": "a", "count": ' + HUGE + "}", "line 1 a number is too long"),
        # Under the digit limit but past a float: the count's weight overflowed.
        (
            "query-log",
            "log.jsonl",
            '{"query": "a", "count": 1' + "0" * 400 + "}",
            "line 1: count expected a non-negative integer up to 1,000,000,000,000,000",
        ),
        (
            "query-log",
            "log.csv",
            "query,count\na," + HUGE + "\n",
            "line 2: count expected a non-negative integer up to",
        ),
    ],
)
def test_an_upload_too_deep_or_with_too_long_a_number_is_a_worded_400(
    as_rita: Client, golden_set: GoldenSet, kind: str, name: str, data: str, says: str
) -> None:
    options = {"cap": 10, "reserve_share": 0.25, "zero_hit_min_share": 0.05, "seed": 0}
    response = _upload(as_rita, golden_set, kind, name, data.encode(), **options)
    assert response.status_code == 400
    assert says in " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())
    assert not Document.objects.exists() and not Query.objects.exists()


def test_a_query_log_upload_uses_the_sampling_options(as_rita: Client, golden_set: GoldenSet) -> None:
    rows = "\n".join(f"query {i},{100 - i},{5 if i % 10 == 0 else 0},en-US" for i in range(60))
    data = f"query,count,zero_hits,locale\n{rows}\n".encode()
    response = _upload(
        as_rita,
        golden_set,
        "query-log",
        "log.csv",
        data,
        cap=20,
        reserve_share=0.25,
        zero_hit_min_share=0.05,
        seed=3,
    )
    assert response.status_code == 200, response.content[:500]
    assert Query.objects.count() == 20
    assert Query.objects.filter(tags__contains=["known-failure"]).count() == 5


def test_a_query_log_upload_shows_pii_counts_per_kind_and_samples(
    as_rita: Client, golden_set: GoldenSet
) -> None:
    data = (
        b"query,count\n"
        b"ip 192.168.10.4 blocked,3\n"
        b"sk_live_51H8xYzAbCdEf,2\n"
        b"https://help.example.com/reset?email=bob@example.com,1\n"
        b"refund policy,9\n"
    )
    response = _upload(
        as_rita,
        golden_set,
        "query-log",
        "log.csv",
        data,
        cap=10,
        reserve_share=0,
        zero_hit_min_share=0.5,
        seed=1,
    )
    assert response.status_code == 200, response.content[:500]
    body = response.content.decode()
    for kind in ("ip", "secret", "url query"):
        assert f'<td>PII removed: {kind}</td><td class="num">1</td>' in body
    samples = body[body.index('id="pii-samples"') :]
    assert "<code>ip 192.168.10.4 blocked</code></td><td><code>ip blocked</code>" in samples
    assert "<code>https://help.example.com/reset</code>" in samples
    assert "empty: dropped" in samples  # the token was the whole query
    texts = set(Query.objects.values_list("text", flat=True))
    assert texts == {"ip blocked", "https://help.example.com/reset", "refund policy"}


def test_a_bad_option_is_shown_on_the_form(as_rita: Client, golden_set: GoldenSet) -> None:
    response = _upload(as_rita, golden_set, "query-log", "log.csv", b"query,count\na,1\n", cap=0, seed=0)
    assert response.status_code == 400
    assert "Ensure this value is greater than or equal to 1" in response.content.decode()
    assert not Query.objects.exists()


def test_a_run_upload_pools_candidates(as_rita: Client, golden_set: GoldenSet) -> None:
    query = factories.QueryFactory.create(golden_set=golden_set, external_id="q1")
    for i in (1, 2):
        factories.DocumentFactory.create(golden_set=golden_set, doc_id=f"d{i}")
    run = b"q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 1.0 x\n"
    response = _upload(as_rita, golden_set, "run", "run.txt", run, system="dense-v2", depth=20)
    assert response.status_code == 200
    assert set(Candidate.objects.filter(query=query).values_list("document__doc_id", flat=True)) == {
        "d1",
        "d2",
    }


def test_an_unknown_import_kind_is_404(as_rita: Client, golden_set: GoldenSet) -> None:
    assert _upload(as_rita, golden_set, "spreadsheet", "x.csv", b"x").status_code == 404


@pytest.mark.parametrize(
    "model",
    [
        "rubric",
        "goldenset",
        "document",
        "query",
        "frozenlabel",
        "candidate",
        "assignment",
        "judgment",
        "judgmentevent",
    ],
)
def test_the_admin_lists_every_labeling_model(model: str, assignment, client: Client) -> None:
    admin = factories.UserFactory.create(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    assert client.get(f"/admin/labeling/{model}/").status_code == 200


def test_the_set_page_shows_each_assignment_with_its_progress(
    as_rita: Client, assignment, golden_set: GoldenSet
) -> None:
    candidate = assignment.query.candidates.order_by("best_rank")[1]
    services.judgment_submit(
        assignment_id=assignment.pk, rater=assignment.rater, candidate_id=candidate.pk, grade=1
    )
    body = as_rita.get(reverse("labeling:set_detail", args=[golden_set.slug])).content.decode()
    assert "alice" in body and "1 graded" in body and assignment.query.external_id in body
