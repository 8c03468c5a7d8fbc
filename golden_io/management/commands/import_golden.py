"""`manage.py import_golden SET FILE`: a golden file, or judgments in another tool's format, into a set's
frozen labels (docs/labeling.md, "Imports"). Merges by default (`--replace` makes the set's labels the
file's); shows what it would change first and writes only once confirmed (`--yes`, or an answer at the
prompt); `--dry-run` shows and writes nothing. `import_golden SET --undo` takes the latest import back."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from assay.display import counted
from golden_io import services
from golden_io.foreign import JudgmentsFormat
from labeling.management.commands._common import finish, golden_set_get, read_file

# How many changes of each kind the command lists (the counts give them all).
SHOWN = 50


class Command(BaseCommand):
    help = (
        "Import a golden file (or another tool's judgments, --from) into a golden set: merged by default, "
        "shown first, written when confirmed. --undo takes back the set's latest import."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        from assay.convert.formats import upload_formats

        parser.add_argument("golden_set", help="the golden set's slug")
        parser.add_argument("path", nargs="?", help="the file (not with --undo)")
        readable = [f.name for f in upload_formats()]
        parser.add_argument(
            "--from",
            dest="fmt",
            default="golden",
            choices=readable,
            help="the file's format (default golden)",
        )
        parser.add_argument("--scale", help="MIN..MAX: the ratings' range, read onto the rubric's scale")
        parser.add_argument(
            "--map", action="append", default=[], metavar="FROM=TO", help="read rating FROM as grade TO"
        )
        parser.add_argument("--topics", help="trec-qrels: the topics file, qid<TAB>text a line")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="the set's labels become exactly the file's (every other label is removed); default: merge",
        )
        parser.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")
        parser.add_argument("--yes", action="store_true", help="write without asking")
        parser.add_argument("--undo", action="store_true", help="take back the set's latest import")

    def handle(self, *args: Any, golden_set: str, path: str | None, **options: Any) -> None:
        target = golden_set_get(golden_set)
        if options["undo"]:
            if path:
                raise CommandError("--undo takes no file: it takes back the set's latest import")
            self._undo(target, options)
            return
        if not path:
            raise CommandError("the file to import is missing: import_golden SET FILE")
        report, changes, record = services.golden_import_preview(
            golden_set=target,
            data=read_file(path),
            source=path,
            by=None,
            fmt=_format(options),
            mode=services.REPLACE if options["replace"] else services.MERGE,
        )
        if not report.ok or changes is None or record is None:
            if changes is not None:
                self.stdout.write(changes_text(changes))
            finish(self, report)
            return
        self.stdout.write(f"{path} would change golden set {target.slug}:\n" + changes_text(changes))
        if not self._confirmed(options, "Write these changes?"):
            services.golden_import_discard(record=record)
            return
        written, _ = services.golden_import_confirm(record=record, digest=changes.digest())
        finish(self, written)
        self.stdout.write(f"Undo with: python manage.py import_golden {target.slug} --undo")

    def _undo(self, target: Any, options: dict[str, Any]) -> None:
        record = services.import_undoable(golden_set=target)
        if record is None:
            raise CommandError(f"golden set {target.slug} has no import to undo")
        plan = services.import_undo_plan(record=record)
        self.stdout.write(
            f"Undoing the import of {record.source} ({record.applied:%Y-%m-%d %H:%M} UTC) would change:\n"
            + changes_text(plan.changes)
        )
        if not self._confirmed(options, "Undo it?"):
            return
        report, _ = services.golden_import_undo(record=record, by=None)
        finish(self, report)

    def _confirmed(self, options: dict[str, Any], question: str) -> bool:
        """--dry-run: no; --yes: yes; at a terminal, the answer; otherwise an error naming --yes."""
        if options["dry_run"]:
            self.stdout.write("Dry run: nothing was written.")
            return False
        if options["yes"]:
            return True
        if not sys.stdin.isatty():
            raise CommandError(
                "nothing was written: pass --yes to write these changes (or --dry-run to only see them)"
            )
        answer = input(f"{question} [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            self.stdout.write("Nothing was written.")
            return False
        return True


def _format(options: dict[str, Any]) -> JudgmentsFormat:
    from assay.convert.core import parse_map_options, parse_scale_option
    from assay.golden.model import Scale

    topics = options.get("topics")
    try:
        scale = parse_scale_option(options["scale"]) if options.get("scale") else None
        mapping = parse_map_options(options.get("map") or [], Scale(-(2**31), 2**31 - 1))
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    return JudgmentsFormat(
        name=options["fmt"],
        scale=scale,
        mapping=mapping,
        topics=(topics, read_file(topics)) if topics else None,
        names=("--scale", "--map"),
    )


def changes_text(changes: services.ImportChanges, shown: int = SHOWN) -> str:
    """The preview as text: the counts, then the first `shown` changes of each kind."""
    if changes.empty:
        return "  nothing would change\n"
    lines = [f"  {name}: {n}" for name, n in changes.counts().items() if n]
    for kind in ("added", "changed", "removed"):
        items = changes.labels_of(kind)
        for c in items[:shown]:
            grades = {"added": f"{c.new}", "changed": f"{c.old} -> {c.new}", "removed": f"{c.old}"}[kind]
            lines.append(f"  label {kind}: {c.query_id} / {c.doc_id}: {grades}")
        if len(items) > shown:
            lines.append(f"  ... and {counted(len(items) - shown, 'more label')} {kind}")
    lines += [f"  query created: {query_id} {text!r}" for query_id, text in changes.queries_created[:shown]]
    lines += [f"  query removed: {query_id}" for query_id in changes.queries_removed[:shown]]
    lines += [f"  {f.query_id or 'set'}.{f.field}: {f.old!r} -> {f.new!r}" for f in changes.fields[:shown]]
    return "\n".join(lines) + "\n"
