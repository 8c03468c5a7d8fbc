"""Jaccard@k and rank-biased overlap (assay.overlap, docs/metrics.md "Overlap"), no database.

Oracles: the `rbo` package from PyPI (a test dependency only; its `RankingSimilarity.rbo_ext` is eq. 32 of
Webber, Moffat and Zobel (2010), the extrapolation for lists of different lengths that Assay computes) and
scikit-learn's `jaccard_score` over indicator vectors for Jaccard@k. Their conventions, checked here:

- `rbo` refuses a list with a repeated id (an assert in its constructor). A list of ids has no scores, so a
  tie shows only as a repeated id (ties of a TREC run were broken before the list was stored); Assay
  counts a repeat at its first place only, so the oracle is given each list's distinct ids and Assay the
  list with its repeats;
- `rbo` takes the whole lists; Assay reads the top k, so the oracle gets the top k;
- both say 1 for two empty lists and 0 for one empty list against a non-empty one, as Assay does;
- `rbo`'s other extrapolation, `.rbo(p=p, ext=True)` (eq. 30), first cuts the longer list to the shorter
  one's length: for lists of one length it is the same figure, for lists of different lengths another
  definition (the one Assay does not use), which `test_the_oracles_even_length_extrapolation_differs...`
  shows;
- `rbo` clamps a value a hair outside [0, 1] (float noise) as Assay does.

Hand-computed cases: the overlaps of the paper's Figure 5 (its average overlap at each depth, to 3
decimals), RBO_ext worked term by term from eq. 32 for lists of one and of different lengths, and the
paper's top-weightness of p = 0.9 at depth 10 (86%).
"""

from __future__ import annotations

import random
import string
import warnings

import numpy as np
import pytest
from rbo import RankingSimilarity
from sklearn.metrics import jaccard_score

from assay.overlap import (
    DEFAULT_P,
    Overlap,
    OverlapError,
    distinct,
    jaccard_at_k,
    overlap,
    rbo_ext,
    report_overlap,
    report_pairs,
    summarize,
    top_weight,
)
from assay.report import bootstrap_interval

# ------------------------------------------------------------------------------------------ the oracles


def oracle_rbo(a: list[str], b: list[str], k: int, p: float) -> float:
    """`rbo`'s eq. 32 on each list's top k distinct ids (its conventions: module docstring)."""
    return float(RankingSimilarity(distinct(a)[:k], distinct(b)[:k]).rbo_ext(p=p))


def oracle_jaccard(a: list[str], b: list[str], k: int) -> float:
    """scikit-learn's Jaccard score of the two top-k sets as indicator vectors over their union (two
    empty sets: 1, its `zero_division`)."""
    top_a, top_b = set(distinct(a)[:k]), set(distinct(b)[:k])
    union = sorted(top_a | top_b)
    if not union:
        return float(jaccard_score([0], [0], zero_division=1.0))
    return float(jaccard_score([d in top_a for d in union], [d in top_b for d in union]))


# ------------------------------------------------------------------------------------- hand-computed


# The paper's Figure 5: S = abcdefg, T = zcavwxy. The ids the first d places share, d = 1..7, and the
# paper's average overlap (the mean of the agreements X_d / d up to depth d) to 3 decimals.
FIG5_S, FIG5_T = list("abcdefg"), list("zcavwxy")
FIG5_SHARED = [0, 0, 2, 2, 2, 2, 2]
FIG5_AVERAGE_OVERLAP = [0.0, 0.0, 0.222, 0.292, 0.313, 0.317, 0.312]


def test_figure_5s_overlaps_give_the_papers_average_overlap_at_every_depth():
    for depth in range(1, 8):
        shared = len(set(FIG5_S[:depth]) & set(FIG5_T[:depth]))
        assert shared == FIG5_SHARED[depth - 1]
        agreements = [x / d for d, x in enumerate(FIG5_SHARED[:depth], start=1)]
        assert round(sum(agreements) / depth, 3) == FIG5_AVERAGE_OVERLAP[depth - 1]


def test_rbo_of_figure_5_is_eq_32_worked_term_by_term():
    # Lists of one length (s = l = 7): the second sum of eq. 32 is empty, X_s = X_l, so
    # RBO = (1 - p) / p * sum_d (X_d / d) p^d + (X_7 / 7) p^7. Agreements 0, 0, 2/3, 1/2, 2/5, 1/3, 2/7.
    p = 0.9
    terms = 0.729 * 2 / 3 + 0.6561 * 1 / 2 + 0.59049 * 2 / 5 + 0.531441 * 1 / 3 + 0.4782969 * 2 / 7
    expected = (0.1 / 0.9) * terms + (2 / 7) * 0.4782969
    assert rbo_ext(FIG5_S, FIG5_T, p) == pytest.approx(expected, abs=1e-15)
    assert expected == pytest.approx(0.288217, abs=1e-6)
    assert rbo_ext(FIG5_S, FIG5_T, p) == pytest.approx(oracle_rbo(FIG5_S, FIG5_T, 7, p), abs=1e-15)


def test_rbo_of_lists_of_different_lengths_is_eq_32_worked_term_by_term():
    # S = ab (s = 2), L = bca (l = 3), p = 1/2. X_1 = 0 ({a} and {b}), X_2 = 1 ({a, b} and {b, c}),
    # X_3 = 2 (S whole against bca). (1 - p) / p = 1.
    # first sum: 0/1 * 1/2 + 1/2 * 1/4 + 2/3 * 1/8 = 5/24; second sum (d = 3): X_2 (3 - 2) / (2 * 3) * 1/8 =
    # 1/48; last term: ((X_3 - X_2) / 3 + X_2 / 2) * 1/8 = 5/48. RBO = 10/48 + 1/48 + 5/48 = 1/3.
    assert rbo_ext(list("ab"), list("bca"), 0.5) == pytest.approx(1 / 3, abs=1e-15)
    assert rbo_ext(list("bca"), list("ab"), 0.5) == pytest.approx(1 / 3, abs=1e-15)  # symmetric
    # S = a (s = 1), L = ba (l = 2), p = 0.9: X_1 = 0, X_2 = 1, X_s = 0. (1 - p) / p * (1/2 * 0.81) + (1/2 +
    # 0) * 0.81 = 0.045 + 0.405 = 0.45.
    assert rbo_ext(["a"], ["b", "a"], 0.9) == pytest.approx(0.45, abs=1e-15)
    for a, b, p in ((list("ab"), list("bca"), 0.5), (["a"], ["b", "a"], 0.9)):
        assert rbo_ext(a, b, p) == pytest.approx(oracle_rbo(a, b, 10, p), abs=1e-15)


def test_the_papers_top_weightness_of_p_0_9_at_depth_10_is_86_percent():
    assert round(top_weight(0.9, 10), 2) == 0.86
    letters = list(string.ascii_lowercase) + [f"x{i}" for i in range(60)]
    for p, depth in ((0.9, 10), (0.98, 50), (0.5, 3), (0.8, 1)):
        expected = RankingSimilarity(letters, letters).top_weightness(p=p, d=depth)
        assert top_weight(p, depth) == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------------------------------ conventions


def test_identical_lists_give_exactly_1_and_say_so():
    ids = ["d3", "d1", "d7", "d2"]
    assert overlap(ids, list(ids), k=10) == Overlap(1.0, 1.0, True)
    assert rbo_ext(ids, list(ids)) == 1.0
    assert jaccard_at_k(ids, list(ids), 10) == 1.0


def test_two_empty_lists_are_identical_and_one_empty_list_shares_nothing():
    assert overlap([], [], k=10) == Overlap(1.0, 1.0, True)
    assert overlap([], ["d1"], k=10) == Overlap(0.0, 0.0, False)
    assert overlap(["d1"], [], k=10) == Overlap(0.0, 0.0, False)


def test_a_repeated_id_counts_at_its_first_place_only():
    assert distinct(["a", "b", "a", "c", "b"]) == ["a", "b", "c"]
    # the repeat dropped, the lists are the same
    assert overlap(["a", "a", "b"], ["a", "b"], k=10) == Overlap(1.0, 1.0, True)
    # what follows a repeat moves up one place: c is in both top 2
    assert jaccard_at_k(["a", "a", "c"], ["c", "a"], 2) == 1.0
    assert rbo_ext(["b", "a", "b"], ["a", "b"], 0.9) == rbo_ext(["b", "a"], ["a", "b"], 0.9)


def test_a_prefix_has_rbo_1_but_is_not_identical():
    # RBO_ext assumes the shorter list goes on as it agreed so far; Jaccard@k and the flag tell them apart.
    found = overlap(["a", "b"], ["a", "b", "c", "d"], k=10)
    assert found.rbo == pytest.approx(1.0, abs=1e-15)
    assert found.jaccard == 0.5
    assert not found.identical


def test_disjoint_lists_give_0():
    assert overlap(["a", "b", "c"], ["d", "e"], k=10) == Overlap(0.0, 0.0, False)


def test_the_lists_are_cut_at_k():
    assert overlap(["a", "b", "x"], ["a", "b", "y"], k=2) == Overlap(1.0, 1.0, True)
    assert jaccard_at_k(["a", "b", "x"], ["a", "b", "y"], 3) == 0.5


@pytest.mark.parametrize("p", [0, 1, -0.1, 1.5, float("nan"), True, "0.9"])
def test_a_persistence_outside_0_to_1_is_refused_with_its_name(p):
    with pytest.raises(OverlapError, match="p \\(the persistence"):
        rbo_ext(["a"], ["b"], p)


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_a_depth_below_1_is_refused(k):
    with pytest.raises(OverlapError, match="k \\(the depth"):
        overlap(["a"], ["b"], k=k)


# --------------------------------------------------------------------------------------- random pairs


def _pairs(seed: int, count: int) -> list[tuple[str, list[str], list[str]]]:
    """`count` pairs of each kind: (kind, A, B). Ids from a small pool so that lists share ids often."""
    rng = random.Random(seed)
    pool = [f"doc{i}" for i in range(25)]

    def ranked(length: int) -> list[str]:
        return rng.sample(pool, length)

    found: list[tuple[str, list[str], list[str]]] = []
    for _ in range(count):
        a = ranked(rng.randint(0, 12))
        found.append(("identical", a, list(a)))
        found.append(("random, lengths drawn apart", ranked(rng.randint(0, 12)), ranked(rng.randint(0, 12))))
        n = rng.randint(1, 12)
        shuffled = rng.sample(a, len(a)) if a else ranked(n)
        found.append(("the same ids, another order", a or shuffled, shuffled))
        left = rng.sample(pool, rng.randint(1, 12))
        right = rng.sample([d for d in pool if d not in left], rng.randint(1, min(12, 25 - len(left))))
        found.append(("disjoint", left, right))
        longer = ranked(rng.randint(2, 12))
        found.append(("a prefix and a longer list", longer[: rng.randint(1, len(longer) - 1)], longer))
        # ties: a list of ids shows a tie only as a repeated id (module docstring)
        with_repeats = [rng.choice(pool) for _ in range(rng.randint(1, 14))]
        found.append(("repeated ids", with_repeats, [rng.choice(pool) for _ in range(rng.randint(0, 14))]))
    return found


PAIRS = _pairs(4243, 250)  # 1,500 pairs, 250 of each kind


def test_there_are_at_least_1000_pairs_of_every_kind_asked_for():
    kinds = {kind for kind, _, _ in PAIRS}
    assert len(PAIRS) >= 1000
    assert {"identical", "disjoint", "repeated ids", "a prefix and a longer list"} <= kinds
    assert any(len(distinct(a)) != len(distinct(b)) for _, a, b in PAIRS)  # different lengths


@pytest.mark.parametrize("p", [DEFAULT_P, 0.5, 0.98])
def test_rbo_equals_the_rbo_package_on_1500_random_pairs(p):
    for kind, a, b in PAIRS:
        k = 10
        ours = overlap(a, b, k=k, p=p).rbo
        assert ours == pytest.approx(oracle_rbo(a, b, k, p), abs=1e-12), (kind, a, b)
        assert rbo_ext(a, b, p) == pytest.approx(oracle_rbo(a, b, 100, p), abs=1e-12), (kind, a, b)


def test_jaccard_equals_scikit_learns_on_1500_random_pairs_at_every_depth():
    rng = random.Random(7)
    for kind, a, b in PAIRS:
        k = rng.randint(1, 12)
        assert jaccard_at_k(a, b, k) == pytest.approx(oracle_jaccard(a, b, k), abs=1e-15), (kind, a, b, k)
        assert overlap(a, b, k=k).jaccard == jaccard_at_k(a, b, k)


def test_identical_is_said_exactly_when_the_top_k_lists_are_the_same():
    for kind, a, b in PAIRS:
        found = overlap(a, b, k=10)
        same = distinct(a)[:10] == distinct(b)[:10]
        assert found.identical is same, (kind, a, b)
        if same:
            assert (found.jaccard, found.rbo) == (1.0, 1.0)
        assert 0.0 <= found.jaccard <= 1.0 and 0.0 <= found.rbo <= 1.0


def test_the_oracles_even_length_extrapolation_differs_on_lists_of_different_lengths():
    # `.rbo(ext=True)` cuts the longer list to the shorter one's length: it is eq. 32 on equal lengths only.
    for _, a, b in PAIRS:
        a, b = distinct(a), distinct(b)
        if a and b and len(a) == len(b):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                even = RankingSimilarity(a, b).rbo(p=0.9, ext=True)
            assert rbo_ext(a, b, 0.9) == pytest.approx(even, abs=1e-12)
    # ab against bca: eq. 30 reads ab against bc only, eq. 32 the whole of bca (1/3 above)
    cut = RankingSimilarity(list("ab"), list("bc")).rbo(p=0.5, ext=True)
    assert cut == pytest.approx(RankingSimilarity(list("ab"), list("bca")).rbo(p=0.5, ext=True))
    assert rbo_ext(list("ab"), list("bca"), 0.5) != pytest.approx(cut)


# ------------------------------------------------------------------------------------------ the means


def test_the_means_carry_the_reports_bootstrap_interval_over_the_queries():
    pairs = [(f"q{i}", a, b) for i, (_, a, b) in enumerate(PAIRS[:200])]
    found = summarize(pairs, k=10, seed=99)
    per_query = [overlap(a, b, k=10) for _, a, b in pairs]
    assert found.n == 200
    assert found.identical == sum(o.identical for o in per_query)
    assert found.jaccard == bootstrap_interval([o.jaccard for o in per_query], seed=99)
    assert found.rbo == bootstrap_interval([o.rbo for o in per_query], seed=99)
    assert found.rbo["mean"] == pytest.approx(float(np.mean([o.rbo for o in per_query])))
    assert found.rbo["low"] <= found.rbo["mean"] <= found.rbo["high"]
    assert summarize(pairs, k=10, seed=99) == found  # the same seed, the same interval
    data = found.to_dict(per_query=True)
    assert (data["k"], data["p"], data["n"]) == (10, 0.9, 200)
    assert data["per_query"][0] == {"id": "q0", **per_query[0].to_dict()}
    assert "per_query" not in found.to_dict()


def test_no_query_gives_means_without_a_value():
    found = summarize([], k=10)
    assert (found.n, found.identical, found.jaccard["mean"], found.rbo["low"]) == (0, 0, None, None)


def _report(rows: list[dict], k: int = 3) -> dict:
    return {"k": k, "per_query": rows}


def test_two_reports_are_compared_on_the_queries_both_answered():
    baseline = _report(
        [
            {"id": "q1", "ids": ["a", "b", "c"], "error": None},
            {"id": "q2", "ids": ["a", "b"], "error": None},
            {"id": "q3", "ids": [], "error": "timeout"},  # errored in the baseline
            {"id": "q4", "ids": ["x"], "error": None},  # retired
            {"id": "q6", "error": None},  # keeps no list
        ]
    )
    current = _report(
        [
            {"id": "q1", "ids": ["a", "b", "c"], "error": None},
            {"id": "q2", "ids": ["b", "z"], "error": None},
            {"id": "q3", "ids": ["a"], "error": None},
            {"id": "q5", "ids": ["a"], "error": None},  # new
            {"id": "q6", "ids": ["a"], "error": None},
        ]
    )
    assert report_pairs(current, baseline) == [
        ("q1", ["a", "b", "c"], ["a", "b", "c"]),
        ("q2", ["a", "b"], ["b", "z"]),
    ]
    found = report_overlap(current, baseline, seed=5)
    assert found is not None
    assert [qid for qid, _ in found.per_query] == ["q1", "q2"]
    assert (found.k, found.n, found.identical) == (3, 2, 1)
    assert found.jaccard["mean"] == pytest.approx((1.0 + 1 / 3) / 2)
    assert report_overlap(_report([{"id": "q9", "ids": ["a"], "error": None}]), baseline) is None


@pytest.mark.parametrize("size", [1400, 3000])
def test_both_figures_get_the_interval_each_gets_alone_whatever_the_size(size):
    # one set of draws past a chunk of pairs (assay.resampling), each drawn alone below: the same intervals
    rng = random.Random(size)
    pairs = [(f"q{i}", *PAIRS[rng.randrange(len(PAIRS))][1:]) for i in range(size)]
    found = summarize(pairs, k=10, seed=11)
    assert found.jaccard == bootstrap_interval([o.jaccard for _, o in found.per_query], seed=11)
    assert found.rbo == bootstrap_interval([o.rbo for _, o in found.per_query], seed=11)
