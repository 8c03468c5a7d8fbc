"""The metrics engine on generated data against pytrec_eval and ir_measures, plus its invariants.

pytrec_eval and ir_measures are dev-only oracles. Neither accepts a repeated document in a ranking, so a
repeat is handed to them as a fresh unjudged document in the same slot: that is exactly docs/metrics.md's rule
(it keeps its slot, earns nothing, is never relevant), so their numbers must equal ours on the list with
the repeat. judged@k is the exception (a repeat of a judged document is still judged): it is compared on
lists without repeats only, and the repeat case is checked by hand below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import ir_measures
import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.golden.trec import read_run
from assay.metrics import first_ranks, score_lists, score_query

DOCS = [f"d{i}" for i in range(12)]

judgments_st = st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), max_size=8)
ranked_st = st.lists(st.sampled_from([*DOCS, "u1", "u2", "u3"]), max_size=14)  # u*: never judged
query_st = st.tuples(judgments_st, ranked_st)
distinct_ranked_st = st.lists(st.sampled_from([*DOCS, "u1", "u2"]), unique=True, max_size=14)


def oracle_ranking(ranked: Sequence[str], k: int) -> list[str]:
    """The top k with each repeat replaced by a fresh unjudged id (same slot, no gain, never relevant)."""
    seen: set[str] = set()
    out = []
    for slot, doc in enumerate(ranked[:k]):
        out.append(doc if doc not in seen else f"repeat-{slot}")
        seen.add(doc)
    return out


def as_run(ranked: Sequence[str]) -> dict[str, float]:
    return {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)}  # strictly decreasing scores


def pytrec_values(
    queries: Sequence[tuple[Mapping[str, int], Sequence[str]]], k: int, c: int
) -> dict[str, dict[str, float]]:
    # Queries without judgments or without results are left out (pytrec_eval cannot take them): 0 expected.
    qrels_gain = {str(i): {d: 2**g - 1 for d, g in j.items()} for i, (j, _) in enumerate(queries) if j}
    qrels = {str(i): dict(j) for i, (j, _) in enumerate(queries) if j}
    run = {str(i): as_run(oracle_ranking(r, k)) for i, (_, r) in enumerate(queries) if r}
    ndcg = pytrec_eval.RelevanceEvaluator(qrels_gain, {f"ndcg_cut.{k}"}).evaluate(run)
    binary = pytrec_eval.RelevanceEvaluator(qrels, {f"P.{k}", "recip_rank"}, relevance_level=c).evaluate(run)
    return {
        qid: {
            "ndcg": ndcg.get(qid, {}).get(f"ndcg_cut_{k}", 0.0),
            "p": binary.get(qid, {}).get(f"P_{k}", 0.0),
            "rr": binary.get(qid, {}).get("recip_rank", 0.0),
        }
        for qid in map(str, range(len(queries)))
    }


@settings(max_examples=200, deadline=None)
@given(queries=st.lists(query_st, min_size=1, max_size=6), k=st.integers(1, 12), c=st.integers(1, 3))
def test_it_agrees_with_pytrec_eval_on_generated_batches(
    queries: list[tuple[dict[str, int], list[str]]], k: int, c: int
) -> None:
    arrays = score_lists([j for j, _ in queries], [r for _, r in queries], k=k, relevant_min_grade=c)
    expected = pytrec_values(queries, k, c)
    for i in range(len(queries)):
        oracle = expected[str(i)]
        assert math.isclose(arrays.ndcg[i], oracle["ndcg"], abs_tol=1e-12), ("ndcg", i)
        assert math.isclose(arrays.p[i], oracle["p"], abs_tol=1e-12), ("p", i)
        assert math.isclose(arrays.rr[i], oracle["rr"], abs_tol=1e-12), ("rr", i)
        assert arrays.n[i] == len(queries[i][1])


MEASURES = {
    "ndcg": "nDCG(gains={0:0,1:1,2:3,3:7})@{k}",
    "p": "P(rel={c})@{k}",
    "rr": "RR(rel={c})@{k}",
    "judged": "Judged@{k}",
}


@settings(max_examples=150, deadline=None)
@given(
    queries=st.lists(st.tuples(judgments_st, distinct_ranked_st), min_size=1, max_size=5),
    k=st.integers(1, 12),
    c=st.integers(1, 3),
)
def test_it_agrees_with_ir_measures_including_judged_at_k(
    queries: list[tuple[dict[str, int], list[str]]], k: int, c: int
) -> None:
    arrays = score_lists([j for j, _ in queries], [r for _, r in queries], k=k, relevant_min_grade=c)
    measures = {
        name: ir_measures.parse_measure(text.replace("{k}", str(k)).replace("{c}", str(c)))
        for name, text in MEASURES.items()
    }
    qrels = [ir_measures.Qrel(str(i), d, g) for i, (j, _) in enumerate(queries) for d, g in j.items()]
    run = {str(i): as_run(r) for i, (_, r) in enumerate(queries) if r}
    got: dict[tuple[str, str], float] = {}
    for metric in ir_measures.iter_calc(list(measures.values()), qrels, run):
        name = next(n for n, m in measures.items() if m == metric.measure)
        got[(name, metric.query_id)] = metric.value
    for i, (judgments, ranked) in enumerate(queries):
        for name in ("ndcg", "p", "rr"):
            expected = got.get((name, str(i)), 0.0)  # not evaluated: no judgments or no results -> 0
            assert math.isclose(getattr(arrays, name)[i], expected, abs_tol=1e-12), (name, i)
        if not ranked:
            assert math.isnan(arrays.judged[i])
        elif judgments:
            assert math.isclose(arrays.judged[i], got[("judged", str(i))], abs_tol=1e-12), ("judged", i)
        else:
            assert arrays.judged[i] == 0.0


@settings(max_examples=200, deadline=None)
@given(queries=st.lists(query_st, min_size=1, max_size=6), k=st.integers(1, 12), c=st.integers(1, 3))
def test_it_keeps_every_value_in_its_range(
    queries: list[tuple[dict[str, int], list[str]]], k: int, c: int
) -> None:
    arrays = score_lists([j for j, _ in queries], [r for _, r in queries], k=k, relevant_min_grade=c)
    assert ((arrays.ndcg >= 0) & (arrays.ndcg <= 1)).all()
    assert ((arrays.p >= 0) & (arrays.p <= 1)).all()
    assert ((arrays.rr >= 0) & (arrays.rr <= 1)).all()
    defined = ~np.isnan(arrays.judged)
    assert (defined == (arrays.n > 0)).all()
    assert ((arrays.judged[defined] >= 0) & (arrays.judged[defined] <= 1)).all()


@settings(max_examples=200, deadline=None)
@given(judgments=judgments_st, k=st.integers(1, 12), data=st.data())
def test_it_scores_the_ideal_order_exactly_one(
    judgments: dict[str, int], k: int, data: st.DataObject
) -> None:
    positive = [d for d, g in judgments.items() if g > 0]
    # Any order that is descending by grade is ideal, ties in any order, unjudged documents after.
    shuffled = data.draw(st.permutations(positive))
    ideal = [*sorted(shuffled, key=lambda d: -judgments[d]), "u1", "u2"]
    scores = score_query(judgments, ideal, k=k, relevant_min_grade=1)
    assert scores.ndcg == (1.0 if positive else 0.0)


scored_st = st.dictionaries(st.sampled_from(DOCS), st.sampled_from([1.0, 2.0, 3.0]), max_size=12)  # many ties


@settings(max_examples=200, deadline=None)
@given(queries=st.lists(st.tuples(judgments_st, scored_st), min_size=1, max_size=5), c=st.integers(1, 3))
def test_it_orders_tied_scores_as_trec_eval_does_through_read_run(
    queries: list[tuple[dict[str, int], dict[str, float]]], c: int
) -> None:
    # pytrec_eval sorts the {doc: score} maps itself with trec_eval's rule; Assay gets the same run as a
    # TREC file through read_run. k = 20 is deeper than any list, so recip_rank (no cutoff) is RR@k.
    text = "".join(
        f"{i} Q0 {doc} 0 {score} t\n"
        for i, (_, scores) in enumerate(queries)
        for doc, score in scores.items()
    )
    run = read_run(text)
    arrays = score_lists(
        [j for j, _ in queries],
        [run.get(str(i), ()) for i in range(len(queries))],
        k=20,
        relevant_min_grade=c,
    )
    qrels = {str(i): dict(j) for i, (j, _) in enumerate(queries) if j}
    gains = {qid: {d: 2**g - 1 for d, g in docs.items()} for qid, docs in qrels.items()}
    scored = {str(i): dict(s) for i, (_, s) in enumerate(queries) if s}
    ndcg = pytrec_eval.RelevanceEvaluator(gains, {"ndcg_cut.20"}).evaluate(scored)
    binary = pytrec_eval.RelevanceEvaluator(qrels, {"P.20", "recip_rank"}, relevance_level=c).evaluate(scored)
    for i in range(len(queries)):
        qid = str(i)
        assert math.isclose(arrays.ndcg[i], ndcg.get(qid, {}).get("ndcg_cut_20", 0.0), abs_tol=1e-12)
        assert math.isclose(arrays.p[i], binary.get(qid, {}).get("P_20", 0.0), abs_tol=1e-12)
        assert math.isclose(arrays.rr[i], binary.get(qid, {}).get("recip_rank", 0.0), abs_tol=1e-12)


# --- by hand ----------------------------------------------------------------------------------------------

LOG2 = math.log2


def test_it_lets_a_repeat_keep_its_slot_but_earn_nothing() -> None:
    grades = {"a": 3, "b": 2}
    scores = score_query(grades, ["a", "a", "b", "a"], k=3, relevant_min_grade=2)
    dcg = 7 / LOG2(2) + 0 + 3 / LOG2(4)  # the repeat of a at rank 2 earns nothing; b keeps rank 3
    idcg = 7 / LOG2(2) + 3 / LOG2(3)
    assert scores.ndcg == pytest.approx(dcg / idcg, abs=1e-15)
    assert scores.p == pytest.approx(2 / 3)  # a and b; the repeat is never relevant
    assert scores.rr == 1.0
    assert scores.duplicates == 1  # counted in the top k: the repeat at rank 4 is past it
    assert scores.judged == 1.0  # a repeat of a judged document is still judged
    assert scores.n == 4


def test_it_never_lets_a_repeat_be_the_first_relevant_hit() -> None:
    scores = score_query({"a": 1, "b": 3}, ["a", "a", "b"], k=3, relevant_min_grade=1)
    assert scores.rr == 1.0
    only_repeat = score_query({"a": 0, "b": 3}, ["x", "x", "b"], k=3, relevant_min_grade=2)
    assert only_repeat.rr == pytest.approx(1 / 3)
    assert only_repeat.duplicates == 1
    assert only_repeat.judged == pytest.approx(1 / 3)


def test_it_counts_every_repeat_of_an_id() -> None:
    scores = score_query({}, ["a", "a", "a", "b", "b"], k=10, relevant_min_grade=1)
    assert scores.duplicates == 3


def test_it_gives_an_empty_list_zeros_and_no_judged_share() -> None:
    scores = score_query({"a": 3}, [], k=10, relevant_min_grade=2)
    assert (scores.ndcg, scores.rr, scores.p, scores.n, scores.duplicates) == (0.0, 0.0, 0.0, 0, 0)
    assert scores.judged is None


def test_it_divides_precision_by_k_even_for_a_short_list() -> None:
    scores = score_query({"a": 2}, ["a"], k=10, relevant_min_grade=2)
    assert scores.p == 0.1
    assert scores.ndcg == 1.0
    assert scores.judged == 1.0  # judged share of the top min(k, n) = 1 result


def test_it_cuts_the_ideal_list_at_k_not_at_the_number_returned() -> None:
    # Elasticsearch would cut the ideal list at the hits returned (1), giving 1.0; docs/metrics.md cuts at k.
    grades = {"a": 3, "b": 3, "c": 3}
    scores = score_query(grades, ["a"], k=3, relevant_min_grade=2)
    assert scores.ndcg == pytest.approx(1 / (1 + 1 / LOG2(3) + 1 / LOG2(4)), abs=1e-15)


def test_it_scores_zero_when_no_judgment_is_positive() -> None:
    scores = score_query({"a": 0, "b": 0}, ["a", "b"], k=10, relevant_min_grade=1)
    assert (scores.ndcg, scores.rr, scores.p) == (0.0, 0.0, 0.0)
    assert scores.judged == 1.0


def test_it_counts_unjudged_documents_as_irrelevant_and_unjudged() -> None:
    scores = score_query({"a": 3}, ["x", "a", "y"], k=3, relevant_min_grade=2)
    assert scores.ndcg == pytest.approx(1 / LOG2(3), abs=1e-15)
    assert scores.rr == 0.5
    assert scores.judged == pytest.approx(1 / 3)


def test_it_gives_negative_grades_no_gain() -> None:
    scores = score_query({"a": -1, "b": 1}, ["a", "b"], k=2, relevant_min_grade=1)
    assert scores.ndcg == pytest.approx(1 / LOG2(3), abs=1e-15)
    assert scores.judged == 1.0


def test_it_scores_a_batch_mixing_full_short_and_empty_lists() -> None:
    judgments = [{"a": 3}, {"a": 1, "b": 2}, {"c": 2}]
    ranked = [["a", "x"], ["b", "a", "z", "y"], []]
    arrays = score_lists(judgments, ranked, k=2, relevant_min_grade=2)
    assert arrays.ndcg.tolist() == [1.0, 1.0, 0.0]
    assert arrays.p.tolist() == [0.5, 0.5, 0.0]
    assert arrays.n.tolist() == [2, 4, 0]
    assert arrays.judged[:2].tolist() == [0.5, 1.0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0, "relevant_min_grade": 2}, "k must be a positive integer, got 0"),
        ({"k": True, "relevant_min_grade": 2}, "k must be a positive integer, got True"),
        ({"k": 10, "relevant_min_grade": 0}, "relevant_min_grade must be >= 1, got 0"),
    ],
)
def test_it_rejects_a_cutoff_that_makes_no_sense(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        score_lists([{}], [[]], **kwargs)


def test_it_rejects_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="2 judgment maps for 1 ranked lists"):
        score_lists([{}, {}], [[]], k=10, relevant_min_grade=2)


def test_it_finds_the_first_rank_of_each_document_in_the_whole_list() -> None:
    assert first_ranks(["a", "b", "a", "c"], ["a", "c", "z"]) == {"a": 1, "c": 4, "z": None}


def test_it_scores_grades_far_above_the_usual_scale() -> None:
    # Grades above 32 take the other path to the ideal list (distinct levels instead of every grade).
    scores = score_query({"a": 40, "b": 35, "c": 1}, ["b", "c", "a"], k=3, relevant_min_grade=35)
    dcg = (2**35 - 1) + (2**1 - 1) / LOG2(3) + (2**40 - 1) / LOG2(4)
    idcg = (2**40 - 1) + (2**35 - 1) / LOG2(3) + (2**1 - 1) / LOG2(4)
    assert scores.ndcg == pytest.approx(dcg / idcg, rel=1e-15)
    assert scores.p == pytest.approx(2 / 3)
