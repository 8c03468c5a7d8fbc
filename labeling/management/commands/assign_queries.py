from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from assay.display import in_number
from labeling.management.commands._common import golden_set_get
from labeling.services import assignments_create


class Command(BaseCommand):
    help = "Assign every pooled, unassigned query to a rater, and the dual-labeling sample to a second one."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("golden_set")
        parser.add_argument(
            "--raters", default="", help="comma-separated usernames; added to the set's raters"
        )

    def handle(self, *args: Any, golden_set: str, raters: str, **options: Any) -> None:
        target = golden_set_get(golden_set)
        wanted = [n.strip() for n in raters.split(",") if n.strip()]
        if wanted:
            users = list(get_user_model().objects.filter(username__in=wanted))
            missing = sorted(set(wanted) - {u.username for u in users})
            if missing:
                raise CommandError(f"--raters: no {in_number(len(missing), 'user')} {', '.join(missing)}")
            target.raters.add(*users)
        result = assignments_create(golden_set=target)
        self.stdout.write(f"assigned {result.summary()}")
        for note in result.notes:
            self.stdout.write(f"  note: {note}")
