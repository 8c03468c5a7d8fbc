"""Shared by the import commands: find the golden set, read the file, print the report, fail loudly."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from assay.problems import ImportReport
from labeling.models import GoldenSet


def golden_set_get(slug: str) -> GoldenSet:
    golden_set = GoldenSet.objects.select_related("rubric").filter(slug=slug).first()
    if golden_set is None:
        known = ", ".join(GoldenSet.objects.values_list("slug", flat=True)) or "none yet"
        raise CommandError(f"no golden set {slug!r} (known: {known}); create one with create_golden_set")
    return golden_set


def read_file(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from exc


def finish(command: BaseCommand, report: ImportReport) -> None:
    """Print the report; a failed import exits non-zero with every problem listed."""
    if not report.ok:
        raise CommandError(report.render_text())
    command.stdout.write(report.render_text())
