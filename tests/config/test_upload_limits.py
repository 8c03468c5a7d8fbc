"""Every upload has one limit, ASSAY_MAX_UPLOAD_MB (labeling.forms.UploadForm): a file over it is refused
with its size and the limit in words, one at the limit is read. A body declared larger than the server
reads is a worded 413 before anything reads it (config.middleware.RefuseOversizedBodies), in the API's
shape under /api/ and in JSON for the grading page's script; Django's own refusals of a form it cannot
read (too many fields, fields too large) are worded pages too (config.views.bad_request), not its bare
"Bad Request (400)"."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings
from django.urls import reverse

from config import settings as project_settings
from labeling.models import Assignment, Document, GoldenSet
from tests.support.import_files import doc

pytestmark = pytest.mark.django_db

LIMIT = 2000  # bytes, for these tests (ASSAY_MAX_UPLOAD_BYTES)
FIELDS = 10_000  # DATA_UPLOAD_MAX_MEMORY_SIZE, for these tests


@pytest.fixture(autouse=True)
def _small_limits(settings: Any) -> None:
    settings.ASSAY_MAX_UPLOAD_BYTES = LIMIT
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = FIELDS


def _client(user: User) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def _upload_urls(golden_set: GoldenSet) -> dict[str, str]:
    urls = {
        kind: reverse("labeling:import_upload", args=[golden_set.slug, kind])
        for kind in ("documents", "query-log", "run")
    }
    urls["golden"] = reverse("golden_io:golden_import", args=[golden_set.slug])
    urls["golden problems"] = reverse("golden_io:golden_import_problems", args=[golden_set.slug])
    return urls


def _documents(size: int) -> bytes:
    """A valid documents file of exactly `size` bytes (its body padded)."""
    row = doc("d1", body="")
    padding = size - len(json.dumps(row).encode()) - 1
    return (json.dumps({**row, "body": "x" * padding}) + "\n").encode()


def test_a_file_one_byte_over_the_limit_is_refused_by_every_upload_in_words(
    golden_set: GoldenSet, rita: User
) -> None:
    client = _client(rita)
    for kind, url in _upload_urls(golden_set).items():
        response = client.post(url, {"file": SimpleUploadedFile("f.jsonl", b"x" * (LIMIT + 1))})
        assert response.status_code == 400, kind
        assert (
            "the file is 2,001 bytes; a file may be at most 2,000 bytes (ASSAY_MAX_UPLOAD_MB): "
            "nothing was imported" in response.content.decode()
        ), kind


def test_a_file_at_the_limit_is_read(golden_set: GoldenSet, rita: User) -> None:
    data = _documents(LIMIT)
    assert len(data) == LIMIT
    url = _upload_urls(golden_set)["documents"]
    response = _client(rita).post(url, {"file": SimpleUploadedFile("docs.jsonl", data)})
    assert response.status_code == 200, response.content[:500]
    assert Document.objects.get().body == "x" * (LIMIT - len(json.dumps(doc("d1", body=""))) - 1)


def test_a_body_far_over_the_limit_is_a_worded_413_before_it_is_read(
    golden_set: GoldenSet, rita: User
) -> None:
    client = _client(rita)
    for kind, url in _upload_urls(golden_set).items():
        response = client.post(url, {"file": SimpleUploadedFile("f.jsonl", b"x" * 100_000)})
        assert response.status_code == 413, kind
        body = response.content.decode()
        assert "The upload is 100,1" in body, kind  # the file and the form around it
        assert "bytes: a file may be at most 2,000 bytes (ASSAY_MAX_UPLOAD_MB). Nothing was imported." in body
        assert "Bad Request" not in body
    assert not Document.objects.exists()


def test_a_form_body_over_djangos_limit_is_a_worded_413_page(golden_set: GoldenSet, rita: User) -> None:
    url = reverse("evaluation:budgets", args=[golden_set.slug])
    response = _client(rita).post(url, {"budgets": "{" + " " * FIELDS + "}"})
    assert response.status_code == 413
    body = response.content.decode()
    assert "Request body too large (413)" in body
    assert "the server reads at most 10,000 bytes (DATA_UPLOAD_MAX_MEMORY_SIZE). Nothing was saved." in body


def test_an_uploads_fields_over_djangos_limit_are_a_worded_413(golden_set: GoldenSet, rita: User) -> None:
    url = _upload_urls(golden_set)["query-log"]
    data = {"file": SimpleUploadedFile("log.csv", b"query,count\na,1\n"), "seed": "1" * (FIELDS + 1)}
    response = _client(rita).post(url, data)
    assert response.status_code == 413
    assert "The form&#x27;s fields besides its file are too large" in response.content.decode()


def test_too_many_fields_is_a_worded_400(golden_set: GoldenSet, rita: User, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    url = reverse("evaluation:budgets", args=[golden_set.slug])
    response = _client(rita).post(url, {f"f{i}": "1" for i in range(20)})
    assert response.status_code == 400
    body = response.content.decode()
    assert "The form sent more than 10 fields" in body and "Bad Request (400)" not in body


def test_the_grading_endpoint_answers_json(assignment: Assignment, alice: User) -> None:
    url = reverse("labeling:grades", args=[assignment.pk])
    body = json.dumps({"candidate": 1, "grade": 2, "note": "n" * FIELDS})
    response = _client(alice).post(url, body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "error": "too_large",
        "message": f"The request body is {len(body):,} bytes: the server reads at most 10,000 bytes "
        "(DATA_UPLOAD_MAX_MEMORY_SIZE). Nothing was saved.",
    }


def test_by_default_a_file_one_byte_over_50_mb_is_refused(golden_set: GoldenSet, rita: User) -> None:
    assert (project_settings.ASSAY_MAX_UPLOAD_MB, project_settings.ASSAY_MAX_UPLOAD_BYTES) == (50, 50 * 2**20)
    with override_settings(ASSAY_MAX_UPLOAD_BYTES=project_settings.ASSAY_MAX_UPLOAD_BYTES):
        url = _upload_urls(golden_set)["documents"]
        upload = SimpleUploadedFile("docs.jsonl", b" " * (50 * 2**20 + 1))
        response = _client(rita).post(url, {"file": upload})
    assert response.status_code == 400
    assert "the file is 52,428,801 bytes; a file may be at most 50 MB (ASSAY_MAX_UPLOAD_MB)" in (
        response.content.decode()
    )


def test_the_api_answers_in_its_error_shape(rita: User) -> None:
    body = json.dumps({"golden_set": "s", "target": "t", "params": {"x": "y" * FIELDS}})
    response = _client(rita).post("/api/v1/runs/", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["detail"] == "request body too large"
    assert response.json()["problems"] == [
        f"The request body is {len(body):,} bytes: the server reads at most 10,000 bytes "
        "(DATA_UPLOAD_MAX_MEMORY_SIZE). Nothing was saved."
    ]
