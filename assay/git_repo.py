"""A git repository as the export reads it (no Django; dulwich): opened (or created bare, its HEAD naming
the exported branch), a ref's target, a commit peeled from a tag, a file's bytes at a commit or a ref, and
whether a commit holds given files. `GitExportError` is the export's one error, raised here when a
repository cannot be opened or a ref names no commit. The writing is `assay.git_export`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from dulwich.errors import NotGitRepository
from dulwich.objects import Blob, Commit, ObjectID, Tag
from dulwich.refs import Ref
from dulwich.repo import Repo


class GitExportError(Exception):
    """The write could not be done; nothing was written. The message says why and what to do."""


def open_repository(path: str | os.PathLike[str], *, create: bool = False, branch: str = "main") -> Repo:
    """The repository at `path`; with `create`, a missing path or empty directory becomes a bare repo
    whose HEAD names `branch` (so `git clone` of it checks out the exported branch)."""
    p = Path(path)
    try:
        return Repo(str(p))
    except NotGitRepository:
        if not create:
            raise GitExportError(f"{p} is not a git repository") from None
        if p.exists() and (not p.is_dir() or any(p.iterdir())):
            raise GitExportError(
                f"{p} exists and is not a git repository: point the export at an empty or missing "
                "directory (a bare repository is created there) or at an existing repository"
            ) from None
        p.mkdir(parents=True, exist_ok=True)
        repo = Repo.init_bare(str(p))
        repo.refs.set_symbolic_ref(Ref(b"HEAD"), Ref(b"refs/heads/" + branch.encode()))
        return repo


def ref_id(repo: Repo, name: bytes) -> ObjectID | None:
    try:
        return repo.refs[Ref(name)]
    except KeyError:
        return None


def peel_commit(repo: Repo, sha: ObjectID) -> Commit:
    obj = repo[sha]
    while isinstance(obj, Tag):
        obj = repo[obj.object[1]]
    if not isinstance(obj, Commit):
        raise GitExportError(f"{sha.decode()} does not point at a commit")
    return obj


def blob_at(repo: Repo, tree_id: ObjectID, path: str) -> bytes | None:
    try:
        _mode, sha = repo[tree_id].lookup_path(repo.object_store.__getitem__, path.encode())  # type: ignore[attr-defined]
    except KeyError:
        return None
    blob = repo[sha]
    return blob.as_raw_string() if isinstance(blob, Blob) else None


def read_file(repository_path: str | os.PathLike[str], ref: str, path: str) -> bytes | None:
    """The content of `path` at `ref` (a branch, tag or full ref name); None if the ref or file is missing."""
    with open_repository(repository_path) as repo:
        for name in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}"):
            sha = ref_id(repo, name.encode())
            if sha is not None:
                return blob_at(repo, peel_commit(repo, sha).tree, path)
    return None


def holds(repo: Repo, commit: Commit, files: Mapping[str, bytes]) -> bool:
    return all(blob_at(repo, commit.tree, path) == content for path, content in files.items())
