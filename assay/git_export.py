"""A small git writer on dulwich (no Django): commit files onto a branch, tag, push.

`git_write` is general on purpose: the golden export writes one golden file and tags `golden@<version>`;
the rebaseline workflow writes `baseline/relevance.json` and `RELEVANCE_NOTES.md` on a branch
`rebaseline/golden@<version>` without a tag. Its contract:

- Commits are built from objects (blob, tree, commit), never through a checkout, so any branch can be
  written without switching; the branch moves by compare-and-swap, so a concurrent writer is never
  overwritten (the write is rebuilt on the new head, a few times at most).
- A missing repository is created bare. In a non-bare repository whose checked-out branch is written,
  the written files are also updated in the working tree and the index (so `git status` stays clean),
  and a file with uncommitted changes there refuses the write before anything happens.
- A tag is never moved. If it exists and its commit holds exactly these files, the write is a no-op
  (`created=False`); if it holds other content, `TagConflict` is raised and nothing is written.
- When the branch already holds exactly these files no commit is made; the tag (if any) goes on the head.
- A push failure never undoes the local commit: `WriteResult.push_error` says what failed and what to do.
  Credentials come from environment variables named in `Remote`; their values are never stored or shown.

The remote and the push are `assay.git_remote`; reading a repository, `assay.git_repo`; here, the
configuration's checks and the writing (the tree built from blobs, the commit, the branch's
compare-and-swap, the tag).
"""

from __future__ import annotations

import fcntl
import os
import random
import re
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from dulwich.file import FileLocked
from dulwich.object_store import commit_tree_changes
from dulwich.objects import Blob, Commit, ObjectID, Tag, Tree
from dulwich.refs import Ref, check_ref_format
from dulwich.repo import Repo

from assay.git_remote import Remote, push, remote_named, remote_url_problem
from assay.git_repo import GitExportError, blob_at, holds, open_repository, peel_commit, ref_id
from assay.secrets import git_export_path_problem, secret_env_problem

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_MAX_ATTEMPTS = 20  # compare-and-swap retries when another writer moves or locks the branch meanwhile


class TagConflict(GitExportError):
    """The tag exists and points at other content: tags are never moved."""


@dataclass(frozen=True, slots=True)
class Author:
    name: str
    email: str

    def ident(self) -> bytes:
        name = self.name.replace("<", "").replace(">", "").replace("\n", " ").strip() or "unknown"
        email = self.email.replace("<", "").replace(">", "").replace("\n", "").strip()
        return f"{name} <{email}>".encode()


@dataclass(frozen=True, slots=True)
class WriteResult:
    commit: str  # hex sha of the commit holding the files (new, or the existing one)
    created: bool  # False: nothing was written (the tag or the branch already held these files)
    tag: str | None = None
    tag_created: bool = False
    pushed: bool = False
    push_error: str | None = None


# ------------------------------------------------------------------------------------------ validation


def file_path_problem(path: str) -> str | None:
    """Why `path` cannot be a file path inside the repository (None when it can)."""
    if not path or path != path.strip():
        return f"file path {path!r} must be non-empty, without surrounding spaces"
    if "\\" in path or "\x00" in path or path.startswith("/"):
        return f"file path {path!r} must be relative, with '/' separators"
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return f"file path {path!r} cannot have empty, '.' or '..' parts"
    if any(p.lower() == ".git" for p in parts):
        return f"file path {path!r} cannot be inside .git"
    return None


def branch_problem(branch: str) -> str | None:
    if not branch or not check_ref_format(Ref(b"refs/heads/" + branch.encode())):
        return f"branch {branch!r} is not a valid git branch name"
    return None


def tag_problem(tag: str) -> str | None:
    if not tag or not check_ref_format(Ref(b"refs/tags/" + tag.encode())):
        return f"tag {tag!r} is not a valid git tag name"
    return None


def config_problems(
    *,
    repository_path: str,
    branch: str,
    file_path: str,
    remote_url: str = "",
    username_env: str = "",
    password_env: str = "",
) -> dict[str, str]:
    """Field name -> problem, for an export configuration (empty when it is usable)."""
    problems: dict[str, str] = {}
    if not repository_path or not os.path.isabs(repository_path):
        problems["repository_path"] = f"repository path {repository_path!r} must be an absolute path"
    elif outside := git_export_path_problem(repository_path):
        problems["repository_path"] = outside
    for name, problem in (
        ("branch", branch_problem(branch)),
        ("file_path", file_path_problem(file_path)),
        ("remote_url", remote_url_problem(remote_url)),
    ):
        if problem:
            problems[name] = problem
    for name, value in (("username_env", username_env), ("password_env", password_env)):
        if value and not _ENV_NAME.match(value):
            problems[name] = (
                f"{value!r} is not an environment variable name (letters, digits and '_'; "
                "write the variable's NAME here, never the secret itself)"
            )
        elif value and (refused := secret_env_problem(value)):
            problems[name] = refused
    return problems


# ------------------------------------------------------------------------------------------ writing


def _checked_out(repo: Repo, branch_ref: bytes) -> bool:
    if repo.bare:
        return False
    try:
        return repo.refs.get_symrefs().get(Ref(b"HEAD")) == branch_ref
    except KeyError:
        return False


def _start(repo: Repo, start_from: Sequence[str]) -> Commit | None:
    for name in start_from:
        sha = ref_id(repo, name.encode())
        if sha is not None:
            return peel_commit(repo, sha)
    return None


def _check_clean(repo: Repo, head: Commit | None, files: Mapping[str, bytes]) -> None:
    """Refuse when a file about to be written has uncommitted changes in the working tree."""
    dirty: list[str] = []
    for path in files:
        on_disk = Path(repo.path, *PurePosixPath(path).parts)
        if not on_disk.exists():
            continue
        committed = blob_at(repo, head.tree, path) if head is not None else None
        if on_disk.is_dir() or committed is None or on_disk.read_bytes() != committed:
            dirty.append(path)
    if dirty:
        raise GitExportError(
            f"uncommitted changes in {', '.join(dirty)} in the working tree of {repo.path}: commit or "
            "discard them, or export to a branch that is not checked out"
        )


def _update_worktree(repo: Repo, files: Mapping[str, bytes]) -> None:
    for path, content in files.items():
        target = Path(repo.path, *PurePosixPath(path).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    repo.get_worktree().stage(list(files))


def _new_commit(
    repo: Repo, head: Commit | None, files: Mapping[str, bytes], message: str, author: Author, when: int
) -> Commit | None:
    """The commit writing `files` on top of `head`, stored; None when `head` already holds them."""
    if head is not None and holds(repo, head, files):
        return None
    changes = []
    for path, content in sorted(files.items()):
        blob = Blob.from_string(content)
        repo.object_store.add_object(blob)
        changes.append((path.encode(), stat.S_IFREG | 0o644, blob.id))
    # A fresh Tree copy: commit_tree_changes edits the tree object it is given.
    base = Tree() if head is None else Tree.from_string(repo[head.tree].as_raw_string())
    tree_id = commit_tree_changes(repo.object_store, base, changes)
    commit = Commit()
    commit.tree = tree_id
    commit.parents = [] if head is None else [head.id]
    commit.author = commit.committer = author.ident()
    commit.author_time = commit.commit_time = when
    commit.author_timezone = commit.commit_timezone = 0
    commit.encoding = b"UTF-8"
    commit.message = message.rstrip("\n").encode() + b"\n"
    repo.object_store.add_object(commit)
    return commit


def git_write(
    *,
    repository_path: str | os.PathLike[str],
    branch: str,
    files: Mapping[str, bytes],
    message: str,
    author: Author,
    tag: str | None = None,
    tag_message: str | None = None,
    remote: Remote | None = None,
    when: int | None = None,
    start_from: Sequence[str] = (),
) -> WriteResult:
    """Commit `files` (repository path -> bytes) on `branch`, optionally tag and push; see the module doc.

    A branch that does not exist yet starts at the first of `start_from` (full ref names such as
    `refs/tags/golden@2026-08-01` or `refs/heads/main`) that exists, else with no parent.

    Raises `GitExportError` (or `TagConflict`) before writing anything when the write cannot be done.
    """
    problems = [
        p
        for p in (
            git_export_path_problem(os.fspath(repository_path)),
            branch_problem(branch),
            tag_problem(tag) if tag is not None else None,
            remote_url_problem(remote.url) if remote else None,
            *(file_path_problem(path) for path in files),
        )
        if p
    ]
    if not files:
        problems.append("no files to write")
    if problems:
        raise GitExportError("; ".join(problems))
    when = int(time.time()) if when is None else when
    branch_ref = b"refs/heads/" + branch.encode()
    with open_repository(repository_path, create=True, branch=branch) as repo:
        with _exclusive(repo):
            commit, created, tag_created = _write_locally(
                repo, branch_ref, files, message, author, tag, tag_message, when, start_from
            )
        result = WriteResult(commit=commit.decode(), created=created, tag=tag, tag_created=tag_created)
        if remote is None or not remote.url:
            return result
        refs = [branch_ref] if tag is None else [branch_ref, b"refs/tags/" + tag.encode()]
        failure = push(repo, remote, refs)
    if failure is None:
        return WriteResult(result.commit, created, tag, tag_created, pushed=True)
    error, todo = failure
    what = f"commit {result.commit[:12]}" + (f" and tag {tag}" if tag else "")
    return WriteResult(
        result.commit,
        created,
        tag,
        tag_created,
        pushed=False,
        push_error=(
            f"push to {remote_named(remote.url)} failed: {error}. The {what} are kept in "
            f"{repository_path}; {todo or 'fix the remote (or its credentials)'} and export again: an "
            "export of unchanged content writes nothing and only pushes."
        ),
    )


@contextmanager
def _exclusive(repo: Repo) -> Iterator[None]:
    """Serialise Assay's writers to one repository (threads and processes on this machine).

    Compare-and-swap on the refs would be enough, but dulwich's lock files are not safe under
    contention: a writer that has just renamed its `<ref>.lock` into place then removes `<ref>.lock` by
    name, which by then may be the next writer's lock (seen here as FileNotFoundError and lost updates).
    An advisory lock on a file of our own keeps two Assay writers from ever racing there.
    """
    path = os.path.join(repo.controldir(), "assay-export.flock")
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_locally(
    repo: Repo,
    branch_ref: bytes,
    files: Mapping[str, bytes],
    message: str,
    author: Author,
    tag: str | None,
    tag_message: str | None,
    when: int,
    start_from: Sequence[str],
) -> tuple[ObjectID, bool, bool]:
    """(commit id, whether a commit or tag was created, whether the tag was created)."""
    tag_ref = b"refs/tags/" + tag.encode() if tag is not None else None
    if tag is not None and tag_ref is not None:
        existing = ref_id(repo, tag_ref)
        if existing is not None:
            tagged = peel_commit(repo, existing)
            if holds(repo, tagged, files):
                return tagged.id, False, False
            raise TagConflict(_conflict_message(repo, tag, tagged, files))
    worktree = _checked_out(repo, branch_ref)
    for _ in range(_MAX_ATTEMPTS):
        old = ref_id(repo, branch_ref)
        head = peel_commit(repo, old) if old is not None else _start(repo, start_from)
        if worktree:
            _check_clean(repo, head, files)
        commit = _new_commit(repo, head, files, message, author, when)
        if commit is None and old is not None:
            assert head is not None
            target, created = head, False
            break
        new = commit if commit is not None else head
        assert new is not None  # no head means a commit was made
        # Compare-and-swap: another writer that moved the branch meanwhile is rebuilt upon, not overwritten.
        if old is None:
            swapped = _swap(repo.refs.add_if_new, Ref(branch_ref), new.id)
        else:
            swapped = _swap(repo.refs.set_if_equals, Ref(branch_ref), old, new.id)
        if swapped:
            target, created = new, True
            break
    else:
        raise GitExportError(
            f"branch {branch_ref.decode()} kept moving or stayed locked during the export (a stale .lock "
            f"file in {repo.controldir()}?): nothing was written, try again"
        )
    if worktree and created:
        _update_worktree(repo, files)
    if tag_ref is None:
        return target.id, created, False
    assert tag is not None
    tag_obj = Tag()
    tag_obj.name = tag.encode()
    tag_obj.object = (Commit, target.id)
    tag_obj.tagger = author.ident()
    tag_obj.tag_time = when
    tag_obj.tag_timezone = 0
    tag_obj.message = (tag_message or message).rstrip("\n").encode() + b"\n"
    repo.object_store.add_object(tag_obj)
    if not _swap(repo.refs.add_if_new, Ref(tag_ref), tag_obj.id, retry_locked=True):
        existing = ref_id(repo, tag_ref)
        if existing is None:
            raise GitExportError(
                f"could not create tag {tag}: {tag_ref.decode()} stays locked (a stale .lock file in "
                f"{repo.controldir()}?); the commit {target.id.decode()[:12]} is on the branch, export again"
            )
        # Someone tagged it between our check and now: same rule, judged on what they tagged.
        tagged = peel_commit(repo, existing)
        if not holds(repo, tagged, files):
            raise TagConflict(_conflict_message(repo, tag, tagged, files))
        return tagged.id, created, False
    return target.id, True, True


def _swap(update: Callable[..., bool], *args: Any, retry_locked: bool = False) -> bool:
    """Run a ref update; a ref another writer holds locked right now counts as "moved" (False), after a
    short randomised pause, so the caller's loop rebuilds on whatever that writer leaves."""
    for attempt in range(_MAX_ATTEMPTS if retry_locked else 1):
        try:
            return update(*args)
        except FileLocked:
            time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))
    return False


def _conflict_message(repo: Repo, tag: str, tagged: Commit, files: Mapping[str, bytes]) -> str:
    differing = [p for p, content in files.items() if blob_at(repo, tagged.tree, p) != content]
    return (
        f"tag {tag} already exists in {repo.path} (commit {tagged.id.decode()[:12]}) and its "
        f"{', '.join(differing)} differs from the content being exported. Tags are never moved: if that "
        "tag is from another Assay installation or was made by hand, export this version to another "
        "repository or file path, or delete the tag in git deliberately and export again."
    )
