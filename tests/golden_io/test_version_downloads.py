"""A version's files in every format `assay convert` writes (golden_io.selectors.VERSION_FILES): each is
byte for byte what the command writes from the version's golden file, reads back with assay.convert's
reader to the version's labels, and is served to whoever sees the version page and to no one else."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from assay.cli import main
from assay.convert.formats import FORMATS
from assay.convert.options import Options
from assay.golden.format import from_dict
from assay.golden.model import GoldenFile
from golden_io.models import GoldenVersion
from golden_io.selectors import VERSION_FILES
from labeling.models import GoldenSet
from tests import factories
from tests.support.golden_sets import version_store

pytestmark = pytest.mark.django_db

GOLDEN = {
    "version": "2026-08-01",
    "k": 5,
    "queries": [
        {
            "id": "q-1",
            "text": "reset password",
            "locale": "en-US",
            "filters": {"lang": "en"},
            "stratum": "account",
            "critical": True,
            "judgments": [{"doc_id": "d-1", "grade": 3, "key": "https://help.example.com/d-1"}],
        },
        {
            "id": "q-2",
            "text": 'billing, "invoices"',
            "stratum": "billing",
            "tier": "shadow",
            "judgments": [{"doc_id": "d-3", "grade": 2}, {"doc_id": "d-10", "grade": 0}],
        },
        {"id": "q-10", "text": "api keys", "judgments": [{"doc_id": "d-2", "grade": 1}]},
    ],
}
# The set's documents in natural id order: the BEIR corpus (d-99 judged by no query, d-3 with no body).
DOCUMENTS = [
    {"id": "d-1", "title": "Reset your password", "body": "Open settings.", "snippet": "Settings"},
    {"id": "d-2", "title": "API keys", "body": "Create a key.", "snippet": ""},
    {"id": "d-3", "title": "Invoices – Rechnungen", "body": "", "snippet": "Where invoices are"},
    {"id": "d-10", "title": "Billing", "body": "Plans and prices.", "snippet": ""},
    {"id": "d-99", "title": "Unjudged", "body": "Not in the qrels.", "snippet": ""},
]


def golden() -> GoldenFile:
    return from_dict(GOLDEN)


@pytest.fixture
def version(golden_set: GoldenSet) -> GoldenVersion:
    for doc in reversed(DOCUMENTS):  # stored out of order: the corpus is in natural id order anyway
        factories.DocumentFactory.create(
            golden_set=golden_set,
            doc_id=doc["id"],
            title=doc["title"],
            body=doc["body"],
            snippet=doc["snippet"],
        )
    return version_store(golden_set, golden())


def _download(client: Client, fmt: str) -> tuple[bytes, str, str]:
    response = client.get(reverse("golden_io:download", args=["help-center", "2026-08-01", fmt]))
    assert response.status_code == 200, fmt
    return response.content, response["Content-Type"], response["Content-Disposition"]


def _converted(fmt: str, tmp_path: Path) -> dict[str, bytes]:
    """What `assay convert --from golden --to <format>` writes from the version's frozen bytes, with the
    download's topics file and the set's documents as a documents import file: path -> bytes, the paths
    relative to the output folder for a zipped download."""
    spec = VERSION_FILES[fmt]
    assert spec.writes is not None
    source = tmp_path / "v.json"
    source.write_bytes(GoldenVersion.objects.get().content_bytes)
    documents = tmp_path / "documents.jsonl"
    documents.write_text("".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in DOCUMENTS))
    folder = tmp_path / "out"
    output = folder / (spec.output if spec.output is not None else "file")
    argv = ["convert", "--from", "golden", "--to", spec.writes, str(source), str(output)]
    if spec.topics is not None:
        argv += ["--topics", str(folder / spec.topics)]
    if spec.corpus:
        argv += ["--documents", str(documents)]
    assert main(argv) == 0
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _unzipped(body: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


WRITTEN = sorted(fmt for fmt, spec in VERSION_FILES.items() if spec.writes is not None)


@pytest.mark.parametrize("fmt", WRITTEN)
def test_each_format_downloads_as_assay_convert_writes_it(
    fmt: str, version: GoldenVersion, rita: User, client: Client, tmp_path: Path
) -> None:
    client.force_login(rita)
    spec = VERSION_FILES[fmt]

    body, content_type, disposition = _download(client, fmt)

    assert content_type == spec.content_type
    assert disposition == f'attachment; filename="help-center@2026-08-01{spec.suffix}"'
    written = _converted(fmt, tmp_path)
    if spec.output is None:
        assert written == {"file": body}
    else:
        assert _unzipped(body) == {f"help-center@2026-08-01/{name}": data for name, data in written.items()}
        assert _download(client, fmt)[0] == body  # the same files, the same zip bytes


def test_the_zips_hold_the_qrels_with_its_topics_and_the_beir_folder_with_the_sets_documents(
    version: GoldenVersion, rita: User, client: Client
) -> None:
    client.force_login(rita)
    trec = _unzipped(_download(client, "trec-qrels")[0])
    beir = _unzipped(_download(client, "beir")[0])

    folder = "help-center@2026-08-01/"
    assert trec == {
        folder + "qrels.txt": b"q-1 0 d-1 3\nq-2 0 d-3 2\nq-2 0 d-10 0\nq-10 0 d-2 1\n",
        folder + "topics.tsv": b'q-1\treset password\nq-2\tbilling, "invoices"\nq-10\tapi keys\n',
    }
    assert sorted(beir) == [folder + "corpus.jsonl", folder + "qrels/test.tsv", folder + "queries.jsonl"]
    corpus = [json.loads(line) for line in beir[folder + "corpus.jsonl"].decode().splitlines()]
    assert [(d["_id"], d["title"], d["text"]) for d in corpus] == [
        ("d-1", "Reset your password", "Open settings."),
        ("d-2", "API keys", "Create a key."),
        ("d-3", "Invoices – Rechnungen", "Where invoices are"),  # no body: the snippet
        ("d-10", "Billing", "Plans and prices."),
        ("d-99", "Unjudged", "Not in the qrels."),
    ]


def _labels(g: GoldenFile, *, by_text: bool) -> set[tuple[str, str, int]]:
    return {(q.text if by_text else q.id, j.doc_id, j.grade) for q in g.queries for j in q.judgments}


@pytest.mark.parametrize("fmt", [fmt for fmt in WRITTEN if fmt != "ltr"])
def test_each_format_reads_back_with_its_reader_to_the_versions_labels(
    fmt: str, version: GoldenVersion, rita: User, client: Client
) -> None:
    client.force_login(rita)
    spec = VERSION_FILES[fmt]
    assert spec.writes is not None
    body = _download(client, fmt)[0]
    read = FORMATS[spec.writes].read
    assert read is not None
    name = Path(f"help-center@2026-08-01{spec.suffix}")
    if fmt == "trec-qrels":
        files = _unzipped(body)
        options = Options(
            data=files["help-center@2026-08-01/qrels.txt"],
            topics=Path("topics.tsv"),
            topics_data=files["help-center@2026-08-01/topics.tsv"],
        )
    else:
        options = Options(data=body)  # beir: the zip itself, as the import page takes it

    back = read(name, options).golden

    texts = spec.topics is not None or FORMATS[spec.writes].by_text or spec.writes == "beir"
    assert _labels(back, by_text=texts) == _labels(golden(), by_text=texts)
    if not FORMATS[spec.writes].by_text:
        assert _labels(back, by_text=False) == _labels(golden(), by_text=False)  # ids kept too


def test_ltr_export_only_holds_every_label_numbered_in_the_versions_order(
    version: GoldenVersion, rita: User, client: Client
) -> None:
    client.force_login(rita)
    lines = _download(client, "ltr")[0].decode().splitlines()

    rows = [line.split(" ", 4) for line in lines]  # rating qid:N # docid text
    texts = {f"qid:{n}": q.text for n, q in enumerate(golden().queries, start=1)}
    assert {(texts[qid], doc, int(rating)) for rating, qid, _, doc, _text in rows} == _labels(
        golden(), by_text=True
    )


def test_the_version_page_offers_every_file_named_as_its_tool_names_it(
    version: GoldenVersion, rita: User, client: Client
) -> None:
    client.force_login(rita)
    page = client.get(
        reverse("golden_io:version_detail", args=["help-center", "2026-08-01"])
    ).content.decode()

    downloads = page[page.index('id="downloads"') : page.index("</p>", page.index('id="downloads"'))]
    for fmt, spec in VERSION_FILES.items():
        url = reverse("golden_io:download", args=["help-center", "2026-08-01", fmt])
        assert f'<a href="{url}" download>{spec.label}</a>' in downloads
    for label in (
        "Quepid ratings CSV",
        "OpenSearch SRW judgments (JSON)",
        "OpenSearch SRW judgments (CSV)",
        "RRE ratings (JSON)",
        "TREC qrels + topics (zip)",
        "BEIR dataset with corpus (zip)",
        "LTR judgment list",
    ):
        assert f"download>{label}</a>" in downloads
    assert "docs/cli.md, “assay convert”" in page


def test_raters_outsiders_and_another_sets_reviewer_get_404_for_every_file(
    version: GoldenVersion, alice: User, charlie: User, client: Client
) -> None:
    other = factories.UserFactory.create(username="otto", groups=["reviewers"])
    factories.GoldenSetFactory.create(slug="other-set", reviewers=[other])
    admin = User.objects.create_superuser("root", "root@example.org", "pw-long-enough-123")
    for user, status in ((alice, 404), (charlie, 404), (other, 404), (admin, 200)):
        client.force_login(user)
        for fmt in VERSION_FILES:
            url = reverse("golden_io:download", args=["help-center", "2026-08-01", fmt])
            assert client.get(url).status_code == status, (user.username, fmt)
