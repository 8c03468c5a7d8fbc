"""`make run`'s demo: users, rubric, the help-center golden set with documents, frozen labels, candidate
pools and assignments, so the grading page has work on first start. Idempotent: run it every start."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from labeling import services
from labeling.models import GoldenSet, Query
from labeling.problems import ImportReport

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
SET_SLUG = "help-center"
# username -> (group, what they do); passwords are generated once per machine, never in the repo.
DEMO_USERS = {
    "rater1": ("raters", "grades queries"),
    "rater2": ("raters", "grades queries (the second rater on the dual sample)"),
    "reviewer": ("reviewers", "imports, assigns, reviews the help-center set"),
    "admin": ("admins", "everything, and the Django admin"),
}
# Two configurations of the demo search engine pool the candidates; raters never learn which is which.
DEMO_SYSTEMS = {"bm25": False, "bm25-rewrite": True}


def logins_path() -> Path:
    return Path(settings.VAR_DIR) / "demo-logins.json"


def demo_logins() -> dict[str, str]:
    """username -> password, created on first use and kept in var/demo-logins.json (mode 600)."""
    path = logins_path()
    logins: dict[str, str] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(
                f"{path} is unreadable ({exc}); delete it to generate new demo passwords"
            ) from exc
        if isinstance(loaded, dict):
            logins = {k: v for k, v in loaded.items() if isinstance(v, str)}
    if set(DEMO_USERS) - set(logins):
        for name in DEMO_USERS:
            logins.setdefault(name, secrets.token_urlsafe(12))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(logins, out, indent=2)
    path.chmod(0o600)
    return logins


def render_logins(logins: dict[str, str]) -> str:
    lines = [f"Demo logins (kept in {logins_path()}):"]
    for name, (group, what) in DEMO_USERS.items():
        lines.append(f"  {name:<9} {logins[name]:<18} {group}: {what}")
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Load the demo (idempotent) and print the demo logins."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--print-logins", action="store_true", help="only print the logins")
        parser.add_argument("--demo-dir", default=str(DEMO_DIR), help="where corpus.jsonl, golden.json are")

    def handle(self, *args: Any, print_logins: bool, demo_dir: str, **options: Any) -> None:
        logins = demo_logins()
        if not print_logins:
            summary = self._load(Path(demo_dir), logins)
            self.stdout.write(self.style.SUCCESS(summary))
        self.stdout.write(render_logins(logins))

    @transaction.atomic
    def _load(self, demo: Path, logins: dict[str, str]) -> str:
        users = {name: _user(name, group, logins[name]) for name, (group, _) in DEMO_USERS.items()}
        rubric, report = services.rubric_import(data=_read(demo / "rubric.json"), source="demo/rubric.json")
        _check(report)
        assert rubric is not None
        golden_path = demo / "golden.json"
        golden_set, _ = GoldenSet.objects.update_or_create(
            slug=SET_SLUG,
            defaults={
                "name": "Help center",
                "surface": "help-center",
                "rubric": rubric,
                "locales": _golden_locales(golden_path),
                "dual_rate": 0.25,
            },
        )
        golden_set.raters.add(users["rater1"], users["rater2"])
        golden_set.reviewers.add(users["reviewer"])
        _check(
            services.documents_import(
                golden_set=golden_set, data=_read(demo / "corpus.jsonl"), source="corpus"
            )
        )
        _check(
            services.golden_import(golden_set=golden_set, data=_read(golden_path), source="demo/golden.json")
        )
        for system, rewrite in DEMO_SYSTEMS.items():
            _check(
                services.pool_import_rankings(
                    golden_set=golden_set,
                    rankings=_demo_rankings(demo, golden_set, rewrite=rewrite),
                    system=system,
                )
            )
        assigned = services.assignments_create(golden_set=golden_set)
        n_docs, n_queries = golden_set.documents.count(), golden_set.queries.count()
        return (
            f"Demo loaded: golden set {SET_SLUG!r} with {n_docs} documents, {n_queries} queries, "
            f"frozen labels {golden_set.frozen_version}; "
            f"new assignments: {assigned.primary} primary, {assigned.second} second."
        )


def _user(username: str, group: str, password: str) -> User:
    user, _ = User.objects.get_or_create(username=username, defaults={"email": f"{username}@demo.invalid"})
    if not user.check_password(password):
        user.set_password(password)
    if group == "admins":
        user.is_staff = user.is_superuser = True
    user.save()
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CommandError(f"demo file missing: {path} ({exc.strerror})") from exc


def _check(report: ImportReport) -> None:
    if not report.ok:
        raise CommandError(report.render_text())


def _golden_locales(path: Path) -> list[str]:
    """The locale scope of the demo set: every locale its golden file uses."""
    from golden_io.format import GoldenFormatError, parse

    try:
        golden = parse(_read(path))
    except GoldenFormatError as exc:
        raise CommandError(f"{path}:\n{exc}") from exc
    return sorted({q.locale for q in golden.queries if q.locale})


def _demo_rankings(demo: Path, golden_set: GoldenSet, *, rewrite: bool) -> dict[str, list[str]]:
    """Each active query's top 20 from the demo search engine, run in-process (no server needed)."""
    from demo import search_service

    docs = search_service.load_corpus(demo / "corpus.jsonl")
    index = search_service.build_index(docs)
    synonyms = search_service.load_synonyms(demo / "synonyms.json") if rewrite else None
    rankings: dict[str, list[str]] = {}
    for q in golden_set.queries.filter(status=Query.Status.ACTIVE).order_by("external_id"):
        result = search_service.search(
            index,
            q.text,
            filters=q.filters,
            size=services.POOL_DEPTH,
            locale=q.locale or None,
            rewrite=rewrite,
            synonyms=synonyms,
        )
        rankings[q.external_id] = [hit.id for hit in result.hits]
    return rankings
