"""The import page's golden form takes the formats `assay convert` reads from one file (Quepid and SRW
CSV, SRW JSON, RRE, TREC qrels, golden JSONL): converted onto the set's rubric scale, keeping the set's k
and cutoff, and a query named by its text takes the id of the set's query of that text, so an import
never rewrites another query. A malformed file is a report naming its line or path, nothing imported."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.conf import LazySettings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse

from labeling.models import FrozenLabel, GoldenSet, Query
from tests import factories
from tests.support.import_files import confirmed

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_rita(client: Client, rita: User) -> Client:
    client.force_login(rita)
    return client


@pytest.fixture
def docs(golden_set: GoldenSet) -> None:
    for doc_id in ("d1", "d2", "d3"):
        factories.DocumentFactory.create(golden_set=golden_set, doc_id=doc_id)


def _post(
    client: Client, golden_set: GoldenSet, name: str, data: bytes, topics: bytes | None = None, **fields: str
) -> HttpResponse:
    url = reverse("golden_io:golden_import", args=[golden_set.slug])
    files = {"file": SimpleUploadedFile(name, data)}
    if topics is not None:
        files["topics"] = SimpleUploadedFile("topics.tsv", topics)
    return confirmed(client, client.post(url, {**files, **fields}))


def _problem(where: str, message: str) -> str:
    """A problem as the report's table shows it: the place in the Where column, the message beside it."""
    return f"<td><code>{where}</code></td><td>{message}"


def _labels(golden_set: GoldenSet) -> set[tuple[str, str, str, int]]:
    return set(
        FrozenLabel.objects.filter(query__golden_set=golden_set).values_list(
            "query__external_id", "query__text", "document__doc_id", "grade"
        )
    )


def test_the_page_offers_the_one_file_formats(as_rita: Client, golden_set: GoldenSet) -> None:
    body = as_rita.get(reverse("labeling:import", args=[golden_set.slug])).content.decode()
    for name in ("golden", "golden-jsonl", "quepid-csv", "srw-csv", "srw-json", "rre", "trec-qrels", "beir"):
        assert f'<option value="{name}"' in body
    assert 'name="topics"' in body


def test_a_quepid_csv_is_imported_onto_the_sets_queries_by_text(
    as_rita: Client, golden_set: GoldenSet, docs: None
) -> None:
    factories.QueryFactory.create(golden_set=golden_set, external_id="q-0001", text="api keys")
    factories.QueryFactory.create(golden_set=golden_set, external_id="q-0471", text="refund policy")
    golden_set.k, golden_set.relevant_min_grade = 5, 1
    golden_set.save()
    csv = b"query,docid,rating\nrefund policy,d1,3\nrefund policy,d2,0\nnew query,d3,2\n"
    response = _post(as_rita, golden_set, "quepid.csv", csv, format="quepid-csv")
    assert response.status_code == 200
    assert 'id="import-ok"' in response.content.decode()
    # "refund policy" is the set's q-0471; "new query" gets the first id the set does not hold (q-0001
    # is "api keys", which the import must not rewrite).
    assert _labels(golden_set) == {
        ("q-0471", "refund policy", "d1", 3),
        ("q-0471", "refund policy", "d2", 0),
        ("q-0002", "new query", "d3", 2),
    }
    assert Query.objects.get(golden_set=golden_set, external_id="q-0001").text == "api keys"
    golden_set.refresh_from_db()
    assert (golden_set.k, golden_set.relevant_min_grade) == (5, 1)


def test_srw_scores_need_a_scale_and_are_read_with_one(
    as_rita: Client, golden_set: GoldenSet, docs: None
) -> None:
    body = json.dumps(
        {
            "name": "n",
            "type": "IMPORT_JUDGMENT",
            "judgmentRatings": [{"query": "q", "ratings": [{"docId": "d1", "rating": "0.7"}]}],
        }
    ).encode()
    refused = _post(as_rita, golden_set, "srw.json", body, format="srw-json").content.decode()
    assert (
        _problem("srw.json: judgmentRatings[0].ratings[0].rating", "rating &quot;0.7&quot; is not an integer")
        in refused
    )
    assert not FrozenLabel.objects.exists()
    _post(as_rita, golden_set, "srw.json", body, format="srw-json", scale="0..1")
    assert _labels(golden_set) == {("q-0001", "q", "d1", 2)}


def test_qrels_with_a_map_and_a_malformed_line(as_rita: Client, golden_set: GoldenSet, docs: None) -> None:
    bad = _post(as_rita, golden_set, "qrels.txt", b"7 0 d1 1\n7 0 d2\n", format="trec-qrels").content.decode()
    assert _problem("qrels.txt: line 2", "expected 4 columns (qid iter docno rel), got 3") in bad
    assert not FrozenLabel.objects.exists()
    ok = _post(
        as_rita, golden_set, "qrels.txt", b"7 0 d1 1\n7 0 d2 -1\n", format="trec-qrels", map="-1=0 1=3"
    )
    assert 'id="import-ok"' in ok.content.decode()
    assert _labels(golden_set) == {("7", "7", "d1", 3), ("7", "7", "d2", 0)}


def test_a_map_off_the_rubric_scale_and_scale_on_a_golden_file_are_refused(
    as_rita: Client, golden_set: GoldenSet, docs: None
) -> None:
    csv = b"query,docid,rating\nx,d1,1\n"
    off = _post(as_rita, golden_set, "q.csv", csv, format="quepid-csv", map="1=9").content.decode()
    assert "1=9: 9 is not a grade on the rubric&#x27;s scale 0..3" in off
    golden = _post(as_rita, golden_set, "g.json", b"{}", format="golden", scale="0..1")
    assert golden.status_code == 400
    assert "a golden file&#x27;s grades are already grades" in golden.content.decode()
    assert not FrozenLabel.objects.exists()


def test_a_golden_jsonl_upload_is_a_golden_file_with_its_own_k(
    as_rita: Client, golden_set: GoldenSet, docs: None
) -> None:
    data = b'{"version": "v7", "k": 4}\n'
    data += b'{"id": "q-9", "text": "t", "judgments": [{"doc_id": "d1", "grade": 1}]}\n'
    response = _post(as_rita, golden_set, "g.jsonl", data, format="golden-jsonl")
    assert 'id="import-ok"' in response.content.decode()
    golden_set.refresh_from_db()
    assert (golden_set.k, golden_set.frozen_version) == (4, "v7")
    assert _labels(golden_set) == {("q-9", "t", "d1", 1)}


def test_qrels_with_a_topics_file_take_the_query_texts(
    as_rita: Client, golden_set: GoldenSet, docs: None
) -> None:
    qrels = b"7 0 d1 1\n7 0 d2 0\n9 0 d3 2\n"
    bad = _post(as_rita, golden_set, "qrels.txt", qrels, b"7\tcheap flights\n9 no tab\n", format="trec-qrels")
    page = bad.content.decode()
    assert _problem("topics.tsv: line 2", "expected qid&lt;TAB&gt;text") in page
    assert "qrels.txt" in page and not FrozenLabel.objects.exists()
    missing = _post(as_rita, golden_set, "qrels.txt", qrels, b"7\tcheap flights\n", format="trec-qrels")
    assert _problem("qrels.txt: line 3", "qid 9 has no text in topics.tsv") in missing.content.decode()
    ok = _post(as_rita, golden_set, "qrels.txt", qrels, b"7\tcheap flights\n9\thotels\n", format="trec-qrels")
    assert 'id="import-ok"' in ok.content.decode()
    assert _labels(golden_set) == {
        ("7", "cheap flights", "d1", 1),
        ("7", "cheap flights", "d2", 0),
        ("9", "hotels", "d3", 2),
    }


def test_a_topics_file_with_another_format_or_too_large_is_refused_in_words(
    as_rita: Client, golden_set: GoldenSet, settings: LazySettings
) -> None:
    csv = b"query,docid,rating\nx,d1,1\n"
    wrong = _post(as_rita, golden_set, "q.csv", csv, b"1\tx\n", format="quepid-csv")
    assert wrong.status_code == 400
    assert "a topics file goes with TREC qrels only (format trec-qrels)" in wrong.content.decode()
    settings.ASSAY_MAX_UPLOAD_BYTES = 1000
    big = _post(
        as_rita, golden_set, "qrels.txt", b"7 0 d1 1\n", b"7\t" + b"x" * 2000 + b"\n", format="trec-qrels"
    )
    assert big.status_code == 400
    assert "the topics file is 2,003 bytes; a file may be at most 1,000 bytes" in big.content.decode()
    assert not FrozenLabel.objects.exists()


def _zip(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


BEIR = {
    "nf/queries.jsonl": '{"_id": "PLAIN-1", "text": "diet"}\n{"_id": "PLAIN-2", "text": "sleep"}\n',
    "nf/qrels/test.tsv": "query-id\tcorpus-id\tscore\nPLAIN-1\td1\t2\nPLAIN-2\td3\t1\n",
    "nf/corpus.jsonl": '{"_id": "d1", "title": "Diet", "text": "not imported here"}\n',
}


def test_a_beir_zip_is_imported_with_its_query_ids_and_texts(
    as_rita: Client, golden_set: GoldenSet, docs: None
) -> None:
    documents = sorted(golden_set.documents.values_list("doc_id", "title", "body"))
    response = _post(as_rita, golden_set, "nf.zip", _zip(BEIR), format="beir")
    assert 'id="import-ok"' in response.content.decode()
    assert _labels(golden_set) == {("PLAIN-1", "diet", "d1", 2), ("PLAIN-2", "sleep", "d3", 1)}
    # The corpus is not imported here: the set's documents are as they were.
    assert sorted(golden_set.documents.values_list("doc_id", "title", "body")) == documents


@pytest.mark.parametrize(
    ("members", "said"),
    [
        (BEIR | {"../evil.txt": "x"}, "nf.zip: member &#x27;../evil.txt&#x27; leads outside the folder"),
        (BEIR | {"/etc/passwd": "x"}, "nf.zip: member &#x27;/etc/passwd&#x27; leads outside the folder"),
        ({"nf/queries.jsonl": BEIR["nf/queries.jsonl"]}, "nf.zip: no qrels/&lt;split&gt;.tsv file"),
        (
            BEIR | {"nf/qrels/dev.tsv": BEIR["nf/qrels/test.tsv"]},
            "nf.zip: several qrels splits (dev, test): --split NAME chooses one (an upload holds one split)",
        ),
    ],
)
def test_a_beir_zip_that_is_not_a_dataset_is_refused_in_words(
    members: dict[str, str], said: str, as_rita: Client, golden_set: GoldenSet, docs: None
) -> None:
    response = _post(as_rita, golden_set, "nf.zip", _zip(members), format="beir")
    assert response.status_code == 400
    assert said in response.content.decode()
    assert not FrozenLabel.objects.exists()


def test_a_beir_zip_bomb_and_a_file_that_is_no_zip_are_refused_in_words(
    as_rita: Client, golden_set: GoldenSet, docs: None, settings: LazySettings
) -> None:
    settings.ASSAY_MAX_UPLOAD_BYTES = 1 << 20
    # 20 MB of newlines in the qrels deflate to about 20 KB: under the upload limit, far over it unpacked.
    bomb = _zip(BEIR | {"nf/qrels/test.tsv": BEIR["nf/qrels/test.tsv"] + "\n" * (20 << 20)})
    assert len(bomb) < 1 << 20
    refused = _post(as_rita, golden_set, "nf.zip", bomb, format="beir").content.decode()
    assert "nf.zip: its dataset files unpack to 20," in refused
    assert "a zip here may unpack to at most 1 MB" in refused
    not_zip = _post(as_rita, golden_set, "nf.zip", b"query-id\tcorpus-id\tscore\n", format="beir")
    assert (
        "nf.zip: not a zip file (a dataset comes as its folder, or a zip of it)" in not_zip.content.decode()
    )
    assert not FrozenLabel.objects.exists()


def test_the_csv_of_every_problem_reads_the_file_in_its_format_again(
    as_rita: Client, golden_set: GoldenSet, docs: None
) -> None:
    """The report page's CSV form sends the format, scale and map again with the file (and asks for the
    topics file again), so the CSV lists the problems the report did, not a golden file's."""
    csv = b"query,docid,rating\nx,d1,0.5\n"
    page = _post(as_rita, golden_set, "q.csv", csv, format="quepid-csv", map="2=3").content.decode()
    assert '<input type="hidden" name="format" value="quepid-csv">' in page
    assert '<input type="hidden" name="map" value="2=3">' in page
    url = reverse("golden_io:golden_import_problems", args=[golden_set.slug])
    again = as_rita.post(
        url, {"file": SimpleUploadedFile("q.csv", csv), "format": "quepid-csv", "map": "2=3"}
    )
    assert again.status_code == 200
    # The page's words: its fields, Scale and Map, not the command's options.
    assert (
        'q.csv: line 2,"rating ""0.5"" is not an integer (Scale MIN..MAX or Map FROM=TO'
        in again.content.decode()
    )

    qrels_page = _post(
        as_rita, golden_set, "qrels.txt", b"7 0 d1 1\n8 0 d2 1\n", b"7\tx\n", format="trec-qrels"
    ).content.decode()
    assert '<input type="file" name="topics" required aria-label="topics.tsv">' in qrels_page
    assert not FrozenLabel.objects.exists()
