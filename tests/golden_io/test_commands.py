"""manage.py golden_freeze / golden_diff / golden_export (and the diff page beside its command)."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from assay.git_export import Author, git_write
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from golden_io import services
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.golden_sets import (
    Built,
    ConsolidatedStub,
    build_set,
    version_store,
)

pytestmark = pytest.mark.django_db

SPEC = {
    "q-1": {"text": "refund policy", "labels": {"d-1": 3, "d-2": 0}},
    "q-2": {"text": "reset password", "tier": "shadow", "labels": {"d-2": 1}},
}


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def built(golden_set: GoldenSet, consolidated: ConsolidatedStub) -> Built:
    return build_set(golden_set, SPEC)


def test_golden_freeze_names_by_date_and_reports_counts(
    built: Built, rita: User, consolidated: ConsolidatedStub
) -> None:
    out = run("golden_freeze", "help-center", "--date", "2026-08-01", "--by", "rita", "--notes", "cut")

    version = GoldenVersion.objects.get()
    assert (version.name, version.created_by, version.notes) == ("2026-08-01", rita, "cut")
    assert out.startswith(
        "froze help-center@2026-08-01: 2 queries (core 1, shadow 1, challenge 0), 3 judgments, sha256 "
        + version.sha256
    )
    consolidated.grade(built.queries["q-1"], built.docs["d-2"], 1)  # something to freeze again
    again = run("golden_freeze", "help-center", "--date", "2026-08-01")
    assert "froze help-center@2026-08-01.2" in again and "parent 2026-08-01" in again


def test_golden_freeze_refuses_a_freeze_identical_to_the_last_and_exits_non_zero(built: Built) -> None:
    run("golden_freeze", "help-center", "--date", "2026-08-01")

    with pytest.raises(
        CommandError, match=r"freeze refused:\n  nothing changed since version 2026-08-01: not"
    ):
        run("golden_freeze", "help-center", "--date", "2026-08-01", "--notes", "only the notes differ")
    assert list(GoldenVersion.objects.values_list("name", flat=True)) == ["2026-08-01"]


def test_golden_freeze_lists_what_blocks_it(built: Built, consolidated: ConsolidatedStub) -> None:
    consolidated.unresolve(built.queries["q-1"], built.docs["d-1"], "awaiting third rater")

    with pytest.raises(CommandError, match=r"(?s)freeze refused:.*q-1 / d-1 \(core\): awaiting third rater"):
        run("golden_freeze", "help-center")
    assert not GoldenVersion.objects.exists()

    out = run("golden_freeze", "help-center", "--quarantine-unresolved", "--name", "v1")
    assert "Moved to shadow before freezing" in out and "- q-1: d-1 (awaiting third rater)" in out


def test_golden_freeze_refuses_bad_arguments(built: Built) -> None:
    with pytest.raises(CommandError, match="--date: '1st of August' is not a date"):
        run("golden_freeze", "help-center", "--date", "1st of August")
    with pytest.raises(CommandError, match="--by: no user 'nobody'"):
        run("golden_freeze", "help-center", "--by", "nobody")
    with pytest.raises(CommandError, match="no golden set 'nope'"):
        run("golden_freeze", "nope")


def test_golden_diff_prints_changes_like_a_test_run(
    built: Built, rita: User, consolidated: ConsolidatedStub
) -> None:
    services.golden_version_freeze(golden_set=built.golden_set, by=rita, name="v1")
    consolidated.grade(built.queries["q-1"], built.docs["d-2"], 2)
    built.queries["q-2"].status = "retired"
    built.queries["q-2"].save()
    services.golden_version_freeze(golden_set=built.golden_set, by=rita, name="v2")

    out = run("golden_diff", "help-center@v1", "help-center@v2")

    assert out.splitlines() == [
        "Golden v1 -> v2 (2 queries -> 1): 0 queries added, 1 retired; "
        "judgments changed in 1 query: 1 regraded (1 up, 0 down), 0 added, 0 removed.",
        "- query q-2 (shadow, 1 judgments): reset password",
        "~ grade q-1 d-2: 0 -> 2",
    ]
    data = json.loads(run("golden_diff", "v1", "v2", "--set", "help-center", "--format", "json"))
    assert data["counts"]["judgments_regraded"] == 1 and data["counts"]["queries_retired"] == 1
    assert run("golden_diff", "v1", "v2", "--format", "markdown").startswith("## Golden v1 -> v2")


def test_golden_diff_against_the_working_labels_and_exit_code(
    built: Built, rita: User, consolidated: ConsolidatedStub
) -> None:
    services.golden_version_freeze(golden_set=built.golden_set, by=rita, name="v1")

    assert "no changes" in run("golden_diff", "help-center@v1", "working", "--exit-code")

    consolidated.grade(built.queries["q-2"], built.docs["d-1"], 3)
    out = io.StringIO()
    with pytest.raises(SystemExit) as caught:
        call_command("golden_diff", "help-center@v1", "working", "--exit-code", stdout=out)
    assert caught.value.code == 1
    assert "+ grade q-2 d-1: 3" in out.getvalue()


def test_golden_diff_names_a_missing_version(built: Built, rita: User) -> None:
    services.golden_version_freeze(golden_set=built.golden_set, by=rita, name="v1")

    with pytest.raises(CommandError, match="golden set help-center has no version 'v9' \\(latest: v1\\)"):
        run("golden_diff", "help-center@v1", "help-center@v9")


def test_golden_export_exports_then_is_a_no_op_and_reports_a_conflict(
    built: Built, rita: User, tmp_path: Path
) -> None:
    repo = tmp_path / "golden"
    services.golden_version_freeze(golden_set=built.golden_set, by=rita, name="v1")
    built.queries["q-1"].tags = ["refunds"]
    built.queries["q-1"].save()  # a changed query: v2 differs from v1
    services.golden_version_freeze(golden_set=built.golden_set, by=rita, name="v2")
    services.git_export_configure(
        golden_set=built.golden_set, repository_path=str(repo), file_path="help.json"
    )

    first = run("golden_export", "help-center@v1", "--by", "rita")
    assert first.startswith("Exported: committed ") and "tagged golden@v1" in first
    assert run("golden_export", "help-center@v1").startswith("Unchanged:")

    git_write(
        repository_path=repo,
        branch="main",
        files={"help.json": b"{}"},
        message="x",
        author=Author("x", "x@y"),
        tag="golden@v2",
    )
    with pytest.raises(CommandError, match="Refused: tag golden@v2 already exists"):
        run("golden_export", "help-center@v2")


def _every_kind_of_change(golden_set: GoldenSet) -> None:
    """v1 -> v2 with one or more of each kind: file (rubric, k), added, retired, tier move, metadata,
    judgments added / removed / regraded up and down."""
    v1 = GoldenFile(
        version="v1",
        rubric="help-center@1",
        queries=(
            GoldenQuery(
                "q-1", "refund", (Judgment("d-1", 3), Judgment("d-2", 0), Judgment("d-3", 1)), stratum="a"
            ),
            GoldenQuery("q-2", "invoice", (Judgment("d-1", 2),)),
            GoldenQuery("q-3", "old one", (Judgment("d-4", 1),), tier="shadow"),
        ),
    )
    v2 = replace(
        v1,
        version="v2",
        rubric="help-center@2",
        k=20,
        queries=(
            GoldenQuery(
                "q-1", "refund", (Judgment("d-1", 2), Judgment("d-2", 2), Judgment("d-5", 1)), stratum="b"
            ),
            GoldenQuery("q-2", "invoice", (Judgment("d-1", 2),), tier="shadow"),
            GoldenQuery("q-4", "new one", (Judgment("d-6", 3), Judgment("d-7", 0)), tier="challenge"),
        ),
    )
    version_store(golden_set, v1)
    version_store(golden_set, v2)


def test_golden_diff_lists_every_kind_of_change_with_its_count(golden_set: GoldenSet) -> None:
    _every_kind_of_change(golden_set)

    out = run("golden_diff", "help-center@v1", "help-center@v2")

    assert out.splitlines() == [
        "Golden v1 -> v2 (3 queries): 1 query added, 1 retired; judgments changed in 1 query: "
        "2 regraded (1 up, 1 down), 1 added, 1 removed; 1 tier move (core -> shadow: 1); "
        "1 metadata change in 1 query (stratum); file: k 10 -> 20, rubric help-center@1 -> help-center@2.",
        "~ file k: 10 -> 20",
        "~ file rubric: help-center@1 -> help-center@2",
        "+ query q-4 (challenge, 2 judgments): new one",
        "- query q-3 (shadow, 1 judgments): old one",
        "~ tier q-2: core -> shadow",
        "~ query q-1 stratum: a -> b",
        "~ grade q-1 d-1: 3 -> 2",
        "~ grade q-1 d-2: 0 -> 2",
        "+ grade q-1 d-5: 1",
        "- grade q-1 d-3: 1",
    ]
    counts = json.loads(run("golden_diff", "help-center@v1", "help-center@v2", "--format", "json"))["counts"]
    assert {name: counts[name] for name in counts if counts[name]} == {
        "file_changes": 2,
        "queries_added": 1,
        "queries_retired": 1,
        "tier_moves": 1,
        "query_changes": 1,
        "judgments_added": 1,
        "judgments_removed": 1,
        "judgments_regraded": 2,
        "old_queries": 3,
        "new_queries": 3,
        "queries_changed": 1,
        "queries_relabeled": 1,
        "regraded_up": 1,
        "regraded_down": 1,
    }


def test_the_diff_page_lists_every_kind_of_change_with_its_count(
    golden_set: GoldenSet, rita: User, client: Client
) -> None:
    _every_kind_of_change(golden_set)
    client.force_login(rita)

    page = client.get(reverse("golden_io:diff", args=["help-center"]) + "?old=v1&new=v2").content.decode()

    text = " ".join(page.split())
    for heading in (
        "Rubric and methodology (2)",
        "Queries added (1)",
        "Queries retired (1)",
        "Tier moves (1)",
        "Regraded (2)",
        "Judgments added (1)",
        "Judgments removed (1)",
        "Query metadata (1)",
    ):
        assert f"<h3>{heading}</h3>" in text, heading
    assert '<th>Regraded</th><td class="num">2 (1 up, 1 down)</td>' in text
    assert "<td>k</td><td>10</td><td>20</td>" in text
    assert "<td>rubric</td><td>help-center@1</td><td>help-center@2</td>" in text
    assert (
        '<tr class="added"><td>+ q-4</td><td>new one</td><td>challenge</td><td class="num">2</td></tr>'
        in text
    )
    assert '<tr class="removed"><td>− q-3</td><td>old one</td><td>shadow</td>' in text
    assert "<td>q-2</td><td>core</td><td>shadow</td>" in text
    assert "<td>q-1</td><td>d-1</td><td>3 → 2</td>" in text
    assert "<td>q-1</td><td>+ d-5</td><td>1</td>" in text and "<td>q-1</td><td>− d-3</td><td>1</td>" in text
    assert "<td>q-1</td><td>stratum</td><td>a</td><td>b</td>" in text
