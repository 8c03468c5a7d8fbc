"""Diff two golden files like tests (pure, no Django): what a new golden version changes.

Queries are matched by id, judgments by (query id, doc id). Judgment changes are listed only for queries
in both files: an added or retired query is one entry, with its judgment count. The version label is
shown but is not a change (two versions with the same content diff as empty). Every list is sorted by
query id then doc id, naturally (q-2 before q-10), so the same two files always give the same diff.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assay.golden.fields import QUERY_FIELDS
from assay.golden.format import canonical_weight, natural_key
from assay.golden.model import GoldenFile, GoldenQuery, Scale

# Query fields compared as metadata, in the canonical dump's order; `tier` has its own list (TierMove), the
# id is what pairs the queries and the judgments are the label changes.
QUERY_METADATA = tuple(f for f in QUERY_FIELDS if f not in ("id", "tier", "judgments"))
FILE_FIELDS = ("k", "relevant_min_grade", "scale", "rubric")
_CHANGES = (
    "file_changes",
    "queries_added",
    "queries_retired",
    "tier_moves",
    "query_changes",
    "judgments_added",
    "judgments_removed",
    "judgments_regraded",
    "keys_changed",
    "sources_changed",
)


@dataclass(frozen=True, slots=True)
class QueryEntry:
    """A query added or retired, with enough to recognise it in a review."""

    id: str
    text: str
    tier: str
    judgments: int


@dataclass(frozen=True, slots=True)
class TierMove:
    query_id: str
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class FieldChange:
    """A changed field of a query (`query_id` set) or of the file (`query_id` None).

    Values are as a golden file writes them (JSON data): scale {"min", "max"}, tags a list, weight 2 not 2.0.
    """

    query_id: str | None
    field: str
    old: Any
    new: Any


@dataclass(frozen=True, slots=True)
class JudgmentChange:
    """A judgment added (`old` None), removed (`new` None) or regraded (both set)."""

    query_id: str
    doc_id: str
    old: int | None
    new: int | None


@dataclass(frozen=True, slots=True)
class KeyChange:
    """The durable key of a judgment changed (or appeared / went away) while its doc id stayed."""

    query_id: str
    doc_id: str
    old: str | None
    new: str | None


@dataclass(frozen=True, slots=True)
class SourceChange:
    """Who decided a judgment changed while its doc id stayed: `None` for humans, "judge" for a qualified
    judge (the file's `source`), e.g. humans graded a pair a judge had filled."""

    query_id: str
    doc_id: str
    old: str | None
    new: str | None


@dataclass(frozen=True, slots=True)
class GoldenDiff:
    old_version: str
    new_version: str
    old_queries: int
    new_queries: int
    file_changes: tuple[FieldChange, ...] = ()
    queries_added: tuple[QueryEntry, ...] = ()
    queries_retired: tuple[QueryEntry, ...] = ()
    tier_moves: tuple[TierMove, ...] = ()
    query_changes: tuple[FieldChange, ...] = ()
    judgments_added: tuple[JudgmentChange, ...] = ()
    judgments_removed: tuple[JudgmentChange, ...] = ()
    judgments_regraded: tuple[JudgmentChange, ...] = ()
    keys_changed: tuple[KeyChange, ...] = ()
    sources_changed: tuple[SourceChange, ...] = ()

    @property
    def is_empty(self) -> bool:
        """No content change (the version label alone does not count)."""
        return not any(getattr(self, name) for name in _CHANGES)

    @property
    def counts(self) -> dict[str, int]:
        relabeled = {
            c.query_id for c in (*self.judgments_added, *self.judgments_removed, *self.judgments_regraded)
        }
        up = sum(
            1 for c in self.judgments_regraded if c.new is not None and c.old is not None and c.new > c.old
        )
        counts = {name: len(getattr(self, name)) for name in _CHANGES}
        counts.update(
            old_queries=self.old_queries,
            new_queries=self.new_queries,
            queries_changed=len({c.query_id for c in self.query_changes}),
            queries_relabeled=len(relabeled),
            regraded_up=up,
            regraded_down=len(self.judgments_regraded) - up,
        )
        return counts

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data: the lists (values as they are written in a golden file) and the counts."""
        out: dict[str, Any] = {"old_version": self.old_version, "new_version": self.new_version}
        for name in _CHANGES:
            out[name] = [{key: getattr(item, key) for key in item.__slots__} for item in getattr(self, name)]
        out["counts"] = self.counts
        out["is_empty"] = self.is_empty
        return out

    def summary(self) -> str:
        """One paragraph with the counts (a git commit message body, a review page's lead)."""
        head = f"Golden {self.old_version} -> {self.new_version} ({_n(self.old_queries, 'query', 'queries')}"
        head += "" if self.old_queries == self.new_queries else f" -> {self.new_queries}"
        head += ")"
        if self.is_empty:
            return f"{head}: no changes."
        c = self.counts
        parts: list[str] = []
        if self.queries_added or self.queries_retired:
            parts.append(
                f"{_n(c['queries_added'], 'query', 'queries')} added, {c['queries_retired']} retired"
            )
        if c["queries_relabeled"]:
            parts.append(
                f"judgments changed in {_n(c['queries_relabeled'], 'query', 'queries')}: "
                f"{c['judgments_regraded']} regraded ({c['regraded_up']} up, {c['regraded_down']} down), "
                f"{c['judgments_added']} added, {c['judgments_removed']} removed"
            )
        if self.keys_changed:
            parts.append(f"{_n(c['keys_changed'], 'durable key', 'durable keys')} changed")
        if self.sources_changed:
            moves = Counter((source_text(s.old), source_text(s.new)) for s in self.sources_changed)
            by_kind = ", ".join(f"{old} -> {new}: {n}" for (old, new), n in sorted(moves.items()))
            parts.append(f"{_n(c['sources_changed'], 'label source', 'label sources')} changed ({by_kind})")
        if self.tier_moves:
            moves = Counter((m.old, m.new) for m in self.tier_moves)
            by_kind = ", ".join(f"{old} -> {new}: {n}" for (old, new), n in sorted(moves.items()))
            parts.append(f"{_n(c['tier_moves'], 'tier move', 'tier moves')} ({by_kind})")
        if self.query_changes:
            fields = sorted({ch.field for ch in self.query_changes}, key=QUERY_METADATA.index)
            parts.append(
                f"{_n(c['query_changes'], 'metadata change', 'metadata changes')} in "
                f"{_n(c['queries_changed'], 'query', 'queries')} ({', '.join(fields)})"
            )
        if self.file_changes:
            parts.append(
                "file: "
                + ", ".join(f"{ch.field} {_text(ch.old)} -> {_text(ch.new)}" for ch in self.file_changes)
            )
        return f"{head}: {'; '.join(parts)}."

    def to_markdown(self) -> str:
        """The diff for a review page or a pull request: the summary, then one table per kind of change."""
        lines = [f"## Golden {_md(self.old_version)} -> {_md(self.new_version)}", "", self.summary()]

        def table(title: str, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
            if not rows:
                return
            lines.extend(["", f"### {title} ({len(rows)})", "", _row(header), _row(("---",) * len(header))])
            lines.extend(_row(tuple(_md(v) for v in row)) for row in rows)

        table("File", ("field", "old", "new"), [(c.field, c.old, c.new) for c in self.file_changes])
        table(
            "Queries added",
            ("query", "text", "tier", "judgments"),
            [(q.id, q.text, q.tier, q.judgments) for q in self.queries_added],
        )
        table(
            "Queries retired",
            ("query", "text", "tier", "judgments"),
            [(q.id, q.text, q.tier, q.judgments) for q in self.queries_retired],
        )
        table("Tier moves", ("query", "from", "to"), [(m.query_id, m.old, m.new) for m in self.tier_moves])
        table(
            "Query changes",
            ("query", "field", "old", "new"),
            [(c.query_id, c.field, c.old, c.new) for c in self.query_changes],
        )
        relabels = sorted(
            (*self.judgments_regraded, *self.judgments_added, *self.judgments_removed),
            key=lambda c: (natural_key(c.query_id), natural_key(c.doc_id)),
        )
        table(
            "Judgments",
            ("query", "document", "old grade", "new grade"),
            [(c.query_id, c.doc_id, c.old, c.new) for c in relabels],
        )
        table(
            "Durable keys",
            ("query", "document", "old key", "new key"),
            [(c.query_id, c.doc_id, c.old, c.new) for c in self.keys_changed],
        )
        table(
            "Label sources",
            ("query", "document", "old source", "new source"),
            [(c.query_id, c.doc_id, source_text(c.old), source_text(c.new)) for c in self.sources_changed],
        )
        return "\n".join(lines) + "\n"


def diff(old: GoldenFile, new: GoldenFile) -> GoldenDiff:
    """What changes from `old` to `new` (both already validated GoldenFiles)."""
    old_q = {q.id: q for q in old.queries}
    new_q = {q.id: q for q in new.queries}
    common = sorted(old_q.keys() & new_q.keys(), key=natural_key)

    file_changes = tuple(
        FieldChange(None, name, _file_value(name, getattr(old, name)), _file_value(name, getattr(new, name)))
        for name in FILE_FIELDS
        if getattr(old, name) != getattr(new, name)
    )
    tier_moves = tuple(
        TierMove(qid, old_q[qid].tier, new_q[qid].tier)
        for qid in common
        if old_q[qid].tier != new_q[qid].tier
    )
    query_changes = tuple(
        FieldChange(
            qid,
            name,
            _file_value(name, getattr(old_q[qid], name)),
            _file_value(name, getattr(new_q[qid], name)),
        )
        for qid in common
        for name in QUERY_METADATA
        if getattr(old_q[qid], name) != getattr(new_q[qid], name)
    )

    added: list[JudgmentChange] = []
    removed: list[JudgmentChange] = []
    regraded: list[JudgmentChange] = []
    keys: list[KeyChange] = []
    sources: list[SourceChange] = []
    for qid in common:
        before = {j.doc_id: j for j in old_q[qid].judgments}
        after = {j.doc_id: j for j in new_q[qid].judgments}
        for doc in sorted(before.keys() | after.keys(), key=natural_key):
            a, b = before.get(doc), after.get(doc)
            if a is None:
                assert b is not None
                added.append(JudgmentChange(qid, doc, None, b.grade))
            elif b is None:
                removed.append(JudgmentChange(qid, doc, a.grade, None))
            else:
                if a.grade != b.grade:
                    regraded.append(JudgmentChange(qid, doc, a.grade, b.grade))
                if a.key != b.key:
                    keys.append(KeyChange(qid, doc, a.key, b.key))
                if a.source != b.source:
                    sources.append(SourceChange(qid, doc, a.source, b.source))

    return GoldenDiff(
        old_version=old.version,
        new_version=new.version,
        old_queries=len(old_q),
        new_queries=len(new_q),
        file_changes=file_changes,
        queries_added=_entries(new_q, new_q.keys() - old_q.keys()),
        queries_retired=_entries(old_q, old_q.keys() - new_q.keys()),
        tier_moves=tier_moves,
        query_changes=query_changes,
        judgments_added=tuple(added),
        judgments_removed=tuple(removed),
        judgments_regraded=tuple(regraded),
        keys_changed=tuple(keys),
        sources_changed=tuple(sources),
    )


def _entries(queries: Mapping[str, GoldenQuery], ids: set[str]) -> tuple[QueryEntry, ...]:
    return tuple(
        QueryEntry(qid, queries[qid].text, queries[qid].tier, len(queries[qid].judgments))
        for qid in sorted(ids, key=natural_key)
    )


def _file_value(name: str, value: Any) -> Any:
    """A field's value as a golden file writes it (JSON data): a scale as {"min", "max"}, weight 2.0 as 2."""
    if isinstance(value, Scale):
        return {"min": value.min, "max": value.max}
    if name == "weight":
        return canonical_weight(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def source_text(source: str | None) -> str:
    """A judgment's source in words: "humans" where the file names none."""
    return "humans" if source is None else source


def _text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value.keys() == {"min", "max"}:
        return f"{value['min']}..{value['max']}"  # a scale, as the error messages write it
    return json.dumps(value, ensure_ascii=False)


def _md(value: Any) -> str:
    """A table cell: no line breaks, pipes escaped, empty values shown as a dash."""
    if value is None:
        return "—"
    return _text(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(cells) + " |"


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"
