from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from assay.golden.diff import diff, source_text
from golden_io import selectors
from golden_io.management.commands._common import version_get
from labeling.selectors import proposals_pending_count


class Command(BaseCommand):
    help = (
        "Diff two golden versions like tests: queries added and retired, judgments added, removed and "
        "regraded, tier moves, rubric and methodology changes. B may be 'working' (the labels the next "
        "freeze would take)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("old", help="SET@VERSION (or VERSION with --set)")
        parser.add_argument("new", help="SET@VERSION, VERSION, or 'working'")
        parser.add_argument("--set", dest="golden_set", default=None)
        parser.add_argument("--format", choices=["text", "markdown", "json"], default="text")
        parser.add_argument(
            "--exit-code", action="store_true", help="exit 1 when the two differ (like git diff --exit-code)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        old = version_get(options["old"], default_set=options["golden_set"])
        new_ref: str = options["new"]
        if new_ref.rpartition("@")[2] == selectors.WORKING:
            try:
                working = selectors.working_golden_get(golden_set=old.golden_set)
            except selectors.WorkingGoldenInvalid as exc:
                raise CommandError(str(exc)) from None
            change = diff(old.golden(), working.golden)
            pending_new = proposals_pending_count(golden_set=old.golden_set)
            not_done_new: int | None = len(working.not_done)
        else:
            new = version_get(new_ref, default_set=options["golden_set"] or old.golden_set.slug)
            if new.golden_set_id != old.golden_set_id:
                raise CommandError(f"{old} and {new} belong to different golden sets")
            change = selectors.version_diff(old=old, new=new)
            pending_new = new.counts.get("pending_proposals")
            not_done_new = new.counts.get(selectors.NOT_DONE_COUNT)
        # Proposed label changes a reviewer had not decided when each side was cut: their documents kept
        # the earlier labels (unknown for versions frozen before proposals existed). Documents graded on
        # work not marked done: those grades were left out (unknown for versions cut before that rule).
        pending = {"old": old.counts.get("pending_proposals"), "new": pending_new}
        not_done = {"old": old.counts.get(selectors.NOT_DONE_COUNT), "new": not_done_new}
        notes = _count_line("pending proposals (kept the earlier labels)", pending) + _count_line(
            "left out, graded on work not marked done", not_done
        )
        if options["format"] == "json":
            data = change.to_dict() | {"pending_proposals": pending, selectors.NOT_DONE_COUNT: not_done}
            self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
        elif options["format"] == "markdown":
            self.stdout.write(change.to_markdown() + notes)
        else:
            self.stdout.write(_text(change) + notes)
        if options["exit_code"] and not change.is_empty:
            raise SystemExit(1)


def _count_line(what: str, count: dict[str, int | None]) -> str:
    """`\n! <what>: old 0, new 3` when either side has some (`?`: the version did not record it)."""
    if not any(count.values()):
        return ""
    old, new = ("?" if n is None else str(n) for n in (count["old"], count["new"]))
    return f"\n! {what}: old {old}, new {new}"


def _text(change: Any) -> str:
    """The summary, then one line per change: + added, - removed, ~ changed (a test runner's diff)."""
    lines = [change.summary()]
    for f in change.file_changes:
        lines.append(f"~ file {f.field}: {f.old} -> {f.new}")
    lines += [f"+ query {q.id} ({q.tier}, {q.judgments} judgments): {q.text}" for q in change.queries_added]
    lines += [f"- query {q.id} ({q.tier}, {q.judgments} judgments): {q.text}" for q in change.queries_retired]
    lines += [f"~ tier {m.query_id}: {m.old} -> {m.new}" for m in change.tier_moves]
    lines += [f"~ query {f.query_id} {f.field}: {f.old} -> {f.new}" for f in change.query_changes]
    lines += [f"~ grade {j.query_id} {j.doc_id}: {j.old} -> {j.new}" for j in change.judgments_regraded]
    lines += [f"+ grade {j.query_id} {j.doc_id}: {j.new}" for j in change.judgments_added]
    lines += [f"- grade {j.query_id} {j.doc_id}: {j.old}" for j in change.judgments_removed]
    lines += [f"~ key {k.query_id} {k.doc_id}: {k.old} -> {k.new}" for k in change.keys_changed]
    lines += [
        f"~ source {s.query_id} {s.doc_id}: {source_text(s.old)} -> {source_text(s.new)}"
        for s in change.sources_changed
    ]
    return "\n".join(lines)
