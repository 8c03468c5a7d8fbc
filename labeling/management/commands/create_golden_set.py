from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from assay.display import in_number
from assay.inputs import whole_number
from labeling.models import GoldenSet, Rubric
from labeling.roles import reviewer_list_problem


class Command(BaseCommand):
    help = "Create (or update) a golden set: surface, locale scope, rubric, k, dual-labeling rate, people."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--surface", required=True)
        parser.add_argument("--rubric", required=True, help="name@version, e.g. help-center@1")
        parser.add_argument("--locales", default="", help="comma-separated; empty means any locale")
        parser.add_argument("--k", type=int, default=10)
        parser.add_argument("--relevant-min-grade", type=int, default=2)
        parser.add_argument("--dual-rate", type=float, default=0.2)
        parser.add_argument("--raters", default="", help="comma-separated usernames")
        parser.add_argument("--reviewers", default="", help="comma-separated usernames")

    def handle(self, *args: Any, slug: str, **o: Any) -> None:
        name, _, version = o["rubric"].partition("@")
        number = whole_number(version, low=1)  # `help-center@²` names no version, as `@x` does
        rubric = Rubric.objects.filter(name=name, version=number).first() if number else None
        if rubric is None:
            raise CommandError(f"no rubric {o['rubric']!r}; import it first (import_rubric)")
        if not 0 <= o["dual_rate"] <= 1:
            raise CommandError("--dual-rate must be between 0 and 1")
        if o["k"] < 1:
            raise CommandError("--k must be at least 1")
        # Every person is checked before anything is written: a refusal leaves no set behind.
        people = {}
        for field, names in (("raters", o["raters"]), ("reviewers", o["reviewers"])):
            wanted = [n.strip() for n in names.split(",") if n.strip()]
            users = list(get_user_model().objects.filter(username__in=wanted))
            missing = sorted(set(wanted) - {u.username for u in users})
            if missing:
                raise CommandError(f"--{field}: no {in_number(len(missing), 'user')} {', '.join(missing)}")
            people[field] = users
        if problem := reviewer_list_problem(people["reviewers"]):
            raise CommandError(f"--reviewers: {problem}")
        with transaction.atomic():
            golden_set, created = GoldenSet.objects.update_or_create(
                slug=slug,
                defaults={
                    "name": o["name"] or slug,
                    "surface": o["surface"],
                    "rubric": rubric,
                    "locales": [x.strip() for x in o["locales"].split(",") if x.strip()],
                    "k": o["k"],
                    "relevant_min_grade": o["relevant_min_grade"],
                    "dual_rate": o["dual_rate"],
                },
            )
            golden_set.raters.add(*people["raters"])
            golden_set.reviewers.add(*people["reviewers"])
        self.stdout.write(f"{'created' if created else 'updated'} golden set {slug}")
