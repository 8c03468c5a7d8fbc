"""Golden versions (immutable snapshots of a golden set) and their export to git.

A `GoldenVersion` row holds the exact bytes `assay.golden.format.dump_json` produced at the freeze; once
written it is never changed or deleted. The model refuses `save()` on an existing row (and a save that
would UPDATE: `force_update`, `update_fields`, a new instance carrying an existing pk) and `delete()`, its
queryset (also the base manager Django's own saves and relations use) refuses `update()`, `delete()`,
`bulk_update()`, `update_or_create()` and an upserting `bulk_create()`, every foreign key pointing at it or
from it PROTECTs, and on the database a trigger refuses UPDATE (and on PostgreSQL DELETE) from raw SQL too
(migration 0002). Writes go through `golden_io.services`; reads through `golden_io.selectors`.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from assay.golden.format import parse_json
from assay.golden.model import GoldenFile
from labeling.models import GoldenSet

# Version names end up in the file, in `golden@<name>` git tags and in URLs: a conservative alphabet.
VERSION_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# Words the pages use beside version names (…/versions/freeze/, diff against "working").
RESERVED_NAMES = frozenset({"freeze", "diff", "git", "working"})


class ImmutableVersionError(Exception):
    """Raised by every ORM path that would change or delete a frozen golden version."""

    def __init__(self, what: str) -> None:
        super().__init__(f"golden versions are immutable: {what} is refused (freeze a new version instead)")


def version_name_problem(name: str) -> str | None:
    """Why `name` cannot name a version (None when it can)."""
    if not VERSION_NAME_RE.match(name):
        return (
            f"version name {name!r} must be 1-100 characters of letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    if ".." in name or name.endswith((".", ".lock")):
        return f"version name {name!r} cannot contain '..' or end with '.' or '.lock' (it becomes a git tag)"
    if name.lower() in RESERVED_NAMES:
        return f"version name {name!r} is reserved ({', '.join(sorted(RESERVED_NAMES))})"
    return None


class GoldenVersionQuerySet(models.QuerySet["GoldenVersion"]):
    def update(self, **kwargs: Any) -> int:
        raise ImmutableVersionError("QuerySet.update()")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise ImmutableVersionError("QuerySet.delete()")

    def bulk_update(self, objs: Any, fields: Any, batch_size: int | None = None) -> int:
        raise ImmutableVersionError("QuerySet.bulk_update()")

    def update_or_create(self, *args: Any, **kwargs: Any) -> Any:
        raise ImmutableVersionError("QuerySet.update_or_create()")

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> Any:
        # INSERT ... ON CONFLICT DO UPDATE rewrites the existing row: an update in disguise.
        if kwargs.get("update_conflicts"):
            raise ImmutableVersionError("QuerySet.bulk_create(update_conflicts=True)")
        return super().bulk_create(objs, *args, **kwargs)


# Parsed golden files by (version row, sha256): `GoldenVersion.golden`. Frozen: callers share them.
_PARSED: dict[tuple[int, str], GoldenFile] = {}
_PARSED_SIZE = 8
_PARSED_LOCK = threading.Lock()


class GoldenVersion(models.Model):
    golden_set = models.ForeignKey(GoldenSet, on_delete=models.PROTECT, related_name="versions")
    name = models.CharField(max_length=100)
    # The exact bytes dump_json wrote; the file served, exported and evaluated is always this.
    content = models.BinaryField()
    sha256 = models.CharField(max_length=64)
    parent = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="children"
    )
    rubric_name = models.CharField(max_length=100)
    rubric_version = models.PositiveIntegerField()
    k = models.PositiveIntegerField()
    relevant_min_grade = models.IntegerField()
    scale_min = models.IntegerField()
    scale_max = models.IntegerField()
    # {"queries": {"core": n, "shadow": n, "challenge": n}, "total_queries", "judgments", "documents",
    #  "methods": {"single": n, ...}}
    counts = models.JSONField(default=dict)
    # Per judged document at the freeze: {doc_id: {"key": key or null, "content_hash": sha256}}. The hash
    # is the content that was judged (carried over from the parent for labels carried over), so a document
    # whose live hash differs is stale.
    documents = models.JSONField(default=dict)
    notes = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="golden_versions",
    )
    created = models.DateTimeField(auto_now_add=True)

    objects = GoldenVersionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["golden_set", "name"], name="golden_version_set_name_unique"),
        ]
        ordering = ["golden_set", "-created", "-id"]
        get_latest_by = ["created", "id"]
        # Django's own machinery (related descriptors, the delete collector) uses the base manager: make
        # it this refusing one too, not a plain Manager that would update or delete.
        base_manager_name = "objects"

    def __str__(self) -> str:
        return f"{self.golden_set.slug}@{self.name}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableVersionError(f"saving version {self.name!r} again")
        if kwargs.get("force_update") or kwargs.get("update_fields") is not None:
            raise ImmutableVersionError(f"saving version {self.name!r} as an update")
        # A new instance given an existing pk would make Django try an UPDATE first: insert or fail.
        if self.pk is not None and type(self).objects.filter(pk=self.pk).exists():
            raise ImmutableVersionError(f"saving version {self.name!r} over the existing row {self.pk}")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise ImmutableVersionError(f"deleting version {self.name!r}")

    @property
    def content_bytes(self) -> bytes:
        # PostgreSQL hands back a memoryview, SQLite bytes; callers always get bytes.
        return bytes(self.content)

    def golden(self) -> GoldenFile:
        """The frozen golden file (parsed from the stored bytes, so it is exactly what was frozen), once
        per process: a saved version never changes, so the parse of (its row, its hash) never goes stale,
        and a page, a chunk of a run and the next run against it share it (the last few are kept)."""
        if self.pk is None:
            return parse_json(self.content_bytes)
        key = (self.pk, self.sha256)
        found = _PARSED.get(key)
        if found is None:
            found = parse_json(self.content_bytes)  # outside the lock: two threads may both parse
            with _PARSED_LOCK:
                while len(_PARSED) >= _PARSED_SIZE:
                    del _PARSED[next(iter(_PARSED))]
                _PARSED[key] = found
        return found

    @property
    def tag(self) -> str:
        return f"golden@{self.name}"

    @property
    def rubric_label(self) -> str:
        return f"{self.rubric_name}@{self.rubric_version}"


class GitExportConfig(models.Model):
    """Where a golden set's versions are exported. Credentials are env var NAMES, never values."""

    class Format(models.TextChoices):
        JSON = "json"
        JSONL = "jsonl"

    golden_set = models.OneToOneField(GoldenSet, on_delete=models.CASCADE, related_name="git_export")
    repository_path = models.CharField(
        max_length=1000, help_text="absolute path of the local working repository (created if missing)"
    )
    branch = models.CharField(max_length=200, default="main")
    file_path = models.CharField(max_length=500, help_text="path of the golden file inside the repository")
    file_format = models.CharField(max_length=5, choices=Format.choices, default=Format.JSON)
    remote_url = models.CharField(
        max_length=1000, blank=True, help_text="push here after each export (empty: local only)"
    )
    username_env = models.CharField(
        max_length=100, blank=True, help_text="name of the environment variable holding the username"
    )
    password_env = models.CharField(
        max_length=100, blank=True, help_text="name of the environment variable holding the password or token"
    )
    updated = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.golden_set.slug} -> {self.repository_path}:{self.branch}/{self.file_path}"

    def clean(self) -> None:
        from assay.git_export import config_problems

        problems = config_problems(
            repository_path=self.repository_path,
            branch=self.branch,
            file_path=self.file_path,
            remote_url=self.remote_url,
            username_env=self.username_env,
            password_env=self.password_env,
        )
        if self.golden_set_id is not None:
            credentials = credential_problems(self.golden_set, self.username_env, self.password_env)
            problems = {**credentials, **problems}
        if problems:
            raise ValidationError(problems)


def credential_problems(golden_set: GoldenSet, username_env: str, password_env: str) -> dict[str, str]:
    """Field -> why a git export's credential variable may not be used for `golden_set` (not granted to
    it: labeling.selectors.secrets); checked when the export is configured and before every push."""
    # Imported here: models load before the selectors' module-level querysets may be built.
    from labeling.selectors.secrets import secret_problem

    problems = {}
    for field, variable in (("username_env", username_env), ("password_env", password_env)):
        if variable and (refused := secret_problem(variable, golden_sets=[golden_set])):
            problems[field] = refused
    return problems


class GitExport(models.Model):
    """One export attempt of a version: what was committed, tagged and pushed, or why not."""

    class Status(models.TextChoices):
        EXPORTED = "exported"  # committed and tagged (and pushed when a remote is set)
        UNCHANGED = "unchanged"  # the tag already pointed at this exact content: nothing written
        PUSH_FAILED = "push_failed"  # committed and tagged locally; the push did not go through
        REFUSED = "refused"  # the tag exists with other content
        FAILED = "failed"  # nothing written (bad configuration, unreadable repository, ...)

    version = models.ForeignKey(GoldenVersion, on_delete=models.PROTECT, related_name="exports")
    status = models.CharField(max_length=12, choices=Status.choices)
    repository_path = models.CharField(max_length=1000)
    branch = models.CharField(max_length=200)
    file_path = models.CharField(max_length=500)
    commit = models.CharField(max_length=40, blank=True)
    tag = models.CharField(max_length=200)
    pushed = models.BooleanField(default=False)
    remote_url = models.CharField(max_length=1000, blank=True)
    message = models.TextField(blank=True, help_text="what happened, and what to do when it failed")
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.version} -> {self.tag} ({self.status})"


class GoldenImport(models.Model):
    """One golden-file import into a set (docs/labeling.md, "Imports"): previewed, then applied, perhaps
    undone. While previewed it holds the file (and its topics file) so that the confirmation writes
    exactly what was previewed without a second upload; once applied or discarded the bytes are dropped,
    and it keeps who, when, the file's name, format, options, counts and, in `undo`, the state before it
    of everything it wrote (`golden_io.services.imports`)."""

    class Status(models.TextChoices):
        PREVIEWED = "previewed"  # checked and shown; nothing written yet
        APPLIED = "applied"
        UNDONE = "undone"
        DISCARDED = "discarded"  # a preview that was never confirmed (replaced, cancelled or expired)

    class Mode(models.TextChoices):
        MERGE = "merge", "Merge: change only the labels the file names"
        REPLACE = "replace", "Replace: the set's labels become exactly the file's"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="imports")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PREVIEWED)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.MERGE)
    source = models.CharField(max_length=500, help_text="the uploaded file's name")
    format = models.CharField(max_length=30, default="golden")
    # The reading options as given: {"scale": [min, max] | null, "map": [[from, to], ...], "topics": name}
    options = models.JSONField(default=dict, blank=True)
    data = models.BinaryField(default=b"", blank=True)
    topics_data = models.BinaryField(default=b"", blank=True)
    # The previewed changes' digest: a confirmation writes only when the file still makes exactly them.
    digest = models.CharField(max_length=64, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    undo = models.JSONField(default=dict, blank=True)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    applied = models.DateTimeField(null=True, blank=True)
    undone = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["golden_set", "status", "-applied"], name="golden_import_latest")]

    def __str__(self) -> str:
        return f"{self.golden_set.slug}: {self.source} ({self.mode}, {self.status})"
