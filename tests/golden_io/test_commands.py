"""manage.py golden_freeze / golden_diff / golden_export."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from golden_io import services
from golden_io.git_export import Author, git_write
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.golden_io.test_versions_support import (
    Built,
    ConsolidatedStub,
    build_set,
    consolidated_fixture,  # noqa: F401 - a fixture, requested by its name
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


def test_golden_freeze_names_by_date_and_reports_counts(built: Built, rita: User) -> None:
    out = run("golden_freeze", "help-center", "--date", "2026-08-01", "--by", "rita", "--notes", "cut")

    version = GoldenVersion.objects.get()
    assert (version.name, version.created_by, version.notes) == ("2026-08-01", rita, "cut")
    assert out.startswith(
        "froze help-center@2026-08-01: 2 queries (core 1, shadow 1, challenge 0), 3 judgments, sha256 "
        + version.sha256
    )
    again = run("golden_freeze", "help-center", "--date", "2026-08-01")
    assert "froze help-center@2026-08-01.2" in again and "parent 2026-08-01" in again


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
