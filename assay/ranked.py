"""A run's ranked lists matched to a golden file's judgments, as arrays (pure): what the report scores.

Two ways in, one way out: `match_results` reads what the harness, the app's run tasks and a JSONL run file
hold (query id -> `QueryResult`), a list at a time; `match_table` reads a TREC run file's columns
(`assay.golden.trec.RunTable`) all at once, with no Python object per row. Both give the same `Matched`
for the same lists (tests/assay/test_ranked.py), and `assay.report` builds the artifact from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain, pairwise, repeat
from operator import attrgetter, itemgetter

import numpy as np
from numpy.typing import NDArray

from assay.golden.columns import GoldenColumns
from assay.golden.trec import RunTable
from assay.memo import ByIdentity
from assay.metrics import UNJUDGED, top_slots
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


@dataclass(frozen=True, slots=True, eq=False)
class _Lookup:
    """What matching reads of a golden file besides its columns, worked out once per columns object."""

    ids: list[str]  # the query ids, in order
    known: frozenset[str]
    # Per query: doc id -> its judgment's place in the columns (the last one, for an id judged twice).
    place: list[dict[str, int]]
    # (judgments, the judgment of the same id in `place`) for ids a query judged twice; None: no such id.
    twins: tuple[NDArray[np.intp], NDArray[np.intp]] | None


def _lookup(golden: GoldenColumns) -> _Lookup:
    ends = golden.bounds.tolist()
    docs = golden.doc_ids
    place = [dict(zip(docs[start:end], range(start, end), strict=True)) for start, end in pairwise(ends)]
    twins = None
    if sum(map(len, place)) != len(docs):  # an id judged twice in a query: not in a valid golden file
        pairs = [
            (j, where[docs[j]])
            for where, start, end in zip(place, ends, ends[1:], strict=False)
            for j in range(start, end)
            if where[docs[j]] != j
        ]
        twins = (
            np.array([j for j, _ in pairs], dtype=np.intp),
            np.array([t for _, t in pairs], dtype=np.intp),
        )
    ids = [q.id for q in golden.queries]
    return _Lookup(ids=ids, known=frozenset(ids), place=place, twins=twins)


# A worker scores every run of a golden version against the one columns object it holds.
_lookup_of: ByIdentity[GoldenColumns, _Lookup] = ByIdentity(_lookup, size=2)


def match_results(golden: GoldenColumns, results: Mapping[str, QueryResult]) -> Matched:
    """`results` (query id -> what the search returned) matched to `golden`. A golden query absent from
    `results` returned nothing; an errored one is scored as an empty list and carries its error."""
    k = golden.k
    lookup = _lookup_of(golden)
    queries = len(lookup.ids)
    answers = [results.get(qid) or QueryResult(query_id=qid) for qid in lookup.ids]
    ranked = [a.ids if a.error is None else () for a in answers]
    n = np.fromiter(map(len, ranked), dtype=np.int64, count=queries)
    # Every returned id's judgment (its place in the columns, -1: unjudged), list after list, and its
    # 0-based rank in its list.
    found = np.fromiter(
        chain.from_iterable(map(map, map(attrgetter("get"), lookup.place), ranked, repeat(repeat(-1)))),
        dtype=np.int64,
        count=int(n.sum()),
    )
    rank = np.arange(len(found), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    # Each judgment's first rank: the first of its hits (a judgment is of one query, whose hits come in
    # rank order), 0 when never returned.
    hit = np.flatnonzero(found >= 0)
    judged, first = np.unique(found[hit], return_index=True)
    first_rank = np.zeros(len(golden.doc_ids), dtype=np.int64)
    first_rank[judged] = rank[hit[first]] + 1
    if lookup.twins is not None:
        first_rank[lookup.twins[0]] = first_rank[lookup.twins[1]]
    in_top = found[rank < k]
    slots = np.full(len(in_top), UNJUDGED, dtype=np.int64)
    slots[in_top >= 0] = golden.grades[in_top[in_top >= 0]]
    tops = list(map(itemgetter(slice(0, k)), ranked))
    top, repeats = top_slots(slots, tops, k)
    titled = any(a.titles for a in answers)
    return Matched(
        n=n,
        errors=[a.error for a in answers],
        top_ids=list(map(list, tops)),
        grades=top,
        repeats=repeats,
        first_rank=first_rank,
        titles=[list(a.titles[:k]) if a.ok else [] for a in answers] if titled else None,
        unknown=[qid for qid in results if qid not in lookup.known],
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
