"""`manage.py api_token_create --user ci --name "CI of search-api" --scope read --scope runs:write`:
create an API token and print it (once: only its hash is stored)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from evaluation.runs.models import ApiToken
from evaluation.runs.tokens import TokenError, api_token_create


class Command(BaseCommand):
    help = "Create an API token for a user and print it (it is never shown again)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--user", required=True, help="username the token acts as")
        parser.add_argument("--name", required=True, help="what the token is for")
        parser.add_argument(
            "--scope",
            action="append",
            dest="scopes",
            choices=list(ApiToken.SCOPES),
            help="repeat for several; default: read",
        )

    def handle(self, *args: Any, user: str, name: str, scopes: list[str] | None, **options: Any) -> None:
        owner = get_user_model().objects.filter(username=user).first()
        if owner is None:
            raise CommandError(f"--user: no user named {user!r}")
        try:
            token, raw = api_token_create(user=owner, name=name, scopes=scopes or ["read"])
        except TokenError as exc:
            raise CommandError("; ".join(exc.problems)) from exc
        self.stderr.write(
            f"Token {token.name!r} for {owner.get_username()} with scopes {', '.join(token.scopes)} "
            "(shown once; only its hash is stored):"
        )
        self.stdout.write(raw)
