from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from labeling.management.commands._common import finish, read_file
from labeling.services import rubric_import


class Command(BaseCommand):
    help = "Import a rubric (JSON: name, version, scale, grades with meaning and 3+3 examples)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("path")

    def handle(self, *args: Any, path: str, **options: Any) -> None:
        _, report = rubric_import(data=read_file(path), source=path)
        finish(self, report)
