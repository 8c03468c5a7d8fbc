"""Git export: the dulwich writer, and the version export on top of it, checked with the git CLI.

Remotes are local bare repositories (file URLs), the only kind that can run here.
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from assay import git_export, git_repo
from assay.git_export import Author, TagConflict, git_write
from assay.git_remote import Remote
from assay.git_repo import GitExportError, read_file
from assay.golden.format import dump_jsonl
from golden_io import services
from golden_io.models import GitExport, GitExportConfig, GoldenVersion
from labeling.models import GoldenSet
from tests import factories
from tests.support.golden_sets import (
    ConsolidatedStub,
    build_set,
)
from tests.support.stub_server import StubServer
from tests.support.threads import race

RITA = Author("Rita Reviewer", "rita@example.org")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def push_v1(local: Path, url: str, content: bytes = b"1") -> git_export.WriteResult:
    """Write g.json on main, tag golden@v1 and push to `url` (the push tests' one export)."""
    return git_write(
        repository_path=local,
        branch="main",
        files={"g.json": content},
        message="m",
        author=RITA,
        tag="golden@v1",
        remote=Remote(url),
    )


# ------------------------------------------------------------------------------------------ the writer


def test_it_commits_and_tags_in_a_new_bare_repository(tmp_path: Path) -> None:
    repo = tmp_path / "golden.git"

    result = git_write(
        repository_path=repo,
        branch="main",
        files={"golden/help.json": b'{"v": 1}\n'},
        message="golden help-center@v1\n\nbody line",
        author=RITA,
        tag="golden@v1",
    )

    assert result.created and result.tag_created and not result.pushed
    assert git(repo, "rev-parse", "main") == result.commit
    assert git(repo, "show", "main:golden/help.json") == '{"v": 1}'
    assert (
        git(repo, "log", "-1", "--format=%an <%ae>|%s|%b", "main")
        == "Rita Reviewer <rita@example.org>|golden help-center@v1|body line"
    )
    assert git(repo, "cat-file", "-t", "golden@v1") == "tag"  # annotated, not lightweight
    assert git(repo, "rev-parse", "golden@v1^{commit}") == result.commit
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/main"
    git(repo, "fsck", "--strict")


def test_rewriting_identical_content_under_the_same_tag_is_a_no_op(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    first = git_write(
        repository_path=repo, branch="main", files={"a.json": b"1"}, message="m", author=RITA, tag="t1"
    )

    again = git_write(
        repository_path=repo, branch="main", files={"a.json": b"1"}, message="m2", author=RITA, tag="t1"
    )

    assert (again.commit, again.created, again.tag_created) == (first.commit, False, False)
    assert git(repo, "rev-list", "--count", "main") == "1"


def test_a_tag_holding_other_content_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    git_write(repository_path=repo, branch="main", files={"a.json": b"1"}, message="m", author=RITA, tag="t1")
    head = git(repo, "rev-parse", "main")

    with pytest.raises(
        TagConflict, match=r"tag t1 already exists .* a\.json differs .* Tags are never moved"
    ):
        git_write(
            repository_path=repo, branch="main", files={"a.json": b"2"}, message="m", author=RITA, tag="t1"
        )

    assert git(repo, "rev-parse", "main") == head
    assert read_file(repo, "t1", "a.json") == b"1"


def test_it_writes_several_files_on_a_new_branch_started_from_a_tag(tmp_path: Path) -> None:
    # The rebaseline workflow's use: its own branch from the version's tag, two files, no tag; main untouched.
    repo = tmp_path / "r"
    tagged = git_write(
        repository_path=repo,
        branch="main",
        files={"golden/help.json": b"{}"},
        message="m",
        author=RITA,
        tag="golden@v1",
    )
    git_write(
        repository_path=repo, branch="main", files={"golden/help.json": b"{ }"}, message="m2", author=RITA
    )
    main = git(repo, "rev-parse", "main")

    result = git_write(
        repository_path=repo,
        branch="rebaseline/golden@v1",
        files={
            "baseline/relevance.json": b'{"ndcg": 0.5}',
            "RELEVANCE_NOTES.md": b"| metric | before | after |\n",
        },
        message="Rebaseline",
        author=RITA,
        start_from=["refs/tags/golden@v0", "refs/tags/golden@v1", "refs/heads/main"],
    )

    assert result.tag is None and result.created
    assert git(repo, "rev-parse", "main") == main
    assert git(repo, "rev-parse", "rebaseline/golden@v1^") == tagged.commit
    assert sorted(git(repo, "ls-tree", "-r", "--name-only", "rebaseline/golden@v1").split()) == [
        "RELEVANCE_NOTES.md",
        "baseline/relevance.json",
        "golden/help.json",
    ]
    assert read_file(repo, "rebaseline/golden@v1", "golden/help.json") == b"{}"


def test_a_new_branch_whose_start_already_holds_the_files_points_at_it(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    first = git_write(repository_path=repo, branch="main", files={"a": b"1"}, message="m", author=RITA)

    result = git_write(
        repository_path=repo,
        branch="copy",
        files={"a": b"1"},
        message="m",
        author=RITA,
        start_from=["refs/heads/main"],
    )

    assert result.commit == first.commit == git(repo, "rev-parse", "copy")


def test_a_branch_that_already_holds_the_files_gets_no_new_commit(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    first = git_write(
        repository_path=repo, branch="main", files={"a": b"1", "b/c": b"2"}, message="m", author=RITA
    )

    second = git_write(
        repository_path=repo, branch="main", files={"b/c": b"2"}, message="m", author=RITA, tag="t2"
    )

    assert second.commit == first.commit and second.tag_created
    assert git(repo, "rev-list", "--count", "main") == "1"
    assert git(repo, "rev-parse", "t2^{commit}") == first.commit


def test_concurrent_writers_on_one_branch_lose_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    git_write(repository_path=repo, branch="main", files={"seed": b"0"}, message="seed", author=RITA)
    n = 6

    def write(i: int) -> None:
        git_write(
            repository_path=repo,
            branch="main",
            files={f"f{i}": str(i).encode()},
            message=f"w{i}",
            author=RITA,
            tag=f"t{i}",
        )

    errors = [found for found in race([functools.partial(write, i) for i in range(n)]) if found is not None]

    assert errors == []
    assert sorted(git(repo, "ls-tree", "--name-only", "main").split()) == [
        *(f"f{i}" for i in range(n)),
        "seed",
    ]
    assert git(repo, "rev-list", "--count", "main") == str(n + 1)
    for i in range(n):  # each tag is on the commit that added its file
        assert git(repo, "show", f"t{i}:f{i}") == str(i)
    git(repo, "fsck", "--strict")


def test_in_a_working_repository_it_updates_the_checked_out_files_and_refuses_local_edits(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git(
        repo,
        "-c",
        "user.name=x",
        "-c",
        "user.email=x@example.org",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "init",
    )

    git_write(repository_path=repo, branch="main", files={"golden/h.json": b"1\n"}, message="m", author=RITA)
    assert (repo / "golden" / "h.json").read_bytes() == b"1\n"
    assert git(repo, "status", "--porcelain") == ""

    (repo / "golden" / "h.json").write_bytes(b"hand edit\n")
    head = git(repo, "rev-parse", "main")
    with pytest.raises(GitExportError, match=r"uncommitted changes in golden/h.json"):
        git_write(
            repository_path=repo, branch="main", files={"golden/h.json": b"2\n"}, message="m", author=RITA
        )
    assert git(repo, "rev-parse", "main") == head
    assert (repo / "golden" / "h.json").read_bytes() == b"hand edit\n"


def test_it_pushes_to_a_bare_remote(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")

    result = push_v1(tmp_path / "local", remote.as_uri())

    assert result.pushed and result.push_error is None
    assert git(remote, "rev-parse", "main") == result.commit
    assert git(remote, "rev-parse", "golden@v1^{commit}") == result.commit
    assert git(remote, "cat-file", "-t", "golden@v1") == "tag"


def test_a_failed_push_keeps_the_local_commit_and_says_what_to_do(tmp_path: Path) -> None:
    local = tmp_path / "local"
    missing = tmp_path / "nowhere.git"

    result = push_v1(local, str(missing))

    assert result.created and not result.pushed
    assert result.push_error is not None
    assert f"push to {missing} failed" in result.push_error
    assert "export again" in result.push_error and str(local) in result.push_error
    assert git(local, "rev-parse", "golden@v1^{commit}") == result.commit

    bare(missing)  # the remote is fixed: exporting again writes nothing and pushes
    retry = push_v1(local, str(missing))
    assert (retry.created, retry.pushed, retry.commit) == (False, True, result.commit)
    assert git(missing, "rev-parse", "golden@v1^{commit}") == result.commit


def test_a_remote_that_rejects_the_push_is_reported(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    other = tmp_path / "other"
    git_write(
        repository_path=other,
        branch="main",
        files={"x": b"theirs"},
        message="theirs",
        author=RITA,
        remote=Remote(str(remote)),
    )

    result = push_v1(tmp_path / "local", str(remote))

    assert not result.pushed and result.push_error is not None
    theirs = git(remote, "rev-parse", "main")
    assert (
        f"the remote's main holds commits this repository lacks (it is at {theirs[:12]}" in result.push_error
    )
    assert "Assay never force-pushes" in result.push_error
    # Exporting again alone would fail again: the message says to merge first (or use another branch).
    assert f"merge the remote's main into main in {tmp_path / 'local'} first" in result.push_error
    assert git(remote, "log", "-1", "--format=%s", "main") == "theirs"  # the remote's history is untouched

    # Doing what it says works: merge in a clone, push the merge back, export again (writes nothing, pushes).
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(tmp_path / "local"), str(clone)], check=True)
    git(
        clone,
        "-c",
        "user.name=x",
        "-c",
        "user.email=x@example.org",
        "pull",
        "-q",
        "--no-rebase",
        "--allow-unrelated-histories",
        "--no-edit",
        str(remote),
        "main",
    )
    git(clone, "push", "-q", "origin", "main")
    retry = push_v1(tmp_path / "local", str(remote))
    assert (retry.created, retry.pushed, retry.push_error) == (False, True, None)
    assert git(remote, "rev-parse", "golden@v1^{commit}") == result.commit
    assert git(remote, "merge-base", "--is-ancestor", theirs, "main") == ""


def test_a_remote_tag_with_other_content_is_reported_not_forced(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    git_write(  # someone else's golden@v1, on a branch of its own
        repository_path=tmp_path / "other",
        branch="elsewhere",
        files={"g.json": b"theirs"},
        message="theirs",
        author=RITA,
        tag="golden@v1",
        remote=Remote(str(remote)),
    )
    their_tag = git(remote, "rev-parse", "golden@v1")

    result = push_v1(tmp_path / "local", str(remote), b"ours")

    assert result.created and not result.pushed and result.push_error is not None
    assert f"the remote already has a tag golden@v1 at {their_tag[:12]}" in result.push_error
    assert "delete it there deliberately" in result.push_error
    assert git(remote, "rev-parse", "golden@v1") == their_tag
    assert git(tmp_path / "local", "rev-parse", "golden@v1^{commit}") == result.commit  # kept locally


def test_a_missing_credential_variable_fails_the_push_by_name_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSAY_SECRET_TEST_GIT_TOKEN", raising=False)
    remote = bare(tmp_path / "remote.git")

    result = git_write(
        repository_path=tmp_path / "local",
        branch="main",
        files={"g": b"1"},
        message="m",
        author=RITA,
        remote=Remote(str(remote), password_env="ASSAY_SECRET_TEST_GIT_TOKEN"),
    )

    assert result.push_error is not None
    expected = "the environment variable ASSAY_SECRET_TEST_GIT_TOKEN (the password) is not set"
    assert expected in result.push_error


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"repository_path": "relative/path"}, "repository_path", "absolute"),
        ({"branch": "bad..branch"}, "branch", "not a valid git branch"),
        ({"file_path": "../escape.json"}, "file_path", "'..'"),
        ({"file_path": ".git/config"}, "file_path", "inside .git"),
        (
            {"remote_url": "https://bot:s3cret@git.example.org/x.git"},
            "remote_url",
            "credentials in the URL (user:password@) would be stored; name environment variables",
        ),
        ({"password_env": "ghp_abc123 secret"}, "password_env", "never the secret itself"),
    ],
)
def test_it_names_each_bad_configuration_field(kwargs: dict[str, str], field: str, message: str) -> None:
    allowed = f"{tempfile.gettempdir()}/golden"  # below the roots the suite allows (tests/conftest.py)
    values = {"repository_path": allowed, "branch": "main", "file_path": "golden/help.json"} | kwargs

    problems = git_export.config_problems(**values)

    assert list(problems) == [field]
    assert message in problems[field]


def test_bad_arguments_write_nothing(tmp_path: Path) -> None:
    with pytest.raises(GitExportError, match="no files to write"):
        git_write(repository_path=tmp_path / "r", branch="main", files={}, message="m", author=RITA)
    with pytest.raises(GitExportError, match="tag 'bad tag' is not a valid git tag"):
        git_write(
            repository_path=tmp_path / "r",
            branch="main",
            files={"a": b""},
            message="m",
            author=RITA,
            tag="bad tag",
        )
    assert not (tmp_path / "r").exists()
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "file.txt").write_text("not a repository")
    with pytest.raises(GitExportError, match="exists and is not a git repository"):
        git_write(
            repository_path=tmp_path / "junk", branch="main", files={"a": b""}, message="m", author=RITA
        )


# ------------------------------------------------------------------------------------------ version export


SPEC = {"q-1": {"labels": {"d-1": 3, "d-2": 0}}, "q-2": {"tier": "shadow", "labels": {"d-2": 1}}}


@pytest.fixture
def versions(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> tuple[GoldenVersion, GoldenVersion]:
    built = build_set(golden_set, SPEC)
    v1 = services.golden_version_freeze(golden_set=golden_set, by=rita, name="2026-08-01")
    consolidated.grade(built.queries["q-1"], built.docs["d-2"], 2, "adjudicated")
    v2 = services.golden_version_freeze(golden_set=golden_set, by=rita, name="2026-08-02")
    return v1, v2


@pytest.mark.django_db
def test_exporting_a_version_commits_tags_pushes_and_records_it(
    versions: tuple[GoldenVersion, GoldenVersion], golden_set: GoldenSet, rita: User, tmp_path: Path
) -> None:
    remote = bare(tmp_path / "remote.git")
    repo = tmp_path / "golden"
    services.git_export_configure(
        golden_set=golden_set,
        repository_path=str(repo),
        file_path="golden/help-center.json",
        remote_url=remote.as_uri(),
    )
    rita.first_name, rita.last_name = "Rita", "Reviewer"
    rita.save()
    v1, v2 = versions

    first = services.golden_version_export(version=v1, by=rita)
    row = services.golden_version_export(version=v2, by=rita)

    assert (first.status, row.status) == ("exported", "exported")
    assert row.pushed and row.tag == "golden@2026-08-02"
    assert git(repo, "show", "golden@2026-08-02:golden/help-center.json").encode() + b"\n" == v2.content_bytes
    assert (
        git(repo, "rev-parse", "golden@2026-08-02^{commit}") == row.commit == git(remote, "rev-parse", "main")
    )
    assert git(repo, "log", "-1", "--format=%an <%ae>", "main") == "Rita Reviewer <rita@example.org>"
    message = git(repo, "log", "-1", "--format=%B", "main")
    assert message.startswith(
        "golden help-center@2026-08-02: 2 queries (core 1, shadow 1, challenge 0), 3 judgments"
    )
    assert (
        "Golden 2026-08-01 -> 2026-08-02 (2 queries): judgments changed in 1 query: 1 regraded (1 up, 0 down)"
        in message
    )
    assert f"sha256 {v2.sha256}" in message and "Rubric help-center@1, k=10" in message
    assert git(repo, "rev-list", "--count", "main") == "2"
    assert list(GitExport.objects.filter(version=v2).values_list("status", "commit", "pushed")) == [
        ("exported", row.commit, True)
    ]


@pytest.mark.django_db
def test_re_exporting_a_version_is_a_no_op(
    versions: tuple[GoldenVersion, GoldenVersion], golden_set: GoldenSet, rita: User, tmp_path: Path
) -> None:
    repo = tmp_path / "golden"
    services.git_export_configure(golden_set=golden_set, repository_path=str(repo), file_path="help.json")
    v1, _ = versions
    first = services.golden_version_export(version=v1, by=rita)

    again = services.golden_version_export(version=v1, by=rita)

    assert (again.status, again.commit) == ("unchanged", first.commit)
    assert "nothing written" in again.message
    assert git(repo, "rev-list", "--count", "main") == "1"


@pytest.mark.django_db
def test_a_tag_conflict_is_refused_and_recorded(
    versions: tuple[GoldenVersion, GoldenVersion], golden_set: GoldenSet, rita: User, tmp_path: Path
) -> None:
    repo = tmp_path / "golden"
    v1, _ = versions
    # Someone else's golden@2026-08-01 with other content is already there.
    git_write(
        repository_path=repo,
        branch="main",
        files={"help.json": b"{}\n"},
        message="x",
        author=RITA,
        tag=v1.tag,
    )
    services.git_export_configure(golden_set=golden_set, repository_path=str(repo), file_path="help.json")

    row = services.golden_version_export(version=v1, by=rita)

    assert row.status == "refused" and row.commit == ""
    assert "tag golden@2026-08-01 already exists" in row.message and "help.json differs" in row.message
    assert read_file(repo, "main", "help.json") == b"{}\n"


@pytest.mark.django_db
def test_a_failed_push_is_recorded_with_the_local_commit(
    versions: tuple[GoldenVersion, GoldenVersion], golden_set: GoldenSet, rita: User, tmp_path: Path
) -> None:
    repo = tmp_path / "golden"
    services.git_export_configure(
        golden_set=golden_set,
        repository_path=str(repo),
        file_path="help.json",
        remote_url=str(tmp_path / "gone.git"),
    )
    v1, _ = versions

    row = services.golden_version_export(version=v1, by=rita)

    assert (row.status, row.pushed) == ("push_failed", False)
    assert row.commit == git(repo, "rev-parse", "golden@2026-08-01^{commit}")
    assert "export again" in row.message


@pytest.mark.django_db
def test_jsonl_exports_write_the_jsonl_form(
    versions: tuple[GoldenVersion, GoldenVersion], golden_set: GoldenSet, rita: User, tmp_path: Path
) -> None:
    repo = tmp_path / "golden"
    services.git_export_configure(
        golden_set=golden_set, repository_path=str(repo), file_path="help.jsonl", file_format="jsonl"
    )
    v1, _ = versions

    services.golden_version_export(version=v1, by=rita)

    assert read_file(repo, v1.tag, "help.jsonl") == dump_jsonl(v1.golden())


@pytest.mark.django_db
def test_exporting_without_a_configuration_fails_clearly(
    versions: tuple[GoldenVersion, GoldenVersion], rita: User
) -> None:
    row = services.golden_version_export(version=versions[0], by=rita)

    assert row.status == "failed"
    assert "has no git export configured" in row.message


@pytest.mark.django_db
def test_configuring_refuses_bad_fields_by_name(golden_set: GoldenSet) -> None:
    with pytest.raises(services.ExportConfigError) as caught:
        services.git_export_configure(
            golden_set=golden_set,
            repository_path="rel",
            file_path="a.json",
            file_format="xml",
            username_env="1x",
        )

    assert set(caught.value.problems) == {"repository_path", "file_format", "username_env"}


# --- what stored settings may reach (assay.secrets) ---------------------------------------------


@pytest.mark.django_db
def test_configuring_refuses_paths_outside_the_roots_and_unprefixed_secret_variables(
    golden_set: GoldenSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_GIT_EXPORT_ROOTS", str(tmp_path / "exports"))
    with pytest.raises(services.ExportConfigError) as caught:
        services.git_export_configure(
            golden_set=golden_set,
            repository_path=str(tmp_path / "elsewhere"),
            file_path="a.json",
            remote_url=f"file://{tmp_path}/outside-remote",
            username_env="DJANGO_SECRET_KEY",
            password_env="DATABASE_URL",
        )
    problems = caught.value.problems
    assert set(problems) == {"repository_path", "remote_url", "username_env", "password_env"}
    assert "outside the directories git exports may write to" in problems["repository_path"]
    assert "ASSAY_GIT_EXPORT_ROOTS" in problems["remote_url"]
    assert "does not start with ASSAY_SECRET_" in problems["password_env"]

    factories.grant_secrets(golden_set, "ASSAY_SECRET_GIT_TOKEN")
    config = services.git_export_configure(
        golden_set=golden_set,
        repository_path=str(tmp_path / "exports" / "golden"),
        file_path="a.json",
        remote_url=str(tmp_path / "exports" / "remote.git"),
        password_env="ASSAY_SECRET_GIT_TOKEN",
    )
    assert config.repository_path.endswith("/exports/golden")


def test_a_write_outside_the_roots_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_GIT_EXPORT_ROOTS", str(tmp_path / "exports"))
    target = tmp_path / "app-checkout"
    with pytest.raises(GitExportError, match="outside the directories git exports may write to"):
        git_write(repository_path=target, branch="main", files={"a": b"1"}, message="m", author=RITA)
    assert not target.exists()


def test_a_stored_unprefixed_secret_variable_is_never_read_or_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A configuration stored before the rule: the push names the rule and sends nothing."""
    remote = tmp_path / "remote.git"
    git_repo.open_repository(remote, create=True)
    monkeypatch.setenv("DJANGO_SECRET_KEY", "s3cret")
    result = git_write(
        repository_path=tmp_path / "local",
        branch="main",
        files={"a": b"1"},
        message="m",
        author=RITA,
        remote=Remote(str(remote), username_env="x", password_env="DJANGO_SECRET_KEY"),
    )
    assert not result.pushed and result.push_error is not None
    assert "does not start with ASSAY_SECRET_" in result.push_error
    assert "s3cret" not in result.push_error


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("remote_url", "says"),
    [
        ("http://169.254.169.254/latest/meta-data/x.git", "host 169.254.169.254 is a link-local address"),
        ("http://127.0.0.1:8968/repo2.git", "host 127.0.0.1 is a loopback address"),
        ("http://１２７.０.０.１:8968/repo2.git", "(read as 127.0.0.1) is a loopback address"),
        ("git@10.0.0.5:team/golden.git", "host 10.0.0.5 is a private address"),
    ],
)
def test_the_settings_page_refuses_a_remote_on_a_private_address(
    client: Client,
    golden_set: GoldenSet,
    rita: User,
    monkeypatch: pytest.MonkeyPatch,
    remote_url: str,
    says: str,
) -> None:
    """The reported remotes saved with the policy off, and an export then requested `info/refs` there."""
    monkeypatch.setenv("ASSAY_TARGET_ALLOW_PRIVATE", "false")
    client.force_login(rita)
    form = {
        "repository_path": f"{tempfile.gettempdir()}/golden-{golden_set.slug}",
        "branch": "main",
        "file_path": "help.json",
        "file_format": "json",
        "remote_url": remote_url,
        "username_env": "",
        "password_env": "",
    }
    response = client.post(f"/sets/{golden_set.slug}/versions/git/", form)
    assert response.status_code == 422 and says in response.content.decode()
    assert not GitExportConfig.objects.exists()


@pytest.mark.django_db
def test_an_export_to_a_remote_refused_since_it_was_saved_writes_and_sends_nothing(
    versions: tuple[GoldenVersion, GoldenVersion],
    golden_set: GoldenSet,
    rita: User,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Saved while private addresses were allowed; the operator turned that off; the export refuses."""
    with StubServer() as stub:
        repo = tmp_path / "golden"
        services.git_export_configure(
            golden_set=golden_set,
            repository_path=str(repo),
            file_path="help.json",
            remote_url=f"{stub.url}/x.git",
        )
        monkeypatch.setenv("ASSAY_TARGET_ALLOW_PRIVATE", "false")
        v1, _ = versions

        row = services.golden_version_export(version=v1, by=rita)

        assert row.status == "failed" and "nothing was written" in row.message
        assert "host 127.0.0.1 is a loopback address" in row.message
        assert stub.requests == [] and not repo.exists()


@pytest.mark.django_db
def test_the_settings_page_says_where_it_may_write_before_any_try_in_the_apps_layout(
    client: Client, golden_set: GoldenSet, rita: User, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roots = [tmp_path / "exports", tmp_path / "shared"]
    monkeypatch.setenv("ASSAY_GIT_EXPORT_ROOTS", os.pathsep.join(map(str, roots)))
    client.force_login(rita)
    page = client.get(f"/sets/{golden_set.slug}/versions/git/").content.decode()
    said = page[page.index('id="export-roots"') : page.index('id="export-config"')]
    assert (
        all(f"<code>{root.resolve()}</code>" in said for root in roots) and "ASSAY_GIT_EXPORT_ROOTS" in said
    )
    # The app's own form layout (a label above each field, help beside it), the formats by their names.
    assert (
        '<label for="id_repository_path">' in page and "<p>" not in page.split('id="export-config"')[1][:200]
    )
    assert ">JSON (one file)</option>" in page and ">JSONL (one query a line)</option>" in page
    assert "Json" not in page
