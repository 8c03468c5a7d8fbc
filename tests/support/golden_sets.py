"""Helpers shared by the golden version tests (no tests here): build a set, fix its consolidated labels.

`consolidated` gives the freeze fixed consolidated labels through exactly the interface it reads,
`labeling.selectors.labels_consolidated(*, golden_set) -> Consolidated` (labels: labeling's
FinalLabel(query_id, document_id, grade, method), humans' labels; unresolved: Unresolved(query_id,
document_id, reason); not_done: NotDone(query_id, document_id, grades, label), empty here).
Consolidation itself is labeling's (docs/agreement.md) and tested there; here it is a stand-in so each
constructed case (a regrade, an unresolved document in a core query) is exactly what the test says. By
default it returns the set's FrozenLabel rows as method "frozen", which is what consolidation returns when
nothing was judged since.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import pytest

from assay.golden.format import dump_json
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from golden_io.models import GoldenVersion
from labeling import selectors as labeling_selectors
from labeling.models import Document, FrozenLabel, GoldenSet, Query
from labeling.selectors import (
    FinalLabel,  # the real label: its source and judge at their defaults (humans)
    NotDone,
)
from tests import factories


@dataclass(frozen=True, slots=True)
class Unresolved:
    query_id: int
    document_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class Consolidated:
    labels: list[FinalLabel]
    unresolved: list[Unresolved]
    not_done: list[NotDone] = field(default_factory=list)


@dataclass
class ConsolidatedStub:
    """Frozen labels as method "frozen", then `grades` set or override pairs and `unresolved` drops them."""

    grades: dict[tuple[int, int], tuple[int, str]] = field(default_factory=dict)
    unresolved: dict[tuple[int, int], str] = field(default_factory=dict)
    calls: int = 0

    def grade(self, query: Query, doc: Document, grade: int, method: str = "agreed") -> None:
        self.grades[(query.pk, doc.pk)] = (grade, method)

    def unresolve(self, query: Query, doc: Document, reason: str = "awaiting third rater") -> None:
        self.unresolved[(query.pk, doc.pk)] = reason

    def __call__(self, *, golden_set: GoldenSet, unwritten: object = None) -> Consolidated:
        assert unwritten is None, "the stub reads the set as written"
        self.calls += 1
        pairs: dict[tuple[int, int], tuple[int, str]] = {
            (f.query_id, f.document_id): (f.grade, "frozen")
            for f in FrozenLabel.objects.filter(query__golden_set=golden_set)
        }
        pairs.update(self.grades)
        for pair in self.unresolved:
            pairs.pop(pair, None)
        return Consolidated(
            labels=[FinalLabel(q, d, g, m) for (q, d), (g, m) in sorted(pairs.items())],
            unresolved=[Unresolved(q, d, r) for (q, d), r in sorted(self.unresolved.items())],
        )


@pytest.fixture(name="consolidated")
def consolidated_fixture(monkeypatch: pytest.MonkeyPatch) -> ConsolidatedStub:
    """Import it as `consolidated_fixture`; tests ask for it as `consolidated`."""
    stub = ConsolidatedStub()
    monkeypatch.setattr(labeling_selectors, "labels_consolidated", stub, raising=False)
    return stub


@dataclass
class Built:
    golden_set: GoldenSet
    queries: dict[str, Query]
    docs: dict[str, Document]


def build_set(golden_set: GoldenSet, spec: dict[str, Any]) -> Built:
    """Queries and documents from a compact spec, frozen labels included.

    spec = {"q-1": {"text": ..., "tier": "core", "labels": {"d-1": 3, "d-2": 0}}, ...}; documents are made
    as needed (key https://help.example.com/<doc id>).
    """
    docs: dict[str, Document] = {}
    queries: dict[str, Query] = {}
    for qid, q in spec.items():
        query = factories.QueryFactory.create(
            golden_set=golden_set,
            external_id=qid,
            text=q.get("text", f"text of {qid}"),
            tier=q.get("tier", "core"),
            status=q.get("status", "active"),
            stratum=q.get("stratum", ""),
            filters=q.get("filters", {"product": "billing"}),
        )
        queries[qid] = query
        for doc_id, grade in q.get("labels", {}).items():
            if doc_id not in docs:
                docs[doc_id] = factories.DocumentFactory.create(golden_set=golden_set, doc_id=doc_id)
            factories.FrozenLabelFactory.create(
                query=query, document=docs[doc_id], grade=grade, version="import"
            )
    return Built(golden_set, queries, docs)


def version_make(golden_set: GoldenSet, name: str, *queries: GoldenQuery, **fields: Any) -> GoldenVersion:
    """A version row written directly (tests of what reads versions, without a freeze)."""
    golden = GoldenFile(
        version=name, queries=queries or (GoldenQuery("q-1", "refund", (Judgment("d-1", 3),)),)
    )
    return version_store(golden_set, golden, **fields)


def version_store(golden_set: GoldenSet, golden: GoldenFile, **fields: Any) -> GoldenVersion:
    """A version row holding `golden` as dumped (its name is the file's version)."""
    content = dump_json(golden)
    values: dict[str, Any] = {
        "rubric_name": "help-center",
        "rubric_version": 1,
        "k": golden.k,
        "relevant_min_grade": golden.relevant_min_grade,
        "scale_min": golden.scale.min,
        "scale_max": golden.scale.max,
        "counts": {"queries": {"core": len(golden.queries), "shadow": 0, "challenge": 0}},
    } | fields
    return GoldenVersion.objects.create(
        golden_set=golden_set,
        name=golden.version,
        content=content,
        sha256=hashlib.sha256(content).hexdigest(),
        **values,
    )
