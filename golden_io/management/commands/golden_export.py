from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from golden_io.management.commands._common import user_get, version_get
from golden_io.models import GitExport
from golden_io.services import golden_version_export


class Command(BaseCommand):
    help = (
        "Export a golden version to its set's git repository: commit the file, tag golden@VERSION, push "
        "when a remote is configured. Identical content is a no-op; a tag holding other content is refused."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("version", help="SET@VERSION (or VERSION with --set)")
        parser.add_argument("--set", dest="golden_set", default=None)
        parser.add_argument("--by", default=None, help="username used as the commit author")

    def handle(self, *args: Any, **options: Any) -> None:
        version = version_get(options["version"], default_set=options["golden_set"])
        row = golden_version_export(version=version, by=user_get(options["by"]))
        if row.status in (GitExport.Status.EXPORTED, GitExport.Status.UNCHANGED):
            self.stdout.write(f"{row.get_status_display()}: {row.message}")
            if row.commit:
                self.stdout.write(f"commit {row.commit} tag {row.tag} pushed {'yes' if row.pushed else 'no'}")
            return
        raise CommandError(f"{row.get_status_display()}: {row.message}")
