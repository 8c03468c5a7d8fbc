"""Per query, on its dual-labeled documents: exact agreement, mean absolute difference, hard
disagreements and relevance flips (docs/agreement.md, "Per query").

Part of `assay.labels.agreement`, which is the public API: import from there.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from assay.golden.model import DEFAULT_RELEVANT_MIN_GRADE, Scale
from assay.labels.agreement_input import Columns, PairRows, grade_problem, id_problem, settings_errors
from assay.labels.agreement_types import (
    DEFAULT_HARD_DIFF,
    DEFAULT_SCALE,
    AgreementInputError,
    DocDisagreement,
    QueryAgreement,
)


def query_agreement(
    query_id: str,
    grades: Mapping[str, Sequence[int]],
    *,
    relevant_min_grade: int = DEFAULT_RELEVANT_MIN_GRADE,
    hard_diff: int = DEFAULT_HARD_DIFF,
    scale: Scale = DEFAULT_SCALE,
) -> QueryAgreement:
    """One query's figures from `doc_id -> grades` (the plain definition; `agreement_compute` computes
    the same for every query at once)."""
    errors = settings_errors(scale, relevant_min_grade, hard_diff)
    for doc_id, doc_grades in grades.items():
        problem = id_problem(doc_id)
        if problem:
            errors.append(f"grades[{doc_id!r}]: the document id {problem}")
        for i, g in enumerate(doc_grades):
            problem = grade_problem(g, scale)
            if problem:
                errors.append(f"grades[{doc_id!r}][{i}]: {problem}")
    if errors:
        raise AgreementInputError(errors)

    n_dual = n_pairs = n_exact = abs_sum = 0
    disagreements: list[DocDisagreement] = []
    hard: list[DocDisagreement] = []
    flips: list[DocDisagreement] = []
    for doc_id in sorted(grades):
        gs = tuple(sorted(grades[doc_id]))
        if len(gs) < 2:
            continue
        n_dual += 1
        for a, b in itertools.combinations(gs, 2):
            n_pairs += 1
            n_exact += a == b
            abs_sum += abs(a - b)
        doc = DocDisagreement(doc_id, gs)
        if gs[-1] != gs[0]:
            disagreements.append(doc)
        if gs[-1] - gs[0] >= hard_diff:
            hard.append(doc)
        if gs[0] < relevant_min_grade <= gs[-1]:
            flips.append(doc)
    return QueryAgreement(
        query_id=query_id,
        n_docs=sum(1 for gs in grades.values() if gs),
        n_dual=n_dual,
        n_pairs=n_pairs,
        n_exact=n_exact,
        abs_diff_sum=abs_sum,
        disagreements=tuple(disagreements),
        hard_disagreements=tuple(hard),
        relevance_flips=tuple(flips),
    )


def query_figures(data: Columns, pairs: PairRows) -> tuple[QueryAgreement, ...]:
    n_queries, scale = len(data.queries), data.scale
    if not n_queries:
        return ()
    pair_query = data.unit_query[pairs.unit]
    diff = np.abs(pairs.grade_a - pairs.grade_b)
    n_pairs = np.bincount(pair_query, minlength=n_queries)
    n_exact = np.bincount(pair_query[diff == 0], minlength=n_queries)
    abs_sum = np.bincount(pair_query, weights=diff, minlength=n_queries).astype(np.int64)

    starts = np.flatnonzero(np.r_[True, data.unit[1:] != data.unit[:-1]])
    ends = np.r_[starts[1:], len(data.unit)]
    low = np.minimum.reduceat(data.grade, starts)
    high = np.maximum.reduceat(data.grade, starts)
    dual = ends - starts >= 2
    n_docs = np.bincount(data.unit_query, minlength=n_queries)
    n_dual = np.bincount(data.unit_query[dual], minlength=n_queries)

    found: dict[int, tuple[list[DocDisagreement], list[DocDisagreement], list[DocDisagreement]]] = {}
    units = np.flatnonzero(high > low)
    # Plain lists from here: indexing numpy scalars one by one is what made this loop slow.
    grades = (data.grade + scale.min).tolist()
    hard_units = set(units[high[units] - low[units] >= data.hard_diff].tolist())
    flip_units = set(units[(low[units] < data.cutoff) & (data.cutoff <= high[units])].tolist())
    for u, query, doc_code, start, end in zip(
        units.tolist(),
        data.unit_query[units].tolist(),
        data.unit_doc[units].tolist(),
        starts[units].tolist(),
        ends[units].tolist(),
        strict=True,
    ):
        doc = DocDisagreement(data.docs[doc_code], tuple(sorted(grades[start:end])))
        disagreeing, hard, flips = found.setdefault(query, ([], [], []))
        disagreeing.append(doc)
        if u in hard_units:
            hard.append(doc)
        if u in flip_units:
            flips.append(doc)

    out = []
    for q, query_id in enumerate(data.queries):
        disagreeing, hard, flips = found.get(q, ([], [], []))
        out.append(
            QueryAgreement(
                query_id=query_id,
                n_docs=int(n_docs[q]),
                n_dual=int(n_dual[q]),
                n_pairs=int(n_pairs[q]),
                n_exact=int(n_exact[q]),
                abs_diff_sum=int(abs_sum[q]),
                disagreements=tuple(disagreeing),
                hard_disagreements=tuple(hard),
                relevance_flips=tuple(flips),
            )
        )
    return tuple(out)
