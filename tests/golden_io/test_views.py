"""Golden version pages: who sees them, what they show, and the forms behind them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from assay.golden.format import dump_jsonl, parse_json
from assay.golden.trec import write_qrels
from golden_io import services
from golden_io.models import GitExport, GitExportConfig, GoldenVersion
from golden_io.selectors import VERSION_FILES
from labeling.models import Assignment, Document, GoldenSet
from tests import factories
from tests.support.forms import error_summary
from tests.support.golden_sets import (
    Built,
    ConsolidatedStub,
    build_set,
)

pytestmark = pytest.mark.django_db

SPEC = {
    "q-1": {"text": "refund policy", "labels": {"d-1": 3, "d-2": 0}},
    "q-2": {"text": "reset password", "tier": "shadow", "labels": {"d-2": 1, "d-3": 2}},
}


@pytest.fixture
def built(golden_set: GoldenSet, consolidated: ConsolidatedStub) -> Built:
    return build_set(golden_set, SPEC)


@pytest.fixture
def v1(built: Built, rita: User) -> GoldenVersion:
    return services.golden_version_freeze(golden_set=built.golden_set, by=rita, name="2026-08-01")


def _as(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def _urls(version: GoldenVersion) -> list[str]:
    """Every GET page of one set and version (each download format included)."""
    slug, name = version.golden_set.slug, version.name
    return [
        reverse("golden_io:version_list", args=[slug]),
        reverse("golden_io:version_detail", args=[slug, name]),
        *(reverse("golden_io:download", args=[slug, name, fmt]) for fmt in VERSION_FILES),
        reverse("golden_io:diff", args=[slug]) + "?new=working",
        reverse("golden_io:diff", args=[slug]) + f"?old={name}&new={name}",
        reverse("golden_io:freeze", args=[slug]),
        reverse("golden_io:export_config", args=[slug]),
    ]


def _posts(version: GoldenVersion, repo: Path) -> list[tuple[str, dict[str, object]]]:
    """Every POST of one set and version, each with data that would write something if it were let in."""
    slug, name = version.golden_set.slug, version.name
    return [
        (reverse("golden_io:freeze", args=[slug]), {"name": "posted", "quarantine_unresolved": "on"}),
        (reverse("golden_io:export", args=[slug, name]), {}),
        (reverse("golden_io:requeue", args=[slug, name]), {"doc_id": ["d-1"]}),
        (
            reverse("golden_io:export_config", args=[slug]),
            {"repository_path": str(repo), "branch": "main", "file_path": "x.json", "file_format": "json"},
        ),
    ]


def _written() -> tuple[int, int, int, int]:
    return (
        GoldenVersion.objects.count(),
        GitExport.objects.count(),
        GitExportConfig.objects.count(),
        Assignment.objects.count(),
    )


def test_raters_outsiders_and_reviewers_of_another_set_get_404_and_write_nothing(
    v1: GoldenVersion,
    built: Built,
    client: Client,
    alice: User,
    charlie: User,
    tmp_path: Path,
    consolidated: ConsolidatedStub,
) -> None:
    other_reviewer = factories.UserFactory.create(username="otto", groups=["reviewers"])
    factories.GoldenSetFactory.create(slug="other-set", reviewers=[other_reviewer])
    stale = built.docs["d-1"]
    stale.title = "changed since the freeze"  # so a requeue let in would queue an assignment
    stale.save()
    consolidated.grade(built.queries["q-1"], built.docs["d-2"], 2)  # so a freeze let in would cut one
    before = _written()
    for user in (alice, charlie, other_reviewer):  # alice rates this very set
        _as(client, user)
        for url in _urls(v1):
            assert client.get(url).status_code == 404, (user.username, url)
        for url, data in _posts(v1, tmp_path / "repo"):
            assert client.post(url, data).status_code == 404, (user.username, url)
    assert _written() == before
    assert not (tmp_path / "repo").exists()
    # The set list answers the other set's reviewer with their own set only; raters and outsiders get 404.
    _as(client, other_reviewer)
    page = client.get(reverse("golden_io:set_list")).content.decode()
    assert reverse("golden_io:version_list", args=["other-set"]) in page
    assert reverse("golden_io:version_list", args=["help-center"]) not in page
    for user in (alice, charlie):
        assert _as(client, user).get(reverse("golden_io:set_list")).status_code == 404


def test_the_sets_reviewer_and_admins_see_every_page_and_may_post(
    v1: GoldenVersion,
    built: Built,
    client: Client,
    rita: User,
    tmp_path: Path,
    consolidated: ConsolidatedStub,
) -> None:
    admin = User.objects.create_superuser("root", "root@example.org", "pw-long-enough-123")
    stale = built.docs["d-1"]
    stale.title = "changed since the freeze"
    stale.save()
    consolidated.grade(built.queries["q-1"], built.docs["d-2"], 2)  # something for the posted freeze
    for user in (rita, admin):
        _as(client, user)
        for url in _urls(v1):
            assert client.get(url).status_code == 200, (user.username, url)
        assert client.get(reverse("golden_io:set_list")).status_code == 200
    _as(client, rita)
    for url, data in _posts(v1, tmp_path / "repo"):
        assert client.post(url, data).status_code == 302, url
    # Config was saved after the export was tried: the export failed (recorded), the rest wrote.
    assert GoldenVersion.objects.filter(name="posted").exists()
    assert GitExport.objects.get().status == "failed"
    assert GitExportConfig.objects.get().repository_path == str(tmp_path / "repo")
    assert Assignment.objects.filter(scope__document=stale).exists()


def test_anonymous_users_are_sent_to_log_in(v1: GoldenVersion, client: Client) -> None:
    response = client.get(_urls(v1)[1])

    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_version_list_shows_versions_with_counts_and_diff_links(
    v1: GoldenVersion, built: Built, rita: User, client: Client, consolidated: ConsolidatedStub
) -> None:
    consolidated.grade(built.queries["q-1"], built.docs["d-2"], 2)
    services.golden_version_freeze(golden_set=built.golden_set, by=rita, name="2026-08-02")

    page = _as(client, rita).get(reverse("golden_io:version_list", args=["help-center"])).content.decode()

    assert page.index("2026-08-02") < page.index('">2026-08-01</a>')  # newest first
    assert "?old=2026-08-01&amp;new=2026-08-02" in page
    assert "not configured" in page


def test_the_version_page_shows_counts_keys_stale_documents_and_downloads(
    v1: GoldenVersion, built: Built, rita: User, client: Client
) -> None:
    # After the freeze: d-3 lost its document (key resolves to nothing), d-1 changed its content.
    Document.objects.filter(pk=built.docs["d-3"].pk).delete()
    doc = built.docs["d-1"]
    doc.body = "new text"
    doc.save()

    response = _as(client, rita).get(reverse("golden_io:version_detail", args=["help-center", "2026-08-01"]))

    page = response.content.decode()
    assert response.status_code == 200
    assert "help-center@2026-08-01" in page and v1.sha256 in page
    assert 'id="unresolved-keys"' in page and "https://help.example.com/d-3" in page
    assert "1 judgment has a durable key that matches no live document" in page
    assert 'id="stale"' in page and 'value="d-1"' in page
    for fmt in ("json", "jsonl", "qrels"):
        assert reverse("golden_io:download", args=["help-center", "2026-08-01", fmt]) in page
    assert "No git export configured" in page


def test_downloads_serve_the_stored_bytes_jsonl_and_qrels(
    v1: GoldenVersion, rita: User, client: Client
) -> None:
    _as(client, rita)

    def get(fmt: str) -> tuple[bytes, str, str]:
        r = client.get(reverse("golden_io:download", args=["help-center", "2026-08-01", fmt]))
        assert r.status_code == 200
        return r.content, r["Content-Type"], r["Content-Disposition"]

    body, kind, disposition = get("json")
    assert body == v1.content_bytes and kind == "application/json"
    assert disposition == 'attachment; filename="help-center@2026-08-01.json"'
    assert get("jsonl")[0] == dump_jsonl(v1.golden())
    qrels = get("qrels")[0].decode()
    assert qrels == write_qrels(v1.golden())
    assert "q-1 0 d-1 3\n" in qrels
    assert (
        client.get(reverse("golden_io:download", args=["help-center", "2026-08-01", "xml"])).status_code
        == 404
    )


def test_the_diff_page_shows_regrades_tier_moves_and_the_working_labels(
    v1: GoldenVersion, built: Built, rita: User, client: Client, consolidated: ConsolidatedStub
) -> None:
    consolidated.grade(built.queries["q-1"], built.docs["d-2"], 2)
    _as(client, rita)

    working = client.get(reverse("golden_io:diff", args=["help-center"]) + "?new=working").content.decode()
    assert "judgments changed in 1 query: 1 regraded (1 up, 0 down)" in working
    assert "<td>d-2</td><td>0 → 2</td>" in working

    built.queries["q-2"].tier = "core"
    built.queries["q-2"].save()
    services.golden_version_freeze(golden_set=built.golden_set, by=rita, name="2026-08-02")
    url = reverse("golden_io:diff", args=["help-center"]) + "?old=2026-08-01&new=2026-08-02"
    page = client.get(url).content.decode()
    assert "<td>q-2</td><td>shadow</td><td>core</td>" in page
    assert "<td>d-2</td><td>0 → 2</td>" in page
    assert "## Golden 2026-08-01 -&gt; 2026-08-02" in page  # the markdown, escaped in <pre>
    missing = reverse("golden_io:diff", args=["help-center"]) + "?old=nope&new=2026-08-02"
    assert client.get(missing).status_code == 404


def test_freezing_from_the_form_creates_a_version_and_shows_it(
    built: Built, rita: User, client: Client
) -> None:
    response = _as(client, rita).post(
        reverse("golden_io:freeze", args=["help-center"]), {"name": "", "notes": "first cut"}
    )

    version = GoldenVersion.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("golden_io:version_detail", args=["help-center", version.name])
    assert version.created_by == rita and version.notes == "first cut"


def test_a_blocked_freeze_lists_the_unresolved_documents_and_writes_nothing(
    built: Built, rita: User, client: Client, consolidated: ConsolidatedStub
) -> None:
    consolidated.unresolve(built.queries["q-1"], built.docs["d-1"], "spread 3: awaiting a reviewer")
    url = reverse("golden_io:freeze", args=["help-center"])

    response = _as(client, rita).post(url, {"name": "v1"})

    page = response.content.decode()
    assert response.status_code == 422
    assert 'id="blocked"' in page and "spread 3: awaiting a reviewer" in page
    assert not GoldenVersion.objects.exists()

    response = client.post(url, {"name": "v1", "quarantine_unresolved": "on"})
    assert response.status_code == 302
    assert GoldenVersion.objects.get().golden().query("q-1").tier == "shadow"


def test_a_freeze_identical_to_the_last_version_is_refused_on_the_form(
    v1: GoldenVersion, rita: User, client: Client
) -> None:
    response = _as(client, rita).post(reverse("golden_io:freeze", args=["help-center"]), {"name": "again"})

    page = response.content.decode()
    assert response.status_code == 422
    summary = error_summary(response)
    assert summary.id == "problems" and summary.heading == "Not frozen: 1 problem to fix"
    assert summary.texts == ["nothing changed since version 2026-08-01: not frozen"]
    assert "nothing changed since version" in page
    assert list(GoldenVersion.objects.all()) == [v1]


def test_a_bad_name_is_shown_on_the_form(built: Built, rita: User, client: Client) -> None:
    response = _as(client, rita).post(reverse("golden_io:freeze", args=["help-center"]), {"name": "a b"})

    assert response.status_code == 422
    assert "must be 1-100 characters of letters" in response.content.decode()


def test_exporting_from_the_page_records_and_shows_the_status(
    v1: GoldenVersion, rita: User, client: Client, tmp_path: Path
) -> None:
    repo = tmp_path / "golden"
    _as(client, rita)
    config_url = reverse("golden_io:export_config", args=["help-center"])
    saved = client.post(
        config_url,
        {
            "repository_path": str(repo),
            "branch": "main",
            "file_path": "golden/help.json",
            "file_format": "json",
        },
    )
    assert saved.status_code == 302
    detail = reverse("golden_io:version_detail", args=["help-center", "2026-08-01"])

    response = client.post(reverse("golden_io:export", args=["help-center", "2026-08-01"]), follow=True)

    row = GitExport.objects.get()
    assert response.redirect_chain == [(detail, 302)]
    page = response.content.decode()
    assert row.status == "exported" and row.commit[:12] in page and "golden@2026-08-01" in page
    assert "Export to git as golden@2026-08-01" in page
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "main"], capture_output=True, text=True
    ).stdout
    assert head.strip() == row.commit
    assert parse_json(v1.content_bytes).version == "2026-08-01"


def test_the_export_settings_form_refuses_bad_values_by_field(
    built: Built, rita: User, client: Client
) -> None:
    response = _as(client, rita).post(
        reverse("golden_io:export_config", args=["help-center"]),
        {
            "repository_path": "relative",
            "branch": "main",
            "file_path": "../x.json",
            "file_format": "json",
            "password_env": "hunter2 secret",
        },
    )

    page = response.content.decode()
    assert response.status_code == 422
    assert "must be an absolute path" in page
    assert "cannot have empty, &#x27;.&#x27; or &#x27;..&#x27; parts" in page
    assert "never the secret itself" in page
    assert not GitExportConfig.objects.exists()


def test_requeueing_stale_documents_from_the_page(
    v1: GoldenVersion, built: Built, rita: User, alice: User, client: Client
) -> None:
    doc = built.docs["d-3"]
    doc.title = "changed"
    doc.save()

    response = _as(client, rita).post(
        reverse("golden_io:requeue", args=["help-center", "2026-08-01"]), {"doc_id": ["d-3"]}, follow=True
    )

    assert "Queued 1 assignment for re-judging; q-2: d-3 -&gt; alice" in response.content.decode()
    assignment = Assignment.objects.get(query=built.queries["q-2"])
    assert [c.document.doc_id for c in assignment.scope.all()] == ["d-3"]
    bad = client.post(
        reverse("golden_io:requeue", args=["help-center", "2026-08-01"]), {"doc_id": ["d-1"]}, follow=True
    )
    assert "d-1 is not a stale document" in bad.content.decode()


def test_the_set_list_shows_only_the_reviewers_sets(
    built: Built, rita: User, alice: User, client: Client
) -> None:
    factories.GoldenSetFactory.create(slug="not-ritas")

    page = _as(client, rita).get(reverse("golden_io:set_list")).content.decode()

    assert reverse("golden_io:version_list", args=["help-center"]) in page
    assert "not-ritas" not in page
    assert _as(client, alice).get(reverse("golden_io:set_list")).status_code == 404
