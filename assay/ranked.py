"""A run's ranked lists matched to a golden file's judgments, as arrays (pure): what the report scores.

Two ways in, one way out: `match_results` reads what the harness, the app's run tasks and a JSONL run file
hold (query id -> `QueryResult`), a list at a time; `match_table` reads a TREC run file's columns
(`assay.golden.trec.RunTable`) all at once, with no Python object per row. Both give the same `Matched`
for the same lists (tests/assay/test_ranked.py), and `assay.report` builds the artifact from it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import repeat

import numpy as np
from numpy.typing import NDArray

from assay.golden.columns import GoldenColumns
from assay.golden.trec import RunTable
from assay.metrics import UNJUDGED, first_ranks, top_grades
from assay.results import QueryResult


@dataclass(frozen=True, slots=True, eq=False)
class Matched:
    """Per golden query (the golden's order): what its list held, matched to its judgments."""

    n: NDArray[np.int64]  # the list's length (0 when absent or errored)
    errors: list[str | None]  # the call's error, None when it answered
    top_ids: list[list[str]]  # the list's top k ids
    grades: NDArray[np.int64]  # (k, queries): each top-k slot's grade, UNJUDGED where none
    repeats: NDArray[np.bool_] | None  # (k, queries): slots repeating an earlier id; None: no repeat
    first_rank: NDArray[np.int64]  # per judgment (the golden's columns): first 1-based rank, 0 if absent
    titles: list[list[str | None]] | None  # the top k titles, when the engine returned any
    unknown: list[str]  # result query ids the golden lacks, in the results' order


def match_results(golden: GoldenColumns, results: Mapping[str, QueryResult]) -> Matched:
    """`results` (query id -> what the search returned) matched to `golden`. A golden query absent from
    `results` returned nothing; an errored one is scored as an empty list and carries its error."""
    k = golden.k
    answers = [results.get(q.id) or QueryResult(query_id=q.id) for q in golden.queries]
    ranked = [a.ids if a.ok else () for a in answers]
    ends = golden.bounds.tolist()
    grades = golden.grades.tolist()
    judgments = [
        dict(zip(golden.doc_ids[start:end], grades[start:end], strict=True))
        for start, end in itertools.pairwise(ends)
    ]
    top, repeats = top_grades(judgments, ranked, k)
    first_rank = np.zeros(len(golden.doc_ids), dtype=np.int64)
    for start, end, ids in zip(ends, ends[1:], ranked, strict=False):
        if ids and end > start:
            ranks = first_ranks(ids, golden.doc_ids[start:end]).values()
            first_rank[start:end] = [rank or 0 for rank in ranks]
    golden_ids = {q.id for q in golden.queries}
    titled = any(a.titles for a in answers)
    return Matched(
        n=np.fromiter(map(len, ranked), dtype=np.int64, count=len(ranked)),
        errors=[a.error for a in answers],
        top_ids=[list(ids[:k]) for ids in ranked],
        grades=top,
        repeats=repeats,
        first_rank=first_rank,
        titles=[list(a.titles[:k]) if a.ok else [] for a in answers] if titled else None,
        unknown=[qid for qid in results if qid not in golden_ids],
    )


def match_table(golden: GoldenColumns, table: RunTable) -> Matched:
    """A TREC run's rows matched to `golden` in bulk: each row's (query, document) looked up among the
    judgments as one integer key (no run file holds a docno twice in a topic)."""
    k, queries = golden.k, len(golden.queries)
    place = {q.id: i for i, q in enumerate(golden.queries)}
    # The golden query of each topic (-1: not in the golden file) and of each row.
    topic_query = np.array([place.get(topic, -1) for topic in table.topics], dtype=np.int64)
    row_query = topic_query[table.topic]
    # Each judgment's document as a code of the run's docno dictionary (-1: the run never returned it).
    code = {docno: i for i, docno in enumerate(table.docnos)}
    doc_code = np.fromiter(
        map(code.get, golden.doc_ids, repeat(-1)), dtype=np.int64, count=len(golden.doc_ids)
    )
    width = len(table.docnos) + 1
    judged = np.flatnonzero(doc_code >= 0)
    judgment_key = golden.owner[judged] * width + doc_code[judged]
    # A row of a topic not in the golden file (query -1) gets a negative key, which no judgment has.
    row_key = row_query * width + table.doc
    # The judgment each row holds, found by binary search among the sorted keys of the judged documents
    # the run returned (numpy's sorts and searches beat a hash join here); then only those rows.
    by_key = np.argsort(judgment_key)
    sorted_keys = judgment_key[by_key]
    if len(sorted_keys):
        at = np.searchsorted(sorted_keys, row_key)
        np.minimum(at, len(sorted_keys) - 1, out=at)
        hit = np.flatnonzero(sorted_keys[at] == row_key)  # the rows holding a judgment
        judgment = judged[by_key[at[hit]]]
    else:
        hit = judgment = np.zeros(0, dtype=np.int64)
    hit_rank = hit - table.bounds[table.topic[hit]] + 1

    first_rank = np.zeros(len(golden.doc_ids), dtype=np.int64)
    first_rank[judgment] = hit_rank
    grades = np.full((k, queries), UNJUDGED, dtype=np.int64)
    in_top = hit_rank <= k
    grades[hit_rank[in_top] - 1, row_query[hit[in_top]]] = golden.grades[judgment[in_top]]

    n = np.zeros(queries, dtype=np.int64)
    counts = np.diff(table.bounds)
    listed = topic_query >= 0
    n[topic_query[listed]] = counts[listed]
    # The top k rows of each listed topic, topic by topic: a run of `sizes[t]` rows from its first.
    sizes = np.minimum(counts[listed], k)
    before = np.cumsum(sizes) - sizes
    top = np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(table.bounds[:-1][listed] - before, sizes)
    names = np.array(table.docnos, dtype=object)[table.doc[top]].tolist()
    top_ids: list[list[str]] = [[] for _ in range(queries)]
    start = 0  # each listed topic's top rows are the next run of `names`
    for query, size in zip(topic_query[listed].tolist(), sizes.tolist(), strict=True):
        top_ids[query] = names[start : start + size]
        start += size
    return Matched(
        n=n,
        errors=[None] * queries,
        top_ids=top_ids,
        grades=grades,
        repeats=None,
        first_rank=first_rank,
        titles=None,
        unknown=[qid for qid, query in zip(table.topics, topic_query.tolist(), strict=True) if query < 0],
    )
