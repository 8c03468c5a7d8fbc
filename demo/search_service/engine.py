"""The search: matches by minimum-should-match, ranked by BM25, filtered by fields and locale.

Part of `demo.search_service` (its docstring has the contract and the query semantics).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from demo.search_service.base import (
    DEFAULT_MIN_SHOULD_MATCH,
    DEFAULT_SIZE,
    MAX_CLAUSES,
    TITLE_WEIGHT,
    RequestError,
)
from demo.search_service.index import SearchIndex
from demo.search_service.query import parse_search_request, query_words, rewrite_words
from demo.search_service.synonyms import SynonymPack

# -------------------------------------------------------------------------------------------- search


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    title: str
    score: float


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[Hit, ...]
    clauses: tuple[str, ...]
    rewriter: str | None
    rewritten_query: str | None
    took_ms: float


def _same_value(wanted: object, actual: object) -> bool:
    # JSON true is not the number 1, whatever Python thinks.
    if isinstance(wanted, bool) or isinstance(actual, bool):
        return isinstance(wanted, bool) and isinstance(actual, bool) and wanted == actual
    return wanted == actual


def filters_match(fields: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    for name, wanted in filters.items():
        if name not in fields:
            return False
        wanted_values = wanted if isinstance(wanted, list) else [wanted]
        actual = fields[name]
        actual_values = actual if isinstance(actual, list) else [actual]
        if not any(_same_value(w, a) for w in wanted_values for a in actual_values):
            return False
    return True


def locale_matches(fields: Mapping[str, Any], locale: str | None) -> bool:
    doc_locale = fields.get("locale")
    if locale is None or not isinstance(doc_locale, str):
        return True
    return doc_locale.lower() == locale.lower()


def search(
    index: SearchIndex,
    q: str,
    *,
    filters: Mapping[str, Any] | None = None,
    size: int = DEFAULT_SIZE,
    locale: str | None = None,
    rewrite: bool = False,
    synonyms: SynonymPack | None = None,
    min_should_match: int = DEFAULT_MIN_SHOULD_MATCH,
    title_weight: float | None = None,
    request_min_should_match: int | None = None,
) -> SearchResult:
    """Run one query (the semantics are in the module docstring). Raises RequestError on bad arguments.
    `min_should_match` is the server's setting; `title_weight` and `request_min_should_match` are the
    request's own (bounded as in a request body), over the defaults."""
    started = time.perf_counter()
    request = parse_search_request(
        {
            "q": q,
            "filters": filters,
            "size": size,
            "locale": locale,
            "rewrite": rewrite,
            "title_weight": title_weight,
            "min_should_match": request_min_should_match,
        }
    )
    if request.min_should_match is not None:
        min_should_match = request.min_should_match
    if min_should_match < 1:
        raise ValueError(f"min_should_match: expected at least 1, got {min_should_match}")
    if request.rewrite and synonyms is None:
        raise RequestError(["rewrite: no synonym pack is loaded"])
    words = query_words(request.q)
    clauses = rewrite_words(words, synonyms) if request.rewrite and synonyms else words
    if len(clauses) > MAX_CLAUSES:
        raise RequestError([f"q: {len(clauses)} distinct words to search for; at most {MAX_CLAUSES}"])
    hits: list[Hit] = []
    if clauses:
        weight = TITLE_WEIGHT if request.title_weight is None else request.title_weight
        scores, per_clause = index.match(clauses, title_weight=weight)
        required = min(len(clauses), min_should_match)
        for rowid, score in scores.items():
            if sum(rowid in rows for rows in per_clause) < required:
                continue
            doc = index.documents[rowid]
            if filters_match(doc.fields, request.filters) and locale_matches(doc.fields, request.locale):
                hits.append(Hit(id=doc.id, title=doc.title, score=score))
        hits.sort(key=lambda h: (-h.score, h.id))
        del hits[request.size :]
    return SearchResult(
        hits=tuple(hits),
        clauses=tuple(clauses),
        rewriter=synonyms.label if request.rewrite and synonyms else None,
        rewritten_query=" ".join(clauses) if request.rewrite else None,
        took_ms=(time.perf_counter() - started) * 1000,
    )
