from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from assay.jsonin import JsonInputError, json_or_text
from labeling.management.commands._common import finish, golden_set_get, read_file
from labeling.services import POOL_DEPTH, pool_add_judged, pool_fetch, pool_import_run


class Command(BaseCommand):
    help = (
        "Build candidate pools: per query the union of several systems' top results (TREC run files, or "
        "search URLs called through the harness), plus every document judged for it before."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("golden_set")
        parser.add_argument(
            "--run", action="append", default=[], metavar="[SYSTEM=]FILE", help="a TREC run file (repeatable)"
        )
        parser.add_argument(
            "--search-url",
            action="append",
            default=[],
            metavar="SYSTEM=URL",
            help="a search endpoint speaking the http_json contract (repeatable)",
        )
        parser.add_argument(
            "--param",
            action="append",
            default=[],
            metavar="SYSTEM:K=V",
            help="a body parameter for one system",
        )
        parser.add_argument("--depth", type=int, default=POOL_DEPTH)

    def handle(self, *args: Any, golden_set: str, **o: Any) -> None:
        target = golden_set_get(golden_set)
        if o["depth"] < 1:
            raise CommandError("--depth must be at least 1")
        params: dict[str, dict[str, Any]] = {}
        for spec in o["param"]:
            system, _, pair = spec.partition(":")
            key, sep, value = pair.partition("=")
            if not sep or not key:
                raise CommandError(f"--param {spec!r}: expected SYSTEM:KEY=VALUE")
            try:
                params.setdefault(system, {})[key] = json_or_text(value)
            except JsonInputError as exc:
                raise CommandError(f"--param {spec[:80]!r}: {exc}") from None
        for spec in o["run"]:
            system, sep, path = spec.partition("=")
            if not sep:
                system, path = Path(spec).stem, spec
            finish(
                self,
                pool_import_run(
                    golden_set=target, data=read_file(path), source=path, system=system, depth=o["depth"]
                ),
            )
        for spec in o["search_url"]:
            system, sep, url = spec.partition("=")
            if not sep or not url.startswith(("http://", "https://")):
                raise CommandError(f"--search-url {spec!r}: expected SYSTEM=http(s)://...")
            report = pool_fetch(
                golden_set=target, url=url, system=system, depth=o["depth"], params=params.get(system)
            )
            finish(self, report)
        if not o["run"] and not o["search_url"]:
            self.stdout.write(f"judged candidates added: {pool_add_judged(golden_set=target)}")
