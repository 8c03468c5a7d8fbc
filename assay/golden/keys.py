"""Durable keys: a golden version's judgments resolved to today's document ids (pure, no Django).

A golden version records, per judgment, the document id it had when frozen and (when the document has
one) its durable key: a canonical URL or external id that survives a re-ingest that renumbers ids.
At evaluation time `resolve_keys` maps each key to the document's live id. The rules:

- a judgment without a key is used as written (there is nothing to resolve it with);
- a key found in `live` gives the judgment the live id (listed in `remapped` when the id changed);
- a key that resolves to nothing is listed in `unresolved` and is never dropped or remapped silently:
  the judgment keeps the id it was frozen with (`kept=True`) unless that id now belongs to another
  document with a different key, in which case scoring it would grade that other document, so it is
  withheld from scoring (`kept=False`) and still listed;
- two judgments of one query that land on the same id (a keyed judgment resolved onto an id that an
  unkeyed judgment still carries) cannot both be scored: the resolved one wins and the other is listed
  with `kept=False`.

Every report that scores a resolved golden file shows `unresolved`; nothing leaves the file unlisted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from assay.golden.format import natural_key
from assay.golden.model import GoldenFile, Judgment
from assay.memo import ByIdentity

# `UnresolvedKey.reason` codes (the text beside each says it for people).
MISSING = "missing"  # the key is not among the live documents; the old id is kept
ID_TAKEN = "id_taken"  # the key is gone and its old id now belongs to another document: withheld
COLLISION = "collision"  # another judgment of the query resolved onto this id: withheld


@dataclass(frozen=True, slots=True)
class UnresolvedKey:
    """A judgment whose document could not be matched to a live document by its durable key."""

    query_id: str
    key: str | None  # None only for an unkeyed judgment displaced by a resolved one (COLLISION)
    doc_id: str  # the id the golden version recorded
    grade: int
    kept: bool  # True: still scored under `doc_id`; False: withheld from scoring
    reason: str  # MISSING, ID_TAKEN or COLLISION
    detail: str  # the whole story in words, for reports

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class Remap:
    """A judgment whose key resolved to a live id different from the one the version recorded."""

    query_id: str
    key: str
    old_doc_id: str
    new_doc_id: str

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class ResolvedGolden:
    """The golden file to score (live ids, withheld judgments left out) and what happened on the way."""

    golden: GoldenFile
    unresolved: tuple[UnresolvedKey, ...] = ()
    remapped: tuple[Remap, ...] = ()

    @property
    def withheld(self) -> tuple[UnresolvedKey, ...]:
        return tuple(u for u in self.unresolved if not u.kept)

    def to_dict(self) -> dict[str, Any]:
        """JSON data for a report: both lists and their counts (the golden file itself is not included)."""
        return {
            "unresolved": [u.to_dict() for u in self.unresolved],
            "remapped": [r.to_dict() for r in self.remapped],
            "counts": {
                "unresolved": len(self.unresolved),
                "withheld": len(self.withheld),
                "remapped": len(self.remapped),
            },
        }


def _check_live(live: Mapping[str, str]) -> dict[str, str]:
    """`live` inverted (id -> key); refuses a mapping that sends two keys to one id or has empty values."""
    owner: dict[str, str] = {}
    problems: list[str] = []
    for key, doc_id in live.items():
        if not isinstance(key, str) or not isinstance(doc_id, str) or not key or not doc_id:
            problems.append(f"live[{key!r}]: keys and ids must be non-empty strings, got {doc_id!r}")
        elif doc_id in owner:
            problems.append(f"live[{key!r}]: id {doc_id!r} is also the live id of key {owner[doc_id]!r}")
        else:
            owner[doc_id] = key
    if problems:
        raise ValueError("invalid live key map: " + "; ".join(problems))
    return owner


def _layout(golden: GoldenFile) -> tuple[tuple[int, ...], frozenset[int]]:
    """(the queries holding a keyed judgment, the queries whose doc ids are not strictly in natural order):
    the only queries `resolve_keys` may change under a map that gives every key its recorded id."""
    queries = golden.queries
    sizes = np.fromiter(map(len, map(attrgetter("judgments"), queries)), dtype=np.int64, count=len(queries))
    judgments = list(chain.from_iterable(map(attrgetter("judgments"), queries)))
    owner = np.repeat(np.arange(len(queries), dtype=np.int64), sizes)
    keys = list(map(attrgetter("key"), judgments))
    keyed = np.unique(owner[[key is not None for key in keys]]) if keys.count(None) < len(keys) else owner[:0]
    # Each doc id's place in the natural order of the distinct ids (natural_key once per distinct id),
    # then the queries where a place does not rise from one judgment to the next.
    docs = list(map(attrgetter("doc_id"), judgments))
    place = {doc: i for i, doc in enumerate(sorted(dict.fromkeys(docs), key=natural_key))}
    places = np.fromiter(map(place.__getitem__, docs), dtype=np.int64, count=len(docs))
    falls = np.flatnonzero(places[1:] <= places[:-1]) + 1
    unordered = owner[falls][owner[falls] == owner[falls - 1]]
    return tuple(keyed.tolist()), frozenset(unordered.tolist())


# Per golden object: a worker resolves the one golden version it holds for every run it scores.
_layout_of: ByIdentity[GoldenFile, tuple[tuple[int, ...], frozenset[int]]] = ByIdentity(_layout)


def resolve_keys(golden: GoldenFile, live: Mapping[str, str]) -> ResolvedGolden:
    """Map each keyed judgment to its live id (`live`: durable key -> current doc id); see the module doc.

    Raises ValueError when `live` is not a one-to-one map of non-empty strings. Lists are in query, then
    document order (natural: q-2 before q-10), so the same inputs always give the same report.
    """
    owner = _check_live(live)
    keyed, unordered = _layout_of(golden)
    # A query whose doc ids are in strict natural order (so no id twice), each keyed judgment resolving to
    # the id it has, comes out as it went in, with nothing listed: only the others are worked out (in
    # query order, as the lists' stable sorts below need). Without keys, or with a map that changes no
    # id, that is none of them.
    todo = set(unordered)
    for i in keyed:
        if any(j.key is not None and live.get(j.key) != j.doc_id for j in golden.queries[i].judgments):
            todo.add(i)
    if not todo:
        return ResolvedGolden(golden=golden)
    unresolved: list[UnresolvedKey] = []
    remapped: list[Remap] = []
    queries = list(golden.queries)
    changed = False
    natural = cache(natural_key)  # once per distinct doc id (they recur from query to query)
    for i in sorted(todo):
        query = queries[i]

        def listed(j: Judgment, kept: bool, reason: str, detail: str, qid: str = query.id) -> None:
            unresolved.append(UnresolvedKey(qid, j.key, j.doc_id, j.grade, kept, reason, detail))

        resolved: dict[str, Judgment] = {}  # live id -> the judgment resolved onto it by its key
        plain: list[Judgment] = []  # unkeyed, or keyed but unresolved and kept under the old id
        for j in query.judgments:
            if j.key is not None and j.key in live:
                new_id = live[j.key]
                if new_id != j.doc_id:
                    remapped.append(Remap(query.id, j.key, j.doc_id, new_id))
                resolved[new_id] = replace(j, doc_id=new_id)
            elif j.key is not None and owner.get(j.doc_id, j.key) != j.key:
                listed(
                    j,
                    False,
                    ID_TAKEN,
                    f"key {j.key} matches no live document and its id {j.doc_id} now belongs to "
                    f"{owner[j.doc_id]}: withheld from scoring",
                )
            else:
                if j.key is not None:
                    listed(
                        j,
                        True,
                        MISSING,
                        f"key {j.key} matches no live document: scored under its old id {j.doc_id}",
                    )
                plain.append(j)
        out = list(resolved.values())
        for j in plain:
            if j.doc_id in resolved:
                listed(
                    j,
                    False,
                    COLLISION,
                    f"id {j.doc_id} now belongs to key {resolved[j.doc_id].key}, which this query also "
                    "judged: withheld from scoring",
                )
            else:
                out.append(j)
        out.sort(key=lambda j: natural(j.doc_id))
        if tuple(out) != query.judgments:
            changed = True
            queries[i] = replace(query, judgments=tuple(out))
    unresolved.sort(key=lambda u: (natural_key(u.query_id), natural(u.doc_id)))
    remapped.sort(key=lambda r: (natural_key(r.query_id), natural(r.old_doc_id)))
    result = replace(golden, queries=tuple(queries)) if changed else golden
    return ResolvedGolden(golden=result, unresolved=tuple(unresolved), remapped=tuple(remapped))
