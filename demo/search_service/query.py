"""A query: its words, their rewriting by the synonym pack, and a search request read from its JSON
body.

Part of `demo.search_service` (its docstring has the contract and the query semantics).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from demo.search_service.base import (
    DEFAULT_SIZE,
    MAX_SIZE,
    MIN_SHOULD_MATCH_BOUNDS,
    STOPWORDS,
    TITLE_WEIGHT_BOUNDS,
    WORD,
    RequestError,
)
from demo.search_service.corpus import check_field_value
from demo.search_service.synonyms import SynonymPack

# --------------------------------------------------------------------------------------------- query


def query_words(text: str) -> list[str]:
    """The user's words as clauses: lowercased, stopwords dropped, repeats dropped, order kept."""
    words: list[str] = []
    for word in WORD.findall(text.lower()):
        if word not in STOPWORDS and word not in words:
            words.append(word)
    return words


def rewrite_words(words: Sequence[str], pack: SynonymPack) -> list[str]:
    """The query as the rewriter hands it to the engine: each word's rewrite, in order, repeats dropped."""
    clauses: list[str] = []
    for word in words:
        for clause in pack.rewrite(word):
            if clause not in clauses:
                clauses.append(clause)
    return clauses


@dataclass(frozen=True, slots=True)
class SearchRequest:
    q: str
    filters: Mapping[str, Any] = field(default_factory=dict)
    size: int = DEFAULT_SIZE
    locale: str | None = None
    rewrite: bool = False
    title_weight: float | None = None  # None: TITLE_WEIGHT
    min_should_match: int | None = None  # None: the server's


def parse_search_request(payload: object) -> SearchRequest:
    """Validate a decoded request body; raises RequestError naming every bad field."""
    if not isinstance(payload, dict):
        raise RequestError(["body: expected a JSON object"])
    problems: list[str] = []
    q = payload.get("q")
    if "q" not in payload:
        problems.append("q: required")
    elif not isinstance(q, str):
        problems.append("q: expected a string")
    size = payload.get("size", DEFAULT_SIZE)
    if size is None:
        size = DEFAULT_SIZE
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_SIZE:
        problems.append(f"size: expected an integer from 1 to {MAX_SIZE}, got {size!r}")
    filters = payload.get("filters")
    if filters is None:
        filters = {}
    if not isinstance(filters, dict):
        problems.append("filters: expected an object")
        filters = {}
    for name, value in filters.items():
        check_field_value(value, f"filters.{name}", problems)
    locale = payload.get("locale")
    if locale is not None and not isinstance(locale, str):
        problems.append("locale: expected a string or null")
    rewrite = payload.get("rewrite", False)
    if rewrite is None:
        rewrite = False
    if not isinstance(rewrite, bool):
        problems.append("rewrite: expected true or false")
    title_weight = payload.get("title_weight")
    low, high = TITLE_WEIGHT_BOUNDS
    if title_weight is not None and (
        isinstance(title_weight, bool)
        or not isinstance(title_weight, int | float)
        or not low <= title_weight <= high  # NaN fails here too
    ):
        problems.append(f"title_weight: expected a number from {low:g} to {high:g}, got {title_weight!r}")
    min_should_match = payload.get("min_should_match")
    fewest, most = MIN_SHOULD_MATCH_BOUNDS
    if min_should_match is not None and (
        isinstance(min_should_match, bool)
        or not isinstance(min_should_match, int)
        or not fewest <= min_should_match <= most
    ):
        problems.append(
            f"min_should_match: expected an integer from {fewest} to {most}, got {min_should_match!r}"
        )
    if problems:
        raise RequestError(problems)
    assert isinstance(q, str) and isinstance(size, int)
    return SearchRequest(
        q=q,
        filters=dict(filters),
        size=size,
        locale=(locale or None) if isinstance(locale, str) else None,
        rewrite=bool(rewrite),
        title_weight=None if title_weight is None else float(title_weight),
        min_should_match=min_should_match,
    )
