"""A query's evidence page (docs/runs.md, docs/sxs.md, docs/experiments.md: "Evidence"): two result lists
of one query side by side, each document with its frozen label (the grade of the golden version the
figures were scored on, or "unjudged"), the query's nDCG change between them and their overlap
(Jaccard@k and RBO, `assay.overlap`), and a link back to the page whose figure opened it.

One helper serves the three pages (a study's query, a run's query against its baseline, an experiment's
configuration against its baseline: `evaluation.studies.evidence_views`, `evaluation.runs.views.evidence`,
`evaluation.experiments.evidence_views`) and one template draws them
(`templates/evaluation/runs/evidence.html`); a study adds its raters' answers there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.http import Http404, HttpRequest

from assay.golden.model import GoldenFile, GoldenQuery
from assay.metrics import score_query
from assay.overlap import DEFAULT_P, formula_text, overlap
from evaluation.runs.numbers_page import delta_css, num
from evaluation.runs.overlap_page import query_shown


def evidence_query_id(request: HttpRequest) -> str:
    """The query an evidence page shows: `?query=<id>`, or a 404 that says to give one."""
    query_id = request.GET.get("query", "")
    if not query_id:
        raise Http404("give a query: ?query=<id>")
    return query_id


@dataclass(frozen=True, slots=True)
class EvidenceList:
    """One side: its name (`A: run 4 demo-search (rewrite=true)`), where that name leads, and the list as
    it was returned (ids and titles in order), with the labels it was scored on; `error` when the search
    failed (then there is no list)."""

    name: str
    role: str  # "the baseline", "the candidate", "configuration 3"
    link: str
    ids: Sequence[str]
    titles: Sequence[str]
    grades: Mapping[str, int]
    error: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def hits(self, k: int) -> list[dict[str, Any]]:
        return [
            {
                "rank": rank,
                "doc_id": doc_id,
                "title": self.titles[rank - 1] if rank - 1 < len(self.titles) else "",
                "grade": self.grades.get(doc_id),
                "judged": doc_id in self.grades,
            }
            for rank, doc_id in enumerate(self.ids[:k], start=1)
        ]


def _query_in(golden: GoldenFile, query_id: str) -> GoldenQuery | None:
    return next((q for q in golden.queries if q.id == query_id), None)


def golden_query(golden: GoldenFile, query_id: str) -> GoldenQuery:
    """The query of the golden file, or a 404 that names it (an id typed into the address)."""
    found = _query_in(golden, query_id)
    if found is None:
        raise Http404(f"no query {query_id!r} here")
    return found


def grades_of(golden: GoldenFile, query_id: str) -> dict[str, int]:
    """The query's frozen labels in `golden` (none when the version does not hold the query)."""
    found = _query_in(golden, query_id)
    return found.grades if found is not None else {}


def ndcg_of(golden: GoldenFile, query: GoldenQuery, ids: Sequence[str], error: str | None) -> float | None:
    """The query's nDCG@k for a list on `golden`'s labels (the report's arithmetic); None when the search
    failed (`error`)."""
    if error is not None:
        return None
    return score_query(query.grades, list(ids), k=golden.k, relevant_min_grade=golden.relevant_min_grade).ndcg


def evidence_context(
    *,
    query: GoldenQuery,
    a: EvidenceList,
    b: EvidenceList,
    k: int,
    ndcg_change: float | None,
    back: tuple[str, str],
    where: str,
) -> dict[str, Any]:
    """What `evidence.html` shows: the query, both lists at depth `k` with their labels, B's nDCG minus
    A's, the overlap of the two lists at `k` with the formula, and the way back (`back`: url, words);
    `where` says which lists these are (`as raters saw them`, `as the runs returned them`)."""
    answered = a.error is None and b.error is None
    found = overlap(list(a.ids), list(b.ids), k=k) if answered else None
    sides = [{"side": s, "hits": s.hits(k), "letter": letter} for letter, s in (("A", a), ("B", b))]
    return {
        "query": query,
        "sides": sides,
        "k": k,
        "where": where,
        "ndcg_change": num(
            ndcg_change,
            signed=True,
            why="undefined: a search failed",
            css=delta_css("ndcg", ndcg_change),
            metric="ndcg",
        ),
        "overlap": {**query_shown(found), "k": k, "formula": formula_text(k, DEFAULT_P)},
        "back": {"url": back[0], "text": back[1]},
    }
