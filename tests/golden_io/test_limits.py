"""What `assay validate` accepts the database stores: the format's limits (assay.golden.fields.MAX_LENGTH,
MAX_INT) are the columns', and an upload over them is a worded 400 on PostgreSQL, not a 500."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from assay.golden.fields import MAX_LENGTH
from golden_io.models import GoldenVersion
from labeling.models import Document, GoldenSet, Query

pytestmark = pytest.mark.django_db

COLUMNS = {
    "version": GoldenVersion._meta.get_field("name"),
    "rubric": GoldenVersion._meta.get_field("rubric_name"),
    "id": Query._meta.get_field("external_id"),
    "text": Query._meta.get_field("text"),
    "locale": Query._meta.get_field("locale"),
    "stratum": Query._meta.get_field("stratum"),
    "failure_mode": Query._meta.get_field("failure_mode"),
    "doc_id": Document._meta.get_field("doc_id"),
    "key": Document._meta.get_field("key"),
}


def test_the_formats_limits_are_the_columns() -> None:
    assert {field: getattr(column, "max_length", None) for field, column in COLUMNS.items()} == MAX_LENGTH


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ({"text": "x" * 1001}, "is 1,001 characters long; at most 1,000 can be stored"),
        ({"id": "q" * 302}, "is 302 characters long; at most 200 can be stored"),
        ({"text": "nul \x00 inside"}, "contains the control character \\u0000, which cannot be stored"),
    ],
)
def test_an_upload_over_a_limit_is_a_worded_400_and_imports_nothing(
    query: dict[str, str], says: str, golden_set: GoldenSet, rita: User
) -> None:
    client = Client()
    client.force_login(rita)
    row = {"id": "q-1", "text": "refund", "judgments": [{"doc_id": "d-1", "grade": 2}], **query}
    data = json.dumps({"version": "v1", "queries": [row]}).encode()
    url = reverse("golden_io:golden_import", args=[golden_set.slug])
    response = client.post(url, {"file": SimpleUploadedFile("golden.json", data)})
    assert response.status_code == 400
    assert says in response.content.decode().replace("&quot;", '"')
    assert not Query.objects.exists()
