"""The golden import's pages: an upload answers with a preview and writes nothing; the confirmation writes
what was shown; the set's imports page lists who imported what, and its latest can be undone after a
preview of the undo; every page is for the set's reviewers and admins only (a 404 for anyone else, a
reviewer of another set included); and `manage.py import_golden` shows first, writes on --yes or an
answer, and undoes with --undo."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from golden_io.models import GoldenImport
from golden_io.services.import_undo import import_undo_plan
from labeling.models import FrozenLabel, GoldenSet, Query
from tests import factories
from tests.support.evaluation import page_text
from tests.support.rich_set import dump, rich_set


@pytest.fixture
def gset() -> GoldenSet:
    return rich_set()


pytestmark = pytest.mark.django_db

CSV = b"query,docid,rating\nrefund guarantee,d1,3\nrefund guarantee,d6,1\ngift cards,d8,2\n"


@pytest.fixture
def reviewer(gset: GoldenSet, rita: User) -> Client:
    gset.reviewers.add(rita)
    client = Client()
    client.force_login(rita)
    return client


def _preview(client: Client, golden_set: GoldenSet, data: bytes = CSV, **fields: str):
    url = reverse("golden_io:golden_import", args=[golden_set.slug])
    form = {"file": SimpleUploadedFile("ratings.csv", data), "format": "quepid-csv", **fields}
    return client.post(url, form)


def _confirm_form(body: str) -> tuple[str, str]:
    found = re.search(r'action="([^"]+/confirm/)">.*?name="digest" value="([0-9a-f]{64})"', body, re.S)
    assert found, body
    return found.group(1), found.group(2)


def test_an_upload_is_previewed_confirmed_listed_and_undone(
    reviewer: Client, gset: GoldenSet, rita: User
) -> None:
    before = dump(gset)
    preview = _preview(reviewer, gset)
    assert preview.status_code == 200
    text = page_text(preview)
    assert "Nothing is written until you confirm." in text
    assert "Merge: only the labels the file names change" in text
    body = preview.content.decode()
    assert '<td class="num" data-count="labels changed">1</td>' in body
    assert '<td class="num" data-count="labels added">2</td>' in body
    assert '<td class="num" data-count="labels removed">0</td>' in body
    assert '<td>q-0002</td><td>d1</td><td class="num">2 → 3' in body
    assert dump(gset) == before  # a preview writes nothing

    action, digest = _confirm_form(body)
    written = reviewer.post(action, {"digest": digest})
    assert written.status_code == 200
    assert 'id="import-ok"' in written.content.decode()
    assert FrozenLabel.objects.get(query__external_id="q-0002", document__doc_id="d1").grade == 3
    record = GoldenImport.objects.get()
    assert (record.status, record.by, record.source, record.format, record.mode) == (
        "applied",
        rita,
        "ratings.csv",
        "quepid-csv",
        "merge",
    )
    assert bytes(record.data) == b""  # the file is dropped once written
    # Confirming twice writes nothing more.
    again = reviewer.post(action, {"digest": digest})
    assert again.status_code == 400

    listed = reviewer.get(reverse("golden_io:import_list", args=[gset.slug]))
    assert "ratings.csv" in page_text(listed) and "rita" in page_text(listed)
    undo_url = reverse("golden_io:import_undo", args=[gset.slug, record.pk])
    assert f'href="{undo_url}"' in listed.content.decode()
    shown = reviewer.get(undo_url)
    assert shown.status_code == 200
    assert "Undo the import of ratings.csv" in page_text(shown)
    assert '<td>q-0002</td><td>d1</td><td class="num">3 → 2' in shown.content.decode()
    undone = reviewer.post(undo_url)
    assert undone.status_code == 200 and 'id="import-ok"' in undone.content.decode()
    assert dump(gset) == before
    assert reviewer.get(undo_url).status_code == 404  # undone already


def test_a_replace_says_before_it_runs_how_many_labels_it_removes(reviewer: Client, gset: GoldenSet) -> None:
    before = dump(gset)
    csv = b"query,docid,rating\nrefund guarantee,d1,3\ncancel plan,d1,3\n"
    text = page_text(_preview(reviewer, gset, csv, mode="replace"))
    assert "exactly the file's; 9 labels the file does not name would be removed" in text
    assert dump(gset) == before


def test_a_file_that_changes_nothing_says_so_and_offers_nothing(reviewer: Client, gset: GoldenSet) -> None:
    csv = b"query,docid,rating\nrefund guarantee,d1,2\n"
    preview = _preview(reviewer, gset, csv)
    assert "The file would change nothing: nothing was written." in page_text(preview)
    assert "/confirm/" not in preview.content.decode()
    assert not GoldenImport.objects.exists()


def test_a_cancelled_preview_writes_nothing_and_drops_the_file(reviewer: Client, gset: GoldenSet) -> None:
    before = dump(gset)
    preview = _preview(reviewer, gset)
    record = GoldenImport.objects.get()
    cancel = reverse("golden_io:golden_import_cancel", args=[gset.slug, record.pk])
    assert f'action="{cancel}"' in preview.content.decode()
    assert reviewer.post(cancel).status_code == 302
    record.refresh_from_db()
    assert (record.status, bytes(record.data)) == ("discarded", b"")
    action, digest = _confirm_form(preview.content.decode())
    assert reviewer.post(action, {"digest": digest}).status_code == 400
    assert dump(gset) == before


def test_a_refused_file_keeps_the_chosen_options(reviewer: Client, gset: GoldenSet) -> None:
    refused = _preview(reviewer, gset, b"query,docid,rating\nx,d1,0.5\n", map="2=3", mode="replace")
    assert refused.status_code == 400
    body = refused.content.decode()
    retry = body.split('id="retry"')[1]
    assert '<option value="quepid-csv" selected>' in retry
    assert 'name="map" value="2=3"' in retry
    assert re.search(r'value="replace"[^>]*checked', retry)
    # Its words name the page's fields, and its place fills the Where column.
    assert (
        "<td><code>ratings.csv: line 2</code></td><td>rating &quot;0.5&quot; is not an integer (Scale" in body
    )
    # The topics help shows the tab's name.
    assert "qid&lt;TAB&gt;text" in body


def test_the_import_pages_are_for_the_sets_reviewers_only(
    reviewer: Client, gset: GoldenSet, alice: User, charlie: User
) -> None:
    _preview(reviewer, gset)
    record = GoldenImport.objects.get()
    action, digest = _confirm_form(_preview(reviewer, gset).content.decode())
    reviewer.post(action, {"digest": digest})
    applied = GoldenImport.objects.get(status="applied")
    other = factories.GoldenSetFactory.create(slug="other")
    stranger = factories.UserFactory.create(username="olga", groups=["reviewers"])
    other.reviewers.add(stranger)
    before = dump(gset)
    for user in (alice, charlie, stranger):
        client = Client()
        client.force_login(user)
        urls = [
            ("post", reverse("golden_io:golden_import", args=[gset.slug])),
            ("post", reverse("golden_io:golden_import_confirm", args=[gset.slug, record.pk])),
            ("post", reverse("golden_io:golden_import_cancel", args=[gset.slug, record.pk])),
            ("get", reverse("golden_io:import_list", args=[gset.slug])),
            ("get", reverse("golden_io:import_undo", args=[gset.slug, applied.pk])),
            ("post", reverse("golden_io:import_undo", args=[gset.slug, applied.pk])),
            # Another set's address for this set's import: not found either.
            ("post", reverse("golden_io:golden_import_confirm", args=[other.slug, record.pk])),
            ("get", reverse("golden_io:import_undo", args=[other.slug, applied.pk])),
        ]
        for method, url in urls:
            response = getattr(client, method)(url)
            assert response.status_code == 404, (user.username, url)
    assert dump(gset) == before


# --------------------------------------------------------------------------------------------- the command


def test_the_command_shows_first_and_writes_only_when_told(gset: GoldenSet, tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    path.write_bytes(CSV)
    before = dump(gset)
    out = StringIO()
    call_command("import_golden", "hc", str(path), "--from", "quepid-csv", "--dry-run", stdout=out)
    assert "label changed: q-0002 / d1: 2 -> 3" in out.getvalue()
    assert "Dry run: nothing was written." in out.getvalue()
    assert dump(gset) == before
    # Not at a terminal and not told --yes: refused in words, nothing written.
    with pytest.raises(CommandError, match="pass --yes to write these changes"):
        call_command("import_golden", "hc", str(path), "--from", "quepid-csv", stdout=StringIO())
    assert dump(gset) == before

    out = StringIO()
    call_command("import_golden", "hc", str(path), "--from", "quepid-csv", "--yes", stdout=out)
    assert "labels changed: 1" in out.getvalue()
    assert "Undo with: python manage.py import_golden hc --undo" in out.getvalue()
    assert dump(gset) != before
    call_command("import_golden", "hc", "--undo", "--yes", stdout=StringIO())
    assert dump(gset) == before
    with pytest.raises(CommandError, match="has no import to undo"):
        call_command("import_golden", "hc", "--undo", "--yes", stdout=StringIO())


def test_the_command_names_its_options_in_its_problems(gset: GoldenSet, tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    path.write_bytes(b"query,docid,rating\nx,d1,0.5\n")
    with pytest.raises(CommandError, match=r"--scale MIN\.\.MAX or --map FROM=TO says how to read it"):
        call_command("import_golden", "hc", str(path), "--from", "quepid-csv", "--yes", stdout=StringIO())


def test_the_undo_page_reads_the_created_queries_work_at_once(reviewer: Client, gset: GoldenSet) -> None:
    """An import that made 30 queries, one of them graded since: the undo page says which stays (retired)
    and which go, in a bounded number of SQL statements (it was one more per query made)."""
    rows = "".join(f"new question {i},d1,2\n" for i in range(30))
    action, digest = _confirm_form(
        _preview(reviewer, gset, f"query,docid,rating\n{rows}".encode()).content.decode()
    )
    assert reviewer.post(action, {"digest": digest}).status_code == 200
    graded = Query.objects.get(golden_set=gset, text="new question 7")
    factories.JudgmentFactory.create(assignment=factories.AssignmentFactory.create(query=graded))
    record = GoldenImport.objects.get()

    with CaptureQueriesContext(connection) as statements:
        shown = reviewer.get(reverse("golden_io:import_undo", args=[gset.slug, record.pk]))

    assert shown.status_code == 200
    plan = import_undo_plan(record=record)
    assert plan.kept == [graded.external_id] and len(plan.changes.queries_removed) == 29
    assert len(statements) <= 15, [q["sql"][:120] for q in statements.captured_queries]
