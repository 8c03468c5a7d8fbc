"""The side-by-side analysis (assay.sxs, docs/sxs.md "Analysis" and "Verdict"), no database: each figure
against an independent computation (scipy's `binomtest` and `wilcoxon`, the krippendorff package, plain
Python loops) on hand cases and hypothesis-generated studies; determinism for a seed; the sides undone;
the edge cases; the verdict each way; the refusals; JSON safety."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from collections import defaultdict

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest, wilcoxon

from assay.changes import bootstrap_means
from assay.sxs import (
    PREFERENCE_SCALE,
    REASON_LABELS,
    REASONS,
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


def _scipy_wilcoxon(values: list[float]) -> float | None:
    if not any(values):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(wilcoxon(values).pvalue)


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
    boot = bootstrap_means(np.array(values), resamples=200, seed=3)
    assert (overall["low"], overall["high"]) == pytest.approx(tuple(np.percentile(boot, [2.5, 97.5])))
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
    expected = _scipy_wilcoxon(values)
    if expected is None:
        assert overall["wilcoxon_p"] is None
    else:
        assert overall["wilcoxon_p"] == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_the_result_is_json_safe_and_a_study_of_nothing_has_no_figures() -> None:
    result = analyse([], [], answers_per_query=3)
    assert isinstance(result, SxsAnalysis)
    d = result.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["overall"]["mean"] is None and d["agreement"]["alpha"] is None
    assert d["verdict"]["result"] == "not_enough"


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
    assert out.stdout.strip() == "fail"  # five queries, all answered, the mean -1.0


def test_alpha_equals_the_krippendorff_package() -> None:
    queries, answers = _study({"q1": [3, 2, 3], "q2": [-1, 0, -2], "q3": [0, 0, 1], "q4": [2, -1]})
    result = analyse(queries, answers, answers_per_query=3)
    data = np.array([[3, -1, 0, 2], [2, 0, 0, -1], [3, -2, 1, np.nan]])
    expected = krippendorff.alpha(
        reliability_data=data, level_of_measurement="ordinal", value_domain=list(PREFERENCE_SCALE)
    )
    assert result.agreement.alpha == pytest.approx(expected, abs=1e-12)
    assert math.isfinite(result.agreement.low or math.nan)


def test_the_tests_against_scipy_by_hand() -> None:
    assert sign_test_p(7, 3) == pytest.approx(binomtest(7, 10).pvalue)
    assert wilson_interval(0, 0) is None
    p, method = wilcoxon_p(np.array([1.0, 2.0, -3.0, 4.0, 5.0]))
    assert method == "exact" and p == pytest.approx(wilcoxon([1.0, 2.0, -3.0, 4.0, 5.0]).pvalue)


def test_bad_input_is_refused_in_words() -> None:
    queries, answers = _study({"q1": [1, 2]})
    with pytest.raises(SxsInputError, match=r"answers\[0\]\.preference: 4 is not on the scale -3\.\.3"):
        analyse(queries, [SxsAnswer("q1", "ann", 4, True), *answers[1:]], answers_per_query=2)
