from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from golden_io.services import golden_import
from labeling.management.commands._common import finish, golden_set_get, read_file


class Command(BaseCommand):
    help = "Import a golden file (JSON or JSONL): its queries and judgments become the set's frozen labels."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("golden_set", help="the golden set's slug")
        parser.add_argument("path", help="the golden file")

    def handle(self, *args: Any, golden_set: str, path: str, **options: Any) -> None:
        target = golden_set_get(golden_set)
        finish(self, golden_import(golden_set=target, data=read_file(path), source=path))
