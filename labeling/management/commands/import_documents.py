from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from labeling.management.commands._common import finish, golden_set_get, read_file
from labeling.services import documents_import


class Command(BaseCommand):
    help = "Import documents (JSONL: id, title, key, url, snippet, body, fields) into a golden set."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("golden_set", help="the golden set's slug")
        parser.add_argument("path", help="a JSONL file, one document per line")

    def handle(self, *args: Any, golden_set: str, path: str, **options: Any) -> None:
        target = golden_set_get(golden_set)
        finish(self, documents_import(golden_set=target, data=read_file(path), source=path))
