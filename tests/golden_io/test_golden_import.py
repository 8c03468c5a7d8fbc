"""Golden-file import (`golden_io.services.golden_import`): a golden file's queries and judgments become
the set's frozen labels; a file with any problem imports nothing. Also its upload on labeling's import
page and its command (`import_golden`)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from golden_io.services import golden_import
from labeling import services as labeling_services
from labeling.models import Candidate, Document, FrozenLabel, GoldenSet, Query, TierMove
from tests import factories
from tests.support.evaluation import page_text
from tests.support.import_files import confirmed, doc, golden_file, golden_query, jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def gset() -> GoldenSet:
    return factories.GoldenSetFactory.create(slug="hc", locales=["en-US", "de-DE"])


@pytest.fixture
def docs(gset: GoldenSet) -> None:
    labeling_services.documents_import(
        golden_set=gset, data=jsonl(*(doc(f"d{i}") for i in range(1, 6))), source="c"
    )


def test_it_imports_a_golden_file_as_the_sets_frozen_labels(gset: GoldenSet, docs: None) -> None:
    data = golden_file(
        golden_query("q-1", ("d1", 3), ("d2", 1), stratum="billing", weight=12, critical=True),
        golden_query("q-2", ("d3", 0), locale="de-DE", tier="shadow"),
        relevant_min_grade=2,
    )
    report = golden_import(golden_set=gset, data=data, source="golden.json")
    assert report.ok, report.problems
    assert report.counts["queries created"] == 2
    assert report.counts["labels added"] == 3
    q1 = Query.objects.get(external_id="q-1")
    assert (q1.stratum, q1.weight, q1.critical, q1.filters) == ("billing", 12.0, True, {"product": "billing"})
    assert Query.objects.get(external_id="q-2").tier == "shadow"
    labels = set(
        FrozenLabel.objects.values_list("query__external_id", "document__doc_id", "grade", "version")
    )
    assert labels == {
        ("q-1", "d1", 3, "2026-08-01"),
        ("q-1", "d2", 1, "2026-08-01"),
        ("q-2", "d3", 0, "2026-08-01"),
    }
    gset.refresh_from_db()
    assert gset.frozen_version == "2026-08-01"
    # Judged documents join the pools, marked as judged (no rank).
    assert Candidate.objects.filter(query=q1).count() == 2
    assert Candidate.objects.filter(query=q1).first().provenance == [{"system": "judged", "rank": None}]  # type: ignore[union-attr]


def test_a_golden_file_imported_to_replace_makes_the_frozen_labels_its_own(
    gset: GoldenSet, docs: None
) -> None:
    golden_import(golden_set=gset, data=golden_file(golden_query("q-1", ("d1", 3), ("d2", 1))), source="v1")
    v2 = json.dumps(
        {"version": "2026-09-01", "k": 10, "queries": [golden_query("q-1", ("d1", 2), text="new text")]}
    ).encode()
    report = golden_import(golden_set=gset, data=v2, source="v2", mode="replace")
    assert (report.counts["labels changed"], report.counts["labels removed"]) == (1, 1)
    assert list(FrozenLabel.objects.values_list("document__doc_id", "grade", "version")) == [
        ("d1", 2, "2026-09-01")
    ]
    assert Query.objects.get(external_id="q-1").text == "new text"


def test_it_imports_a_querys_traffic_band_and_failure_mode_apart_from_its_stratum(
    gset: GoldenSet, docs: None
) -> None:
    banded = golden_query("q-1", ("d1", 3), stratum="billing", traffic_band="tail", failure_mode="typo")
    report = golden_import(
        golden_set=gset, data=golden_file(banded, golden_query("q-2", ("d2", 1))), source="v1"
    )
    assert report.ok, report.problems
    assert sorted(Query.objects.values_list("external_id", "stratum", "traffic_band", "failure_mode")) == [
        ("q-1", "billing", "tail", "typo"),
        ("q-2", "", "", ""),
    ]

    # Merged, a band or failure mode the file leaves empty is kept; replacing, it is gone.
    again = golden_file(golden_query("q-1", ("d1", 3)))
    report = golden_import(golden_set=gset, data=again, source="v2")
    assert report.counts["query fields changed"] == 0
    assert Query.objects.filter(external_id="q-1", traffic_band="tail", failure_mode="typo").exists()
    report = golden_import(golden_set=gset, data=again, source="v2", mode="replace")
    assert report.counts["query fields changed"] == 3  # stratum, traffic band, failure mode
    assert Query.objects.filter(external_id="q-1", traffic_band="", failure_mode="").exists()

    bad = golden_import(
        golden_set=gset, data=golden_file(golden_query("q-1", ("d1", 3), traffic_band="torsos")), source="v3"
    )
    assert [str(p) for p in bad.problems] == [
        'queries[0].traffic_band: "torsos" is not a traffic band: use one of head, torso, tail, or leave it'
        ' out (query "q-1")'
    ]


def test_a_judgment_key_is_kept_on_a_document_without_one(gset: GoldenSet) -> None:
    labeling_services.documents_import(
        golden_set=gset, data=jsonl(doc("d1", key=None), doc("d2")), source="c"
    )
    data = golden_file(
        {
            **golden_query("q-1"),
            "judgments": [{"doc_id": "d1", "grade": 3, "key": "https://kb.example/refunds"}],
        },
        {
            **golden_query("q-2"),
            "judgments": [{"doc_id": "d1", "grade": 1, "key": "https://kb.example/refunds"}],
        },
    )
    report = golden_import(golden_set=gset, data=data, source="golden.json")
    assert report.ok, report.problems
    assert report.counts["document keys set"] == 1
    assert Document.objects.get(doc_id="d1").key == "https://kb.example/refunds"


def test_a_judgment_key_that_another_document_holds_or_that_contradicts_is_a_problem(gset: GoldenSet) -> None:
    labeling_services.documents_import(
        golden_set=gset, data=jsonl(doc("d1", key=None), doc("d2"), doc("d3", key=None)), source="c"
    )
    data = golden_file(
        {**golden_query("q-1"), "judgments": [{"doc_id": "d1", "grade": 3, "key": doc("d2")["key"]}]},
        {
            **golden_query("q-2"),
            "judgments": [
                {"doc_id": "d3", "grade": 1, "key": "https://kb.example/a"},
                {"doc_id": "d2", "grade": 1, "key": "https://kb.example/other"},
            ],
        },
        {**golden_query("q-3"), "judgments": [{"doc_id": "d3", "grade": 1, "key": "https://kb.example/b"}]},
    )
    report = golden_import(golden_set=gset, data=data, source="golden.json")
    assert [str(p) for p in report.problems] == [
        "queries[0].judgments[0].key: query q-1: key https://help.example.com/d2 belongs to document d2,"
        " not d1",
        # judgments are read in doc id order, so d2 is the query's judgments[0]
        "queries[1].judgments[0].key: query q-2: key https://kb.example/other differs from the document's"
        " https://help.example.com/d2",
        "queries[2].judgments[0].key: query q-3: key https://kb.example/b for d3, which another judgment keys"
        " https://kb.example/a",
    ]
    assert not Document.objects.filter(doc_id__in=["d1", "d3"], key__isnull=False).exists()
    assert not Query.objects.exists()


def test_a_re_import_that_changes_a_tier_records_the_move(gset: GoldenSet, docs: None) -> None:
    golden_import(golden_set=gset, data=golden_file(golden_query("q-1", ("d1", 3))), source="v1")
    assert not TierMove.objects.exists()
    golden_import(
        golden_set=gset, data=golden_file(golden_query("q-1", ("d1", 3), tier="shadow")), source="v2"
    )
    move = TierMove.objects.get()
    assert (move.by, move.from_tier, move.to_tier) == (None, "core", "shadow")
    assert move.reason == "golden file import v2 (version 2026-08-01)"


def test_it_names_each_problem_of_a_golden_file_and_imports_nothing(gset: GoldenSet, docs: None) -> None:
    data = golden_file(
        golden_query("q-1", ("d1", 3), ("doc-404", 2)),
        golden_query("q-2", ("d2", 7)),
        golden_query("q-3", ("d3", 1), locale="fr-FR"),
    )
    report = golden_import(golden_set=gset, data=data, source="golden.json")
    messages = [str(p) for p in report.problems]
    assert any(
        m.startswith("queries[1].judgments[0].grade") and "outside the scale 0..3" in m for m in messages
    )
    assert not Query.objects.exists() and not FrozenLabel.objects.exists()
    # The grade fixed, the remaining problems are the set's: unknown document and locale out of scope.
    fixed = golden_file(
        golden_query("q-1", ("d1", 3), ("doc-404", 2)), golden_query("q-3", ("d3", 1), locale="fr-FR")
    )
    report = golden_import(golden_set=gset, data=fixed, source="golden.json")
    assert [p.where for p in report.problems] == ["queries[0].judgments[1].doc_id", "queries[1].locale"]
    assert "doc-404 is not a document of golden set hc" in report.problems[0].message
    assert "fr-FR is outside the golden set's scope (en-US, de-DE)" in report.problems[1].message
    assert not Query.objects.exists() and not FrozenLabel.objects.exists()


def test_it_refuses_a_golden_file_on_another_scale_or_rubric(gset: GoldenSet, docs: None) -> None:
    data = golden_file(golden_query("q-1", ("d1", 1)), scale={"min": 0, "max": 1}, rubric="other@2")
    report = golden_import(golden_set=gset, data=data, source="golden.json")
    assert [p.where for p in report.problems] == ["scale", "rubric"]
    assert "differs from rubric help-center@1's scale 0..3" in report.problems[0].message
    assert not Query.objects.exists()


def test_it_reports_malformed_golden_json_with_its_place(gset: GoldenSet) -> None:
    report = golden_import(golden_set=gset, data=b'{"version": "x", "queries": [', source="g.json")
    assert [p.where for p in report.problems] == ["line 1, column 30"]
    assert "JSON" in report.problems[0].message
    assert not Query.objects.exists()


# --- the upload on labeling's import page ----------------------------------------------------------


@pytest.fixture
def as_rita(client: Client, rita: User) -> Client:
    client.force_login(rita)
    return client


def _upload(client: Client, golden_set: GoldenSet, name: str, data: bytes):
    url = reverse("golden_io:golden_import", args=[golden_set.slug])
    return confirmed(client, client.post(url, {"file": SimpleUploadedFile(name, data)}))


def test_the_import_pages_golden_form_posts_to_golden_io(as_rita: Client, golden_set: GoldenSet) -> None:
    body = as_rita.get(reverse("labeling:import", args=[golden_set.slug])).content.decode()
    assert f'action="{reverse("golden_io:golden_import", args=[golden_set.slug])}"' in body
    assert (
        reverse("golden_io:golden_import", args=[golden_set.slug])
        == f"/sets/{golden_set.slug}/import-golden/"
    )


def test_a_golden_upload_is_reported_and_imported(as_rita: Client, golden_set: GoldenSet) -> None:
    factories.DocumentFactory.create(golden_set=golden_set, doc_id="doc-8821")
    golden = {
        "version": "2026-08-01",
        "k": 10,
        "queries": [
            {
                "id": "q-0471",
                "text": "refund policy for annual plan",
                "locale": "en-US",
                "filters": {"product": "billing", "status": "published"},
                "judgments": [{"doc_id": "doc-8821", "grade": 3}],
            }
        ],
    }
    response = _upload(as_rita, golden_set, "golden.json", json.dumps(golden).encode())
    assert response.status_code == 200
    assert 'id="import-ok"' in response.content.decode()
    assert Query.objects.get().external_id == "q-0471"


def test_a_golden_upload_nested_past_pythons_limit_is_a_worded_400(
    as_rita: Client, golden_set: GoldenSet
) -> None:
    # The fast decoder's RecursionError on a deep filter value escaped: a 500 before.
    deep = "[" * 100_000 + "]" * 100_000
    query = '{"id": "q1", "text": "t", "filters": {"x": ' + deep + "}}"
    text = '{"version": "v1", "k": 10, "queries": [' + query + "]}"
    response = _upload(as_rita, golden_set, "golden.json", text.encode())
    assert response.status_code == 400
    assert "invalid JSON: nested too deeply to read" in response.content.decode()
    assert not Query.objects.exists()


@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_a_golden_upload_over_the_web_query_limit_is_refused_in_words_naming_the_command(
    as_rita: Client, golden_set: GoldenSet, settings: Any, form: str
) -> None:
    settings.ASSAY_WEB_GOLDEN_MAX_QUERIES = 3
    factories.DocumentFactory.create(golden_set=golden_set, doc_id="d1")
    queries = [golden_query(f"q-{i}", ("d1", 2)) for i in range(4)]
    # The last query is broken: a refusal for the count alone shows the file was not checked first.
    queries[3]["judgments"][0]["grade"] = "high"
    header = {"version": "2026-08-01", "k": 10}
    data = golden_file(*queries) if form == "json" else jsonl(header, *queries)

    response = _upload(as_rita, golden_set, f"golden.{form}", data)

    assert response.status_code == 400
    text = page_text(response)
    assert "the file holds more than 3 queries; a file uploaded here may hold at most 3" in text
    assert f"python manage.py import_golden {golden_set.slug} <file>" in text
    assert "grade" not in text.split("Try again")[0]  # counted, not checked
    assert not Query.objects.exists()
    csv_url = reverse("golden_io:golden_import_problems", args=[golden_set.slug])
    listed = as_rita.post(csv_url, {"file": SimpleUploadedFile("golden.json", data)}).content.decode()
    assert "too_many_queries" in listed


def test_a_golden_upload_at_the_web_query_limit_is_imported(
    as_rita: Client, golden_set: GoldenSet, settings: Any
) -> None:
    settings.ASSAY_WEB_GOLDEN_MAX_QUERIES = 3
    factories.DocumentFactory.create(golden_set=golden_set, doc_id="d1")
    data = golden_file(*(golden_query(f"q-{i}", ("d1", 2)) for i in range(3)))

    response = _upload(as_rita, golden_set, "golden.json", data)

    assert response.status_code == 200, page_text(response)
    assert Query.objects.count() == 3


def test_the_command_has_no_web_query_limit(
    gset: GoldenSet, docs: None, settings: Any, tmp_path: Path
) -> None:
    settings.ASSAY_WEB_GOLDEN_MAX_QUERIES = 1
    path = tmp_path / "golden.json"
    path.write_bytes(golden_file(golden_query("q-1", ("d1", 3)), golden_query("q-2", ("d2", 1))))

    call_command("import_golden", gset.slug, str(path), "--yes", stdout=StringIO())

    assert Query.objects.filter(golden_set=gset).count() == 2


def test_a_golden_upload_without_a_file_shows_the_import_page_again(
    as_rita: Client, golden_set: GoldenSet
) -> None:
    response = as_rita.post(reverse("golden_io:golden_import", args=[golden_set.slug]), {})
    assert response.status_code == 400
    body = response.content.decode()
    for section in ("import-documents", "import-golden", "import-query-log", "import-run"):
        assert f'id="{section}"' in body
    assert "This field is required." in body
    assert not Query.objects.exists()


def test_a_golden_upload_is_for_the_sets_reviewers_only(
    client: Client, golden_set: GoldenSet, alice: User, charlie: User
) -> None:
    for user in (alice, charlie):
        client.force_login(user)
        assert _upload(client, golden_set, "golden.json", b"{}").status_code == 404
    assert not Query.objects.exists()


# --- the command ----------------------------------------------------------------------------------


def test_the_import_golden_command_reports_and_fails_loudly(
    gset: GoldenSet, docs: None, tmp_path: Path
) -> None:
    path = tmp_path / "golden.json"
    path.write_bytes(golden_file(golden_query("q-1", ("d1", 3))))
    out = StringIO()
    call_command("import_golden", "hc", str(path), "--yes", stdout=out)
    assert "labels added: 1" in out.getvalue()
    path.write_bytes(golden_file(golden_query("q-2", ("doc-404", 3))))
    with pytest.raises(CommandError, match="doc-404 is not a document of golden set hc"):
        call_command("import_golden", "hc", str(path), "--yes", stdout=StringIO())
    assert list(Query.objects.values_list("external_id", flat=True)) == ["q-1"]
