"""The side-by-side analysis (assay.sxs, docs/sxs.md "Analysis" and "Verdict"), no database: each figure
against an independent computation (scipy's `binomtest` and `wilcoxon`, the krippendorff package, plain
Python loops) on hand cases and hypothesis-generated studies; determinism for a seed; the sides undone;
the edge cases; the verdict each way; the refusals; JSON safety."""

from __future__ import annotations

import json
import math
import random
import statistics
import subprocess
import sys
import warnings
from collections import defaultdict
from dataclasses import replace
from itertools import product

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest, wilcoxon

from assay.sxs import (
    PREFERENCE_SCALE,
    REASON_LABELS,
    REASONS,
    MoreQueries,
    SxsAnalysis,
    SxsAnswer,
    SxsInputError,
    SxsQuery,
    SxsRule,
    analyse,
    sign_test_p,
    wilcoxon_p,
    wilson_interval,
)
from assay.sxs.verdict import MORE_CAP, shown, threshold

RATERS = ["ann", "ben", "cat", "dan"]


def _study(prefs: dict[str, list[int]], **query: object) -> tuple[list[SxsQuery], list[SxsAnswer]]:
    """Queries named by `prefs`, each answered by the first raters with those preferences."""
    queries = [SxsQuery(q, **query) for q in prefs]  # type: ignore[arg-type]
    answers = [
        SxsAnswer(q, RATERS[i], p, candidate_left=(i + len(q)) % 2 == 0)
        for q, ps in prefs.items()
        for i, p in enumerate(ps)
    ]
    return queries, answers


@st.composite
def studies(draw: st.DrawFn) -> tuple[list[SxsQuery], list[SxsAnswer], int]:
    n = draw(st.integers(1, 30))
    per_query = draw(st.integers(1, 3))
    queries, answers = [], []
    for i in range(n):
        qid = f"q{i:02d}"
        queries.append(
            SxsQuery(
                qid,
                stratum=draw(st.sampled_from(["", "head", "tail"])),
                critical=draw(st.booleans()),
                ndcg_change=draw(st.one_of(st.none(), st.floats(-1, 1))),
                identical=draw(st.booleans()) and draw(st.booleans()),
            )
        )
        if queries[-1].identical:
            continue
        k = draw(st.integers(0, len(RATERS)))
        for rater in RATERS[:k]:
            answers.append(
                SxsAnswer(
                    qid,
                    rater,
                    draw(st.sampled_from(PREFERENCE_SCALE)),
                    draw(st.booleans()),
                    reasons=tuple(draw(st.sets(st.sampled_from(REASONS), max_size=2))),
                    junk_baseline=draw(st.booleans()),
                    junk_candidate=draw(st.booleans()),
                )
            )
    return queries, answers, per_query


def _means(queries: list[SxsQuery], answers: list[SxsAnswer]) -> dict[str, float]:
    """Each answered query's mean preference, the plain way, in study order."""
    by: dict[str, list[int]] = defaultdict(list)
    for a in answers:
        by[a.query_id].append(a.preference)
    return {q.query_id: sum(by[q.query_id]) / len(by[q.query_id]) for q in queries if by[q.query_id]}


def _plain_interval(values: list[float], resamples: int, seed: int) -> tuple[float, float]:
    """The 95% percentile bootstrap over queries, one resample at a time: the draws are numpy's
    default_rng(seed) integers, a resamples x queries matrix (drawn as int32: the same indices
    assay.resampling draws as intp)."""
    draws = np.random.default_rng(seed).integers(0, len(values), (resamples, len(values)), dtype=np.int32)
    means = [statistics.fmean(values[i] for i in row) for row in draws.tolist()]
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def _scipy_wilcoxon(values: list[float]) -> float | None:
    if not any(values):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(wilcoxon(values).pvalue)


def _flips_wilcoxon(values: list[float]) -> float | None:
    """The signed-rank p-value by enumerating every sign flip of the non-zero values (what scipy's exact
    permutation test does for 13 values or fewer; scipy takes about a second per call there, so the
    generated studies use this loop and `test_wilcoxon_flips_against_scipy` holds the two equal)."""
    d = [v for v in values if v != 0]
    if not d:
        return None
    magnitudes = sorted(abs(v) for v in d)

    def rank(m: float) -> float:
        first = magnitudes.index(m) + 1
        return first + (magnitudes.count(m) - 1) / 2

    ranks = [rank(abs(v)) for v in d]
    observed = sum(r for r, v in zip(ranks, d, strict=True) if v > 0)
    null = [
        sum(r for r, s in zip(ranks, signs, strict=True) if s) for signs in product([0, 1], repeat=len(d))
    ]
    less = sum(x <= observed + 1e-9 for x in null) / len(null)
    greater = sum(x >= observed - 1e-9 for x in null) / len(null)
    return min(1.0, 2 * min(less, greater))


def test_the_interface_names() -> None:
    assert PREFERENCE_SCALE == (-3, -2, -1, 0, 1, 2, 3)
    assert REASONS == ("relevance", "snippet", "duplicates", "surface", "missing", "freshness", "other")
    assert set(REASON_LABELS) == set(REASONS)
    assert REASON_LABELS["relevance"] == "relevance at the top"
    rule = SxsRule()
    assert (rule.min_lower, rule.critical_junk_fails, rule.min_queries) == (-0.25, True, 20)
    assert SxsRule.from_dict(rule.to_dict()) == rule


@settings(max_examples=150, deadline=None)
@given(studies())
def test_every_figure_against_the_oracles(study: tuple[list[SxsQuery], list[SxsAnswer], int]) -> None:
    queries, answers, per_query = study
    result = analyse(queries, answers, answers_per_query=per_query, resamples=200, seed=3)
    d = result.to_dict()
    json.dumps(d, allow_nan=False)
    asked = [q for q in queries if not q.identical]
    means = _means(asked, answers)
    values = list(means.values())
    overall = d["overall"]
    assert d["asked"] == len(asked) and d["identical"] == len(queries) - len(asked)
    assert d["answers"] == len(answers)
    assert overall["queries"] == len(values)
    counts: dict[str, int] = defaultdict(int)
    for a in answers:
        counts[a.query_id] += 1
    assert d["answered"] == sum(counts[q.query_id] >= per_query for q in asked)
    assert d["unanswered"] == sum(counts[q.query_id] == 0 for q in asked)
    if not values:
        assert overall["mean"] is None and overall["low"] is None
        return
    assert overall["mean"] == pytest.approx(sum(values) / len(values), abs=1e-12)
    assert (overall["low"], overall["high"]) == pytest.approx(_plain_interval(values, 200, 3), abs=1e-12)
    spread = statistics.stdev(values) if len(values) > 1 else None
    assert overall["spread"] == (None if spread is None else pytest.approx(spread, abs=1e-12))
    wins = sum(v > 0 for v in values)
    losses = sum(v < 0 for v in values)
    ties = len(values) - wins - losses
    assert (overall["wins"], overall["ties"], overall["losses"]) == (wins, ties, losses)
    if wins + losses:
        test = binomtest(wins, wins + losses)
        ci = test.proportion_ci(0.95, method="wilson")
        assert overall["win_rate"] == pytest.approx(wins / (wins + losses))
        assert (overall["win_low"], overall["win_high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)
        assert overall["sign_p"] == pytest.approx(test.pvalue, rel=1e-9, abs=1e-15)
    else:
        assert overall["win_rate"] is overall["sign_p"] is None
    plain_flips = len(values) <= 13 and (0 in values or len(set(map(abs, values))) < len(values))
    expected = _flips_wilcoxon(values) if plain_flips else _scipy_wilcoxon(values)
    if expected is None:
        assert overall["wilcoxon_p"] is None
    else:
        assert overall["wilcoxon_p"] == pytest.approx(expected, rel=1e-9, abs=1e-15)

    _check_the_rest(queries, answers, per_query, d)


def _check_the_rest(queries: list[SxsQuery], answers: list[SxsAnswer], per_query: int, d: dict) -> None:
    """Agreement, position, tags, junk, offline rows and strata of one generated study, the plain way."""
    asked = [q for q in queries if not q.identical]
    means = _means(asked, answers)
    by: dict[str, dict[str, int]] = defaultdict(dict)
    for a in answers:
        by[a.query_id][a.rater] = a.preference
    # Alpha: the package on the raters x queries table of the queries with two or more answers.
    pairable = [q.query_id for q in asked if len(by[q.query_id]) >= 2]
    table = np.array([[by[q].get(r, np.nan) for q in pairable] for r in RATERS], dtype=float)
    used = {v for q in pairable for v in by[q].values()}
    if len(used) >= 2:
        expected = krippendorff.alpha(
            reliability_data=table, level_of_measurement="ordinal", value_domain=list(PREFERENCE_SCALE)
        )
        assert d["agreement"]["alpha"] == pytest.approx(expected, abs=1e-12)
    else:
        assert d["agreement"]["alpha"] is None and d["agreement"]["reading"] is None
    assert d["agreement"]["queries"] == len(pairable)
    split = [q for q in means if min(by[q].values()) < 0 < max(by[q].values())]
    assert d["agreement"]["split_queries"] == split
    # Position: non-zero answers preferring the side shown on the left.
    shown_left = [(a.preference > 0) == a.candidate_left for a in answers if a.preference]
    position = d["position"]
    if shown_left:
        ci = binomtest(sum(shown_left), len(shown_left)).proportion_ci(0.95, method="wilson")
        assert position["left_share"] == pytest.approx(sum(shown_left) / len(shown_left))
        assert (position["low"], position["high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)
        assert position["warn"] == (not ci.low <= 0.5 <= ci.high)
    else:
        assert position["left_share"] is None and position["warn"] is False
    for row in position["raters"]:
        mine = [a for a in answers if a.rater == row["rater"]]
        decided = [(a.preference > 0) == a.candidate_left for a in mine if a.preference]
        assert row["answers"] == len(mine)
        assert row["left_rate"] == (sum(decided) / len(decided) if decided else None)
        compared = [a for a in mine if len(by[a.query_id]) >= 2]
        others = [statistics.fmean(p for r, p in by[a.query_id].items() if r != a.rater) for a in compared]
        same = sum(np.sign(a.preference) == np.sign(o) for a, o in zip(compared, others, strict=True))
        assert row["agreement"] == (same / len(compared) if compared else None)
    assert [row["rater"] for row in position["raters"]] == sorted({a.rater for a in answers})
    # Tags by the preferred side, junk by side, in study order.
    order = [q.query_id for q in asked]
    for side, sign in (("baseline", -1), ("same", 0), ("candidate", 1)):
        for tag in REASONS:
            ids = {a.query_id for a in answers if np.sign(a.preference) == sign and tag in a.reasons}
            assert d["reasons"][side][tag] == [q for q in order if q in ids]
    for side in ("baseline", "candidate"):
        ids = {a.query_id for a in answers if getattr(a, f"junk_{side}")}
        assert d["junk"][side] == [q for q in order if q in ids]
    critical = [q.query_id for q in asked if q.critical and q.query_id in d["junk"]["candidate"]]
    assert d["junk"]["critical"] == critical
    # Offline: every answered query once, conflicts first, then by gap.
    rows = d["offline"]
    assert sorted(r["query_id"] for r in rows) == sorted(means)
    change = {q.query_id: q.ndcg_change for q in asked}
    for r in rows:
        c, p = change[r["query_id"]], means[r["query_id"]]
        assert r["preference"] == pytest.approx(p) and r["ndcg_change"] == c
        assert r["conflict"] == (
            c is not None and abs(p) >= 0.5 and abs(c) > 0.05 + 1e-12 and (p > 0) != (c > 0)
        )
    keys = [(not r["conflict"], r["gap"] is None, -(r["gap"] or 0)) for r in rows]
    assert keys == sorted(keys)
    # Each stratum's figures are those of the stratum analysed alone.
    named = sorted({q.stratum for q in asked}) if any(q.stratum for q in asked) else []
    assert list(d["strata"]) == named
    for name in named:
        members = [q for q in asked if q.stratum == name]
        ids = {q.query_id for q in members}
        alone = analyse(members, [a for a in answers if a.query_id in ids], answers_per_query=per_query,
                        resamples=200, seed=3)  # fmt: skip
        assert d["strata"][name] == alone.to_dict()["overall"]


def test_wilcoxon_flips_against_scipy() -> None:
    """Ties or zeros with 13 values or fewer: scipy's exact permutation test (slow, so a few cases)."""
    cases: list[list[float]] = [
        [1, 1, 2, 0, -1, 3, 2, 1, 0, 2, 1, 1],
        [1 / 3, 2 / 3, 1 / 3, -1 / 3, 0, 1, 1, -2, 3, 0.5, 0.5, -0.5, 2],
        [0, 0, 1],
        [-1, -1],
        [0.5, -0.5, 0.5, -0.5],
    ]
    for values in cases:
        p, method = wilcoxon_p(np.array(values, dtype=float))
        assert method == "exact flips"
        assert p == pytest.approx(_scipy_wilcoxon(values), rel=1e-12)
        assert p == pytest.approx(_flips_wilcoxon(values), rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=120).filter(
        lambda v: len(v) > 13 or (0 not in v and len(set(map(abs, v))) == len(v))
    ),
    st.sampled_from([None, 0, 1]),
)
def test_wilcoxon_exact_and_normal_against_scipy(values: list[float], rounding: int | None) -> None:
    """Without ties or zeros up to 50 values: the exact distribution; beyond 13 values with ties or zeros,
    and beyond 50 in any case: the normal approximation with the tie correction (scipy's "auto")."""
    if rounding is not None and len(values) > 13:
        values = [round(v, rounding) for v in values]
    p, method = wilcoxon_p(np.array(values))
    expected = _scipy_wilcoxon(values)
    if expected is None:
        assert p is None
        return
    assert p == pytest.approx(expected, rel=1e-9, abs=1e-300)
    exact = len(values) <= 50 and 0 not in values and len(set(map(abs, values))) == len(values)
    assert method == ("exact" if exact else "normal")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        named = wilcoxon(values, method="exact" if exact else "asymptotic").pvalue
    assert p == pytest.approx(float(named), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(
    ("wins", "losses"), [(0, 1), (1, 1), (7, 3), (0, 20), (60, 40), (1033, 717), (1000, 1000)]
)
def test_the_sign_test_against_binomtest(wins: int, losses: int) -> None:
    assert sign_test_p(wins, losses) == pytest.approx(binomtest(wins, wins + losses).pvalue, rel=1e-9)
    assert sign_test_p(0, 0) is None


def test_wilson_against_scipy() -> None:
    assert wilson_interval(0, 0) is None
    for n in (1, 2, 5, 17, 100, 2001):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
            assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_alpha_and_its_interval_against_the_package_on_every_resample() -> None:
    """The interval's resamples are whole queries drawn by numpy's default_rng(seed) (as the golden sets'
    alpha, `bootstrap_samples`); the package on each resample gives the same percentiles."""
    prefs = {f"q{i}": [(i * 5 + j * 3) % 7 - 3 for j in range(1 + i % 3)] for i in range(12)}
    prefs["q0"], prefs["q3"] = [2, 3], [1, 1, 2]
    queries, answers = _study(prefs)
    result = analyse(queries, answers, answers_per_query=2, resamples=60, seed=11)
    pairable = [q for q, ps in prefs.items() if len(ps) >= 2]
    blocks = [np.array([[p] for p in prefs[q]] + [[np.nan]] * (3 - len(prefs[q]))) for q in pairable]
    draws = np.random.default_rng(11).integers(0, len(pairable), size=(60, len(pairable)))
    alphas = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in draws:
            data = np.concatenate([blocks[i] for i in row], axis=1)
            alphas.append(
                krippendorff.alpha(
                    reliability_data=data, level_of_measurement="ordinal", value_domain=list(PREFERENCE_SCALE)
                )
            )
    finite = [a for a in alphas if not math.isnan(a)]
    expected = np.percentile(finite, [2.5, 97.5])
    agreement = result.agreement
    assert (agreement.low, agreement.high) == pytest.approx(tuple(expected), abs=1e-12)
    assert agreement.resamples_undefined == len(alphas) - len(finite)
    assert agreement.queries == len(pairable)


def test_the_result_is_json_safe_and_a_study_of_nothing_has_no_figures() -> None:
    result = analyse([], [], answers_per_query=3)
    assert isinstance(result, SxsAnalysis)
    d = result.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["overall"]["mean"] is None and d["agreement"]["alpha"] is None
    assert d["position"]["left_share"] is None and d["offline"] == []
    assert d["verdict"]["result"] == "inconclusive" and d["verdict"]["more"] is None


def test_the_core_runs_without_scipy_or_krippendorff() -> None:
    probe = (
        "import sys\n"
        "for name in ('scipy', 'krippendorff', 'sklearn'): sys.modules[name] = None\n"
        "from assay.sxs import SxsQuery, SxsAnswer, analyse\n"
        "qs = [SxsQuery(f'q{i}') for i in range(5)]\n"
        "ans = [SxsAnswer(f'q{i}', r, (i + j) % 7 - 3, j == 0)\n"
        "       for i in range(5) for j, r in enumerate('ab')]\n"
        "print(analyse(qs, ans, answers_per_query=2).verdict.result)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "inconclusive"  # five queries answered, the mean -0.5, spread -2.5 to 1.5


@settings(max_examples=40, deadline=None)
@given(studies(), st.randoms(use_true_random=False))
def test_one_seed_one_result_whatever_the_order_of_the_answers(
    study: tuple[list[SxsQuery], list[SxsAnswer], int], shuffler: random.Random
) -> None:
    queries, answers, per_query = study
    first = analyse(queries, answers, answers_per_query=per_query, resamples=100, seed=5).to_dict()
    shuffled = list(answers)
    shuffler.shuffle(shuffled)
    assert analyse(queries, shuffled, answers_per_query=per_query, resamples=100, seed=5).to_dict() == first


def test_another_seed_draws_other_resamples() -> None:
    queries, answers = _study({f"q{i}": [(i * 3) % 7 - 3, (i * 5) % 7 - 3] for i in range(30)})
    one = analyse(queries, answers, answers_per_query=2, seed=1).overall
    two = analyse(queries, answers, answers_per_query=2, seed=2).overall
    assert one.mean == two.mean and (one.low, one.high) != (two.low, two.high)


@settings(max_examples=40, deadline=None)
@given(studies())
def test_the_sides_are_undone_the_side_shown_changes_the_position_only(
    study: tuple[list[SxsQuery], list[SxsAnswer], int],
) -> None:
    queries, answers, per_query = study
    flipped = [replace(a, candidate_left=not a.candidate_left) for a in answers]
    one = analyse(queries, answers, answers_per_query=per_query, resamples=100).to_dict()
    two = analyse(queries, flipped, answers_per_query=per_query, resamples=100).to_dict()
    p1, p2 = one.pop("position"), two.pop("position")
    assert one == two
    assert p1["nonzero"] == p2["nonzero"]
    if p1["left_share"] is not None:
        assert p1["left_share"] == pytest.approx(1 - p2["left_share"])
        assert (p1["low"], p1["high"]) == pytest.approx((1 - p2["high"], 1 - p2["low"]))
    for r1, r2 in zip(p1["raters"], p2["raters"], strict=True):
        assert r1["agreement"] == r2["agreement"]
        assert r1["left_rate"] == (None if r2["left_rate"] is None else pytest.approx(1 - r2["left_rate"]))


def test_queries_without_answers_are_counted_and_left_out() -> None:
    queries, answers = _study({"q1": [1, 2, 1], "q2": [-1, 0, 0], "q3": []})
    queries.append(SxsQuery("q4", identical=True))
    result = analyse(queries, answers, answers_per_query=3, rule=SxsRule(min_queries=2))
    assert (result.asked, result.identical, result.answered, result.partial, result.unanswered) == (
        3,
        1,
        2,
        0,
        1,
    )
    assert result.overall.queries == 2 and result.overall.mean == pytest.approx((4 / 3 - 1 / 3) / 2)
    assert [r.query_id for r in result.offline] == ["q1", "q2"]


def test_a_study_with_no_answer_yet() -> None:
    queries = [SxsQuery(f"q{i}") for i in range(4)]
    result = analyse(queries, [], answers_per_query=2)
    assert (result.asked, result.answered, result.unanswered, result.overall.queries) == (4, 0, 4, 0)
    assert result.overall.mean is None and result.agreement.alpha is None
    assert result.verdict.result == "inconclusive"
    assert result.verdict.why[:2] == [
        "0 of 4 asked queries have all 2 answers;"
        " the rule needs 4 (the smaller of its 20 and the queries asked)",
        "4 more fully answered queries would reach the rule's minimum of 4; the spread is not known yet,"
        " so whether that decides it is not known either",
    ]
    assert result.verdict.more == MoreQueries(toward=None, queries=4, total=4, capped=False)


def test_one_rater_has_no_agreement() -> None:
    queries, answers = _study({f"q{i}": [i % 3 - 1] for i in range(6)})
    result = analyse(queries, answers, answers_per_query=1)
    assert result.agreement.alpha is None and result.agreement.reading is None
    assert result.agreement.why == "no query has answers from two or more raters"
    assert result.agreement.queries == 0 and result.agreement.split_queries == []
    assert result.position.raters[0].agreement is None and result.position.raters[0].compared == 0
    json.dumps(result.to_dict(), allow_nan=False)


def test_all_ties() -> None:
    queries, answers = _study({f"q{i}": [0, 0, 0] for i in range(25)})
    result = analyse(queries, answers, answers_per_query=3)
    o = result.overall
    assert (o.mean, o.low, o.high, o.wins, o.ties, o.losses) == (0.0, 0.0, 0.0, 0, 25, 0)
    assert o.win_rate is o.win_low is o.sign_p is o.wilcoxon_p is None and o.wilcoxon_method == ""
    assert result.agreement.alpha is None
    assert result.agreement.why == "every answer on those queries is 0: alpha needs two values in use"
    assert result.position.left_share is None and result.position.warn is False
    assert result.verdict.result == "pass"  # no difference at all: 0 >= -0.25
    json.dumps(result.to_dict(), allow_nan=False)


def test_all_identical() -> None:
    queries = [SxsQuery(f"q{i}", identical=True) for i in range(3)]
    result = analyse(queries, [], answers_per_query=3)
    assert (result.asked, result.identical) == (0, 3)
    assert result.verdict.result == "inconclusive" and result.verdict.more is None
    assert (
        result.verdict.why[0] == "no query was asked: all 3 are identical on both sides, nothing was compared"
    )


def test_one_query() -> None:
    queries, answers = _study({"q1": [2, 1, 3]})
    result = analyse(queries, answers, answers_per_query=3)
    o = result.overall
    assert (o.mean, o.low, o.high, o.wins) == (2.0, 2.0, 2.0, 1)
    assert o.sign_p == 1.0 and o.wilcoxon_p == 1.0 and o.wilcoxon_method == "exact"
    assert result.agreement.alpha is not None and result.agreement.low is None
    assert "one query only" in result.agreement.why
    assert result.verdict.result == "pass"  # min(20, 1 asked) = 1 query is enough


def _verdict_study(mean_prefs: list[list[int]], **options: object) -> SxsAnalysis:
    queries, answers = _study({f"q{i:02d}": ps for i, ps in enumerate(mean_prefs)})
    return analyse(queries, answers, answers_per_query=len(mean_prefs[0]), **options)  # type: ignore[arg-type]


def test_the_verdict_passes() -> None:
    result = _verdict_study([[1, 0, 1]] * 10 + [[0, 0, -1]] * 10)
    assert result.verdict.result == "pass"
    assert result.verdict.why == [
        f"the mean preference is 0.17 (95% interval {result.overall.low:.2f} to {result.overall.high:.2f}):"
        " the lower bound is at or above the rule's -0.25",
        "no rater flagged junk in the candidate's top three on a critical query",
    ]
    assert result.verdict.rule == SxsRule().to_dict()


def test_the_verdict_fails_when_the_interval_lies_below_0_and_past_the_bound() -> None:
    result = _verdict_study([[-1, 0, 0]] * 12 + [[0, 0, 0]] * 4 + [[-2, -1, 0]] * 4)
    assert result.overall.low is not None and result.overall.low < -0.25
    assert result.verdict.result == "fail" and result.verdict.more is None
    assert result.verdict.why[0] == (
        "the mean preference is -0.40 (95% interval -0.55 to -0.27): the lower bound is below the rule's"
        " -0.25 and the upper bound is below 0: the candidate is worse"
    )
    assert (round(result.overall.low, 2), round(result.overall.high or 0, 2)) == (-0.55, -0.27)


def test_an_upper_bound_just_below_0_fails_and_one_at_0_is_inconclusive() -> None:
    # Every query -1 but one at 0: the interval's upper bound is below 0 (the resamples that draw the 0
    # query enough are rare) or, with the rule's bound below every resample, pass; then shift to reach 0.
    worse = _verdict_study([[-1]] * 19 + [[0]])
    assert worse.overall.high is not None and worse.overall.high < 0
    assert worse.overall.low is not None and worse.overall.low < -0.25
    assert worse.verdict.result == "fail"
    at_zero = _verdict_study([[-1]] * 10 + [[0]] * 10 + [[1]] * 10)  # symmetric: the mean 0
    assert at_zero.overall.high is not None and at_zero.overall.high > 0
    assert at_zero.verdict.result == "inconclusive"
    # The interval of every query at 0 is [0, 0]: its upper bound is 0, not below it; the bound -0.25 passes.
    assert _verdict_study([[0]] * 20).verdict.result == "pass"
    assert _verdict_study([[0]] * 20, rule=SxsRule(min_lower=0.5)).verdict.result == "inconclusive"


def test_a_straddling_interval_is_inconclusive_with_how_many_more_queries_would_decide_it() -> None:
    # Ten queries at a mean of +0.40, widely spread: below the bound and above 0 at once.
    prefs = [[2, 1], [-1, -2], [3, 1], [0, 1], [-2, 0], [1, 2], [0, -1], [2, 3], [-3, -1], [1, 1]]
    result = _verdict_study(prefs, rule=SxsRule(min_queries=10))
    o = result.overall
    assert o.mean is not None and o.low is not None and o.high is not None
    assert o.mean == pytest.approx(0.4)
    assert o.low < -0.25 < 0 < o.high
    assert result.verdict.result == "inconclusive"
    # The lower half-width scales as 1/sqrt(n): it reaches the 0.65 between the mean and the bound at
    # n = 10 * ((mean - low) / 0.65)^2 queries, rounded up.
    total = math.ceil(10 * ((o.mean - o.low) / (o.mean + 0.25)) ** 2)
    assert total > 10
    assert result.verdict.more == MoreQueries(toward="pass", queries=total - 10, total=total, capped=False)
    assert result.verdict.why[0] == (
        f"the mean preference is 0.40 (95% interval {o.low:.2f} to {o.high:.2f}): the lower bound is below"
        " the rule's -0.25 and the upper bound is not below 0: neither non-inferiority nor a loss is shown"
    )
    assert result.verdict.why[1] == (
        f"about {total - 10} more fully answered queries ({total} in all, at this mean and spread) would"
        " likely decide it toward pass; the study asks 10, so a larger study is needed"
    )


def test_an_inconclusive_study_leaning_worse_counts_toward_fail() -> None:
    # The mean -0.50 is past the bound: more queries would likely bring the upper bound below 0.
    prefs = [[-3, -3]] * 5 + [[2, 2]] * 5 + [[0, -1]] * 10
    result = _verdict_study(prefs)
    o = result.overall
    assert o.mean is not None and o.low is not None and o.high is not None
    assert o.mean < -0.25 and o.high > 0 and result.verdict.result == "inconclusive"
    total = math.floor(20 * ((o.high - o.mean) / -o.mean) ** 2) + 1  # the upper bound strictly below 0
    assert result.verdict.more == MoreQueries(toward="fail", queries=total - 20, total=total, capped=False)
    assert "would likely decide it toward fail" in result.verdict.why[1]
    assert "a larger study" in result.verdict.why[1]  # more than the 20 asked


def test_a_mean_on_the_bound_or_between_0_and_a_positive_bound_is_not_decided_by_more_queries() -> None:
    prefs = [[1], [-1]] * 10  # the mean 0, spread out
    result = _verdict_study(prefs, rule=SxsRule(min_lower=0.0))
    assert result.verdict.result == "inconclusive" and result.verdict.more is None
    assert result.verdict.why[1] == (
        "the mean (0.00) sits between 0 and the rule's 0.00: more queries at this mean would likely not"
        " decide it"
    )
    # A mean a hair above the bound: the estimate is capped and says "more than".
    near = _verdict_study([[1], [-1]] * 10 + [[1]], rule=SxsRule(min_lower=0.047))
    assert near.overall.mean == pytest.approx(1 / 21)
    assert near.verdict.result == "inconclusive"
    assert near.verdict.more == MoreQueries(toward="pass", queries=MORE_CAP - 21, total=MORE_CAP, capped=True)
    assert near.verdict.why[1].startswith(
        f"more than {MORE_CAP:,} fully answered queries would likely be needed to decide it: the mean (0.05)"
        " sits almost on the rule's bound"
    )


def test_too_few_answered_queries_are_inconclusive_even_when_the_interval_would_decide() -> None:
    queries, answers = _study({f"q{i:02d}": [-3, -3] if i < 5 else [] for i in range(30)})
    result = analyse(queries, answers, answers_per_query=2)
    assert result.overall.high == -3.0 and result.verdict.result == "inconclusive"
    # The interval as it reads so far, concluding nothing: five queries are not the twenty the rule asks.
    assert result.verdict.why[1] == (
        "the mean preference is -3.00 (95% interval -3.00 to -3.00): the lower bound is below the rule's"
        " -0.25 and the upper bound is below 0"
    )
    # No spread (every answer -3): only the rule's minimum is counted.
    assert result.verdict.more == MoreQueries(toward=None, queries=15, total=20, capped=False)


def test_a_lower_bound_exactly_at_the_rule_passes() -> None:
    result = _verdict_study([[-1, 0, 0, 0]] * 20)  # every query -0.25: the interval is [-0.25, -0.25]
    assert (result.overall.low, result.overall.high) == (-0.25, -0.25)
    assert result.verdict.result == "pass" and result.verdict.more is None


def test_rounding_never_shows_a_bound_on_the_wrong_side() -> None:
    rule = SxsRule(min_lower=-0.2549)
    result = _verdict_study([[-1, 0, 0, 0]] * 20, rule=rule)
    assert result.verdict.result == "pass"
    assert (
        "interval -0.25 to -0.25): the lower bound is at or above the rule's -0.2549" in result.verdict.why[0]
    )
    assert shown(-0.2549, -0.25) == "-0.255" and shown(-0.2549) == "-0.25"
    assert shown(-0.2501, -0.25) == "-0.2501" and shown(-0.001, 0.0) == "-0.001" and shown(-0.001) == "0.00"
    assert threshold(-0.25) == "-0.25" and threshold(0) == "0.00" and threshold(-0.2549) == "-0.2549"


def test_junk_on_a_critical_query_fails_when_the_rule_says_so() -> None:
    queries, answers = _study({f"q{i:02d}": [1, 1] for i in range(20)})
    queries[3] = SxsQuery("q03", critical=True)
    queries[4] = SxsQuery("q04", critical=False)
    answers[6] = replace(answers[6], junk_candidate=True)  # q03, first rater
    answers[8] = replace(answers[8], junk_candidate=True)  # q04: not critical
    answers[10] = replace(answers[10], junk_baseline=True)  # q05: the baseline's side
    result = analyse(queries, answers, answers_per_query=2)
    assert result.junk == {"baseline": ["q05"], "candidate": ["q03", "q04"], "critical": ["q03"]}
    assert result.verdict.result == "fail"
    assert result.verdict.why[-1] == (
        "junk was flagged in the candidate's top three on 1 critical query (q03);"
        " the rule fails a study on it"
    )
    lenient = analyse(queries, answers, answers_per_query=2, rule=SxsRule(critical_junk_fails=False))
    assert lenient.verdict.result == "pass"
    assert lenient.verdict.why[-1].endswith("the rule does not fail on it")
    # However few queries are answered: no further answer takes the flag back.
    early = analyse(queries, answers[:8], answers_per_query=2)
    assert early.answered == 4 and early.verdict.result == "fail" and early.verdict.more is None


def test_too_few_fully_answered_queries_are_inconclusive() -> None:
    queries, answers = _study({f"q{i:02d}": [2, 2] if i < 19 else [2] for i in range(30)})
    result = analyse(queries, answers, answers_per_query=2)
    assert (result.answered, result.partial) == (19, 11)
    assert result.verdict.result == "inconclusive"
    assert result.verdict.why[0].startswith("19 of 30 asked queries have all 2 answers; the rule needs 20")
    # Every query +2: no spread to scale, so only the rule's minimum is missing.
    assert result.verdict.more == MoreQueries(toward=None, queries=1, total=20, capped=False)
    assert (
        analyse(queries, answers, answers_per_query=2, rule=SxsRule(min_queries=19)).verdict.result == "pass"
    )
    # Fewer queries asked than the rule's minimum: all of them are needed, and enough.
    few, few_answers = _study({f"q{i}": [1, 2] for i in range(5)})
    assert analyse(few, few_answers, answers_per_query=2).verdict.result == "pass"


def test_position_bias_warns_when_the_interval_excludes_a_half() -> None:
    # 30 answers, the candidate always on the left and always preferred: all prefer the left.
    queries = [SxsQuery(f"q{i}") for i in range(15)]
    answers = [SxsAnswer(f"q{i}", r, 1, True) for i in range(15) for r in ("ann", "ben")]
    position = analyse(queries, answers, answers_per_query=2).position
    assert position.left_share == 1.0 and position.warn is True and position.nonzero == 30
    # Sides balanced: half prefer the left.
    balanced = [replace(a, candidate_left=i % 2 == 0) for i, a in enumerate(answers)]
    position = analyse(queries, balanced, answers_per_query=2).position
    assert position.left_share == 0.5 and position.warn is False
    assert [(r.rater, r.answers, r.left_rate, r.agreement) for r in position.raters] == [
        ("ann", 15, 1.0, 1.0),
        ("ben", 15, 0.0, 1.0),
    ]


def test_tags_split_queries_and_offline_conflicts_by_hand() -> None:
    queries = [
        SxsQuery("a", ndcg_change=-0.2),  # people prefer the candidate, nDCG the baseline: conflict
        SxsQuery("b", ndcg_change=0.3),  # both the candidate
        SxsQuery("c", ndcg_change=0.04),  # people the baseline, nDCG within the margin: no conflict
        SxsQuery("d", ndcg_change=0.5),  # people the baseline by 1.0, nDCG the candidate: the larger conflict
        SxsQuery("e"),  # no nDCG change
    ]
    answers = [
        SxsAnswer("a", "ann", 2, True, reasons=("relevance", "snippet")),
        SxsAnswer("a", "ben", 1, False, reasons=("relevance",)),
        SxsAnswer("b", "ann", 3, True),
        SxsAnswer("c", "ann", -2, True, reasons=("duplicates",)),
        SxsAnswer("c", "ben", 1, True),
        SxsAnswer("d", "ann", -1, False, reasons=("missing",)),
        SxsAnswer("e", "ann", 0, False, reasons=("other",)),
    ]
    result = analyse(queries, answers, answers_per_query=2)
    assert [(r.query_id, r.conflict) for r in result.offline] == [
        ("d", True),
        ("a", True),
        ("b", False),  # gap |3 / 3 - 0.3| = 0.7
        ("c", False),  # gap |-0.5 / 3 - 0.04| = 0.21
        ("e", False),
    ]
    assert result.offline[0].gap == pytest.approx(1 / 3 + 0.5)
    assert result.agreement.split_queries == ["c"]
    assert result.reasons["candidate"]["relevance"] == ["a"]
    assert result.reasons["candidate"]["snippet"] == ["a"]
    assert result.reasons["baseline"]["duplicates"] == ["c"]
    assert result.reasons["baseline"]["missing"] == ["d"]
    assert result.reasons["same"]["other"] == ["e"]
    assert list(result.reasons["candidate"]) == list(REASONS)


def test_the_rule_round_trips_and_refuses_bad_fields_in_words() -> None:
    rule = SxsRule(min_lower=0, critical_junk_fails=False, min_queries=5)
    assert SxsRule.from_dict(json.loads(json.dumps(rule.to_dict()))) == rule
    assert SxsRule.from_dict({"min_lower": -0.5}) == SxsRule(min_lower=-0.5)
    with pytest.raises(ValueError) as caught:
        SxsRule.from_dict({"min_lower": "low", "critical_junk_fails": 1, "min_queries": True, "extra": 1})
    assert str(caught.value) == (
        "extra: unknown field (the fields are min_lower, critical_junk_fails, min_queries); "
        "min_lower: 'low' must be a number; critical_junk_fails: 1 must be true or false; "
        "min_queries: True must be a whole number of at least 1"
    )
    with pytest.raises(ValueError, match=r"min_lower: 4 must be between -3 and 3"):
        SxsRule(min_lower=4)
    with pytest.raises(ValueError, match=r"min_lower: nan must be a number"):
        SxsRule.from_dict({"min_lower": math.nan})
    with pytest.raises(ValueError, match="a rule must be a mapping of its fields, not list"):
        SxsRule.from_dict([])


def test_bad_input_is_refused_in_words_all_at_once() -> None:
    queries = [
        SxsQuery("q1"),
        SxsQuery("q1"),
        SxsQuery("q2", identical=True),
        SxsQuery("", ndcg_change=math.inf),
    ]
    answers = [
        SxsAnswer("q1", "ann", 4, True),
        SxsAnswer("q1", "ann", 1, True),
        SxsAnswer("q2", "ben", 1, True),
        SxsAnswer("nope", "ben", 1, "yes"),  # type: ignore[arg-type]
        SxsAnswer("q1", "cat", True, True, reasons=("relevance", "relevance")),
        SxsAnswer("q1", "dan", 0, True, reasons=("taste",)),
    ]
    with pytest.raises(SxsInputError) as caught:
        analyse(queries, answers, answers_per_query=0, margin=-1, alpha_thresholds=(0.5, 0.7), seed=-1)
    assert isinstance(caught.value, ValueError)
    assert caught.value.errors == [
        "answers_per_query: 0 must be a whole number of at least 1",
        "seed: -1 must be a whole number of at least 0",
        "margin: -1 must be a number of at least 0",
        "alpha_thresholds (good, tentative): tentative 0.7 must not be above good (0.5)",
        "queries[1]: query 'q1' is already queries[0]",
        "queries[3].query_id: '' must be a non-empty string",
        "queries[3].ndcg_change: inf must be a finite number or None",
        "answers[0].preference: 4 is not on the scale -3..3",
        "answers[1]: rater 'ann' already answered 'q1' at answers[0]",
        "answers[2]: query 'q2' is identical on both sides and is not asked",
        "answers[3].query_id: 'nope' is not a query of the study",
        "answers[3].candidate_left: 'yes' must be true or false",
        "answers[4].preference: True is not on the scale -3..3",
        "answers[4].reasons: ('relevance', 'relevance') names a tag twice",
        "answers[5].reasons: ['taste'] not among"
        " relevance, snippet, duplicates, surface, missing, freshness, other",
    ]
    with pytest.raises(SxsInputError, match=r"queries\[0\]: dict is not an SxsQuery"):
        analyse([{"query_id": "q1"}], [], answers_per_query=1)  # type: ignore[list-item]
    with pytest.raises(SxsInputError, match=r"rule: dict is not an SxsRule; resamples: 0 must be"):
        analyse([], [], answers_per_query=1, rule={}, resamples=0)  # type: ignore[arg-type]


def test_the_reading_of_alpha_from_its_thresholds() -> None:
    queries, answers = _study({f"q{i}": [i % 7 - 3, i % 7 - 3, (i + 1) % 7 - 3] for i in range(14)})
    alpha = analyse(queries, answers, answers_per_query=3).agreement.alpha
    assert alpha is not None and 0 < alpha < 1

    def read(good: float, tentative: float) -> tuple[str | None, str]:
        a = analyse(queries, answers, answers_per_query=3, alpha_thresholds=(good, tentative)).agreement
        return a.reading, a.why

    assert read(alpha, alpha / 2)[0] == "good"  # at the threshold is good
    assert read(1.0, alpha) == (
        "tentative",
        f"alpha {shown(alpha, alpha)} >= {threshold(alpha)}; good needs >= 1.00",
    )
    assert read(1.0, min(1.0, alpha + 1e-9))[0] == "poor"
    assert analyse(queries, answers, answers_per_query=3, alpha_thresholds=[0.9, 0.5]).agreement.reading  # type: ignore[arg-type]
