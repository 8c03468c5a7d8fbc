"""The freeze: a golden set's consolidated labels written as a new immutable version and as the set's
frozen labels, serialised on the set's row (docs/golden-versions.md).

Part of `golden_io.services`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from django.contrib.auth.models import User
from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone

from assay.display import counted
from assay.golden.format import GoldenFormatError, dump_json
from golden_io import selectors
from golden_io.models import (
    GoldenVersion,
    version_name_problem,
)
from golden_io.selectors import UnresolvedLabel, WorkingGolden, WorkingGoldenInvalid
from labeling.models import FrozenLabel, GoldenSet, Query
from labeling.selectors import proposals_pending_count
from labeling.selectors.labels import HUMAN
from labeling.services import (
    query_move_tier,
)

REJUDGE_SYSTEM = "stale"  # pool provenance of a document queued again because its content changed


class FreezeError(Exception):
    """The freeze was refused; nothing was written. `problems` lists every reason."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class FreezeUnchanged(FreezeError):
    """The labels, queries, documents and settings are the parent version's: a freeze would only rename
    them (`_unchanged` says what counts). `not_done` counts the documents graded on work not marked done,
    which would have changed it once done."""

    def __init__(self, parent: GoldenVersion, not_done: int = 0) -> None:
        self.parent = parent
        problems = [f"nothing changed since version {parent.name}: not frozen"]
        if not_done:
            problems.append(not_done_text(not_done))
        super().__init__(problems)


def not_done_text(n: int) -> str:
    """The freeze's words for the documents whose grades were left out as work not marked done."""
    return (
        f"{counted(n, 'document')} graded on work not marked done yet {'was' if n == 1 else 'were'} left"
        " out: a rater's grades count once the rater marks the query done"
    )


class FreezeBlocked(FreezeError):
    """Core queries have documents without a final grade; `unresolved` lists each (query, document)."""

    def __init__(self, unresolved: Sequence[UnresolvedLabel]) -> None:
        self.unresolved = list(unresolved)
        queries = len({u.query_id for u in unresolved})
        super().__init__(
            [
                f"{counted(len(unresolved), 'document')} in {queries} core "
                f"{'query' if queries == 1 else 'queries'} {'has' if len(unresolved) == 1 else 'have'} no "
                "final grade yet: resolve them, or freeze with quarantine_unresolved to move those "
                "queries to the shadow tier first",
                *(str(u) for u in unresolved),
            ]
        )


# ------------------------------------------------------------------------------------------ freeze


def version_name_next(*, golden_set: GoldenSet, on: dt.date) -> str:
    """`2026-08-01`, then `2026-08-01.2`, `.3`... for further freezes on the same day."""
    base = on.isoformat()
    taken = set(
        GoldenVersion.objects.filter(golden_set=golden_set, name__startswith=base).values_list(
            "name", flat=True
        )
    )
    if base not in taken:
        return base
    suffixes = [int(m.group(1)) for name in taken if (m := re.fullmatch(re.escape(base) + r"\.(\d+)", name))]
    return f"{base}.{max([1, *suffixes]) + 1}"


def golden_version_freeze(
    *,
    golden_set: GoldenSet,
    by: User | None,
    name: str | None = None,
    notes: str = "",
    quarantine_unresolved: bool = False,
    on: dt.date | None = None,
) -> GoldenVersion:
    """Cut an immutable version from the consolidated labels, the active queries and their tiers.

    `name` defaults to the date (`on`, default today in the configured time zone), `.2` etc. for more
    on the same day. Unresolved labels in core queries refuse the freeze (`FreezeBlocked`) unless
    `quarantine_unresolved`, which first moves those queries to shadow (listed in the notes).
    Content identical to the newest version's refuses the freeze (`FreezeUnchanged`, naming it).
    Afterwards the set's frozen labels and `frozen_version` are the new version's.
    """
    try:
        return _freeze(
            golden_set=golden_set,
            by=by,
            name=name,
            notes=notes,
            quarantine_unresolved=quarantine_unresolved,
            on=on,
        )
    except OperationalError as exc:
        # SQLite (`make run`) locks the whole database for a writer instead of waiting on the set's row
        # lock as PostgreSQL does: the second of two simultaneous freezes is refused, nothing written.
        if "locked" not in str(exc):
            raise
        problem = f"another write held the database ({exc}): nothing was frozen; try again"
        raise FreezeError([problem]) from exc


@transaction.atomic
def _freeze(
    *,
    golden_set: GoldenSet,
    by: User | None,
    name: str | None,
    notes: str,
    quarantine_unresolved: bool,
    on: dt.date | None,
) -> GoldenVersion:
    # The lock serialises freezes of one set: naming, parent and content are read under it.
    locked = GoldenSet.objects.select_for_update(no_key=True).select_related("rubric").get(pk=golden_set.pk)
    parent = selectors.version_latest(golden_set=locked)
    if name is None:
        name = version_name_next(golden_set=locked, on=on or timezone.localdate())
    problems: list[str] = []
    if problem := version_name_problem(name):
        problems.append(problem)
    elif GoldenVersion.objects.filter(golden_set=locked, name=name).exists():
        problems.append(
            f"golden set {locked.slug} already has a version {name!r}: versions are never replaced"
        )
    if problems:
        raise FreezeError(problems)
    try:
        working = selectors.working_golden_get(golden_set=locked, name=name)
    except WorkingGoldenInvalid as exc:
        raise FreezeError(exc.problems) from None
    extra_notes: list[str] = []
    if working.blocked:
        if not quarantine_unresolved:
            raise FreezeBlocked(working.blocked)
        extra_notes.append(_quarantine(locked, working, name, by))
        working = selectors.working_golden_get(golden_set=locked, name=name)
        if working.blocked:  # labels changed under us in a way the lock does not cover: refuse, roll back
            raise FreezeBlocked(working.blocked)
    if parent is not None and _unchanged(parent, working):
        raise FreezeUnchanged(parent, len(working.not_done))
    if working.not_done:
        extra_notes.append(
            f"Left out: {not_done_text(len(working.not_done))}.\n"
            + "\n".join(f"- {n}" for n in working.not_done)
        )
    if working.left_out:
        extra_notes.append(
            "Left out (no final grade yet, shadow or challenge queries):\n"
            + "\n".join(f"- {u}" for u in working.left_out)
        )
    pending = proposals_pending_count(golden_set=locked)
    if pending:
        extra_notes.append(
            f"{counted(pending, 'proposed label change')} {'was' if pending == 1 else 'were'} pending"
            " review: those documents keep their earlier labels until a reviewer accepts the change."
        )
    content = dump_json(working.golden)
    try:
        with transaction.atomic():
            version = GoldenVersion.objects.create(
                golden_set=locked,
                name=name,
                content=content,
                sha256=hashlib.sha256(content).hexdigest(),
                parent=parent,
                rubric_name=locked.rubric.name,
                rubric_version=locked.rubric.version,
                k=working.golden.k,
                relevant_min_grade=working.golden.relevant_min_grade,
                scale_min=working.golden.scale.min,
                scale_max=working.golden.scale.max,
                counts=working.counts | {"pending_proposals": pending},
                documents=working.documents,
                notes="\n\n".join(part for part in (notes.strip(), *extra_notes) if part),
                created_by=by,
            )
    except IntegrityError:
        # Only reachable without the row lock (SQLite ignores select_for_update): same name, raced.
        raise FreezeError([f"golden set {locked.slug} already has a version {name!r}"]) from None
    _replace_frozen_labels(working, name)
    locked.frozen_version = name
    locked.save(update_fields=["frozen_version"])
    golden_set.frozen_version = name
    return version


def _unchanged(parent: GoldenVersion, working: WorkingGolden) -> bool:
    """Is the working golden the parent's content? Content is what a version holds about the labels:
    the golden file but for its version name (the queries with every field and tier, their labels,
    k, the cutoff, the scale, the rubric) and the judged documents (doc id -> key and judged content
    hash). Per-version metadata is not content: name, notes, counts (pending proposals included), who
    froze it and when."""
    if parent.documents != working.documents:
        return False
    try:
        frozen = parent.golden()
    except GoldenFormatError:  # a version the current format cannot read back: something changed
        return False
    return replace(frozen, version=working.golden.version) == working.golden


def _quarantine(golden_set: GoldenSet, working: WorkingGolden, name: str, by: User | None) -> str:
    """Move the core queries with unresolved labels to shadow; the text for the version's notes."""
    by_query: dict[str, list[UnresolvedLabel]] = {}
    for u in working.blocked:
        by_query.setdefault(u.query_id, []).append(u)
    lines = [f"Moved to shadow before freezing (unresolved labels in core queries, freeze {name}):"]
    for query_id, items in by_query.items():
        reason = f"freeze {name}: no final grade for " + ", ".join(f"{u.doc_id} ({u.reason})" for u in items)
        for query in Query.objects.filter(golden_set=golden_set, external_id=query_id):
            query_move_tier(query=query, tier=Query.Tier.SHADOW, by=by, reason=reason)
        lines.append(f"- {query_id}: " + ", ".join(f"{u.doc_id} ({u.reason})" for u in items))
    return "\n".join(lines)


def _replace_frozen_labels(working: WorkingGolden, name: str) -> None:
    """The version's judgments become the frozen labels of its queries (retired queries keep theirs).

    Only what changed is written (deleted, regraded, created), then one UPDATE stamps the version name:
    re-creating every row would cost seconds on a large set for a freeze that changed a few grades.
    """
    query_pks = [working.query_pks[q.id] for q in working.golden.queries]
    # (grade, source, judge pk, judge name) per pair: who decided a label is frozen with it.
    wanted: dict[tuple[int, int], _Frozen] = {}
    for q in working.golden.queries:
        for j in q.judgments:
            judge_id, judge_name = working.judged_by.get((q.id, j.doc_id), (None, ""))
            pair = (working.query_pks[q.id], working.document_pks[j.doc_id])
            wanted[pair] = _Frozen(j.grade, j.source or HUMAN, judge_id, judge_name)
    existing: dict[tuple[int, int], tuple[int, _Frozen]] = {}
    for chunk in _chunks(query_pks):
        rows = FrozenLabel.objects.filter(query_id__in=chunk).values_list(
            "pk", "query_id", "document_id", "grade", "source", "judge_id", "judge_name"
        )
        existing.update({(q, d): (pk, _Frozen(g, s, j, n)) for pk, q, d, g, s, j, n in rows})
    gone = [pk for pair, (pk, _) in existing.items() if pair not in wanted]
    changed: dict[_Frozen, list[int]] = {}
    for pair, (pk, held) in existing.items():
        if pair in wanted and wanted[pair] != held:
            changed.setdefault(wanted[pair], []).append(pk)
    for chunk in _chunks(gone):
        FrozenLabel.objects.filter(pk__in=chunk).delete()
    for label, pks in changed.items():
        for chunk in _chunks(pks):
            FrozenLabel.objects.filter(pk__in=chunk).update(**label._asdict())
    for chunk in _chunks(query_pks):
        FrozenLabel.objects.filter(query_id__in=chunk).update(version=name)
    FrozenLabel.objects.bulk_create(
        [
            FrozenLabel(query_id=q, document_id=d, version=name, **label._asdict())
            for (q, d), label in wanted.items()
            if (q, d) not in existing
        ],
        batch_size=1000,
    )


class _Frozen(NamedTuple):
    """A frozen label's values beside its pair: the grade and who decided it."""

    grade: int
    source: str
    judge_id: int | None
    judge_name: str


def _chunks(values: Sequence[int], size: int = 10_000) -> list[Sequence[int]]:
    """Slices of `values` small enough for one statement's parameters (PostgreSQL allows 65535)."""
    return [values[i : i + size] for i in range(0, len(values), size)]
