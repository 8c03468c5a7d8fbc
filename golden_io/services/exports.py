"""Export to git: the set's export configuration and a version written to its repository
(assay.git_export; docs/golden-versions.md).

Part of `golden_io.services`.
"""

from __future__ import annotations

from django.contrib.auth.models import User

from assay import git_export, git_remote, git_repo
from assay.golden.diff import GoldenDiff, diff
from assay.golden.format import dump_jsonl
from golden_io.models import (
    GitExport,
    GitExportConfig,
    GoldenVersion,
    credential_problems,
)
from labeling.models import GoldenSet

# ------------------------------------------------------------------------------------------ git export


class ExportConfigError(ValueError):
    def __init__(self, problems: dict[str, str]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))


def git_export_configure(
    *,
    golden_set: GoldenSet,
    repository_path: str,
    file_path: str,
    branch: str = "main",
    file_format: str = GitExportConfig.Format.JSON,
    remote_url: str = "",
    username_env: str = "",
    password_env: str = "",
) -> GitExportConfig:
    """Create or replace the set's export configuration; `ExportConfigError` names each bad field."""
    problems = git_export.config_problems(
        repository_path=repository_path,
        branch=branch,
        file_path=file_path,
        remote_url=remote_url,
        username_env=username_env,
        password_env=password_env,
    )
    if file_format not in GitExportConfig.Format.values:
        problems["file_format"] = f"file format {file_format!r} must be json or jsonl"
    # The name rule's refusals are config_problems' already (its words kept).
    problems = {**credential_problems(golden_set, username_env, password_env), **problems}
    if problems:
        raise ExportConfigError(problems)
    config, _ = GitExportConfig.objects.update_or_create(
        golden_set=golden_set,
        defaults={
            "repository_path": repository_path,
            "branch": branch,
            "file_path": file_path,
            "file_format": file_format,
            "remote_url": remote_url,
            "username_env": username_env,
            "password_env": password_env,
        },
    )
    return config


def export_message(*, version: GoldenVersion, change: GoldenDiff | None) -> str:
    """The commit (and tag) message: a subject with the counts, the diff summary, the methodology."""
    counts = version.counts
    tiers = counts.get("queries", {})
    subject = (
        f"golden {version}: {counts.get('total_queries', 0)} queries ("
        + ", ".join(f"{tier} {n}" for tier, n in tiers.items())
        + f"), {counts.get('judgments', 0)} judgments"
    )
    body = [
        change.summary() if change is not None else f"First version of golden set {version.golden_set.slug}.",
        f"Rubric {version.rubric_label}, k={version.k}, relevant_min_grade={version.relevant_min_grade}, "
        f"scale {version.scale_min}..{version.scale_max}.",
        f"sha256 {version.sha256}",
        f"Frozen by {version.created_by or 'unknown'} at {version.created:%Y-%m-%d %H:%M} UTC.",
    ]
    return subject + "\n\n" + "\n\n".join(body) + "\n"


def export_author(user: User | None) -> git_export.Author:
    if user is None:
        return git_export.Author("Assay", "assay@localhost")
    return git_export.Author(
        user.get_full_name() or user.username, user.email or f"{user.username}@localhost"
    )


def golden_version_export(*, version: GoldenVersion, by: User | None) -> GitExport:
    """Write the version to its set's git repository, tag `golden@<name>`, push when a remote is set.

    Always returns the recorded `GitExport` row: its status says exported / unchanged / push_failed /
    refused / failed, and its message what happened and what to do.
    """
    config = GitExportConfig.objects.filter(golden_set_id=version.golden_set_id).first()
    row = GitExport(version=version, tag=version.tag, by=by)
    if config is None:
        row.status = GitExport.Status.FAILED
        row.message = (
            f"golden set {version.golden_set.slug} has no git export configured: set the repository path, "
            "branch and file path first"
        )
        row.save()
        return row
    row.repository_path, row.branch, row.file_path = config.repository_path, config.branch, config.file_path
    row.remote_url = config.remote_url
    # The credentials granted to the set still (a grant withdrawn since the export was configured stops
    # the push here): refused before anything is written or sent.
    refused = credential_problems(version.golden_set, config.username_env, config.password_env)
    if config.remote_url and refused:
        row.status = GitExport.Status.FAILED
        row.message = "nothing was written: " + "; ".join(f"{k}: {v}" for k, v in refused.items())
        row.save()
        return row
    golden = version.golden()
    content = (
        version.content_bytes if config.file_format == GitExportConfig.Format.JSON else dump_jsonl(golden)
    )
    change = diff(version.parent.golden(), golden) if version.parent is not None else None
    message = export_message(version=version, change=change)
    remote = (
        git_remote.Remote(config.remote_url, config.username_env, config.password_env)
        if config.remote_url
        else None
    )
    try:
        result = git_export.git_write(
            repository_path=config.repository_path,
            branch=config.branch,
            files={config.file_path: content},
            message=message,
            author=export_author(by if by is not None else version.created_by),
            tag=version.tag,
            remote=remote,
        )
    except git_export.TagConflict as exc:
        row.status, row.message = GitExport.Status.REFUSED, str(exc)
    except (git_repo.GitExportError, OSError) as exc:
        row.status, row.message = GitExport.Status.FAILED, f"nothing was written: {exc}"
    else:
        row.commit, row.pushed = result.commit, result.pushed
        if result.push_error is not None:
            row.status, row.message = GitExport.Status.PUSH_FAILED, result.push_error
        elif not result.created:
            row.status = GitExport.Status.UNCHANGED
            row.message = (
                f"{version.tag} already holds this content at {result.commit[:12]}: nothing written"
                + ("; pushed" if result.pushed else "")
            )
        else:
            row.status = GitExport.Status.EXPORTED
            row.message = f"committed {result.commit[:12]} on {config.branch} and tagged {version.tag}" + (
                f"; pushed to {config.remote_url}" if result.pushed else ""
            )
    row.save()
    return row
