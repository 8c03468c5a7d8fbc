from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from golden_io.management.commands._common import user_get
from golden_io.services import FreezeError, golden_version_freeze
from labeling.management.commands._common import golden_set_get


class Command(BaseCommand):
    help = (
        "Freeze an immutable golden version from the consolidated labels. Unresolved documents in core "
        "queries refuse the freeze unless --quarantine-unresolved moves those queries to shadow first."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("golden_set")
        parser.add_argument("--name", default=None, help="version name (default: today's date, then .2 ...)")
        parser.add_argument("--notes", default="")
        parser.add_argument("--quarantine-unresolved", action="store_true")
        parser.add_argument("--by", default=None, help="username recorded as the one who froze it")
        parser.add_argument("--date", default=None, help="the date naming the version (YYYY-MM-DD)")

    def handle(self, *args: Any, **options: Any) -> None:
        golden_set = golden_set_get(options["golden_set"])
        on = None
        if options["date"]:
            try:
                on = dt.date.fromisoformat(options["date"])
            except ValueError:
                raise CommandError(f"--date: {options['date']!r} is not a date (YYYY-MM-DD)") from None
        try:
            version = golden_version_freeze(
                golden_set=golden_set,
                by=user_get(options["by"]),
                name=options["name"],
                notes=options["notes"],
                quarantine_unresolved=options["quarantine_unresolved"],
                on=on,
            )
        except FreezeError as exc:
            raise CommandError("freeze refused:\n" + "\n".join(f"  {p}" for p in exc.problems)) from None
        counts = version.counts
        tiers = ", ".join(f"{tier} {n}" for tier, n in counts["queries"].items())
        self.stdout.write(
            f"froze {version}: {counts['total_queries']} queries ({tiers}), {counts['judgments']} judgments, "
            f"sha256 {version.sha256}"
        )
        if version.parent is not None:
            self.stdout.write(f"parent {version.parent.name}")
        if version.notes:
            self.stdout.write(version.notes)
