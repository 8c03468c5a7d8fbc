"""The interval a study's size will likely give, before it is made (assay.sxs.planning, docs/sxs.md "How
wide the interval will likely be"): the half-width 1.96 * spread / sqrt(n), the spread pooled over the
set's earlier studies or the stated default, and the warning when the width cannot separate the rule's
bound from 0. No database."""

from __future__ import annotations

import math
import statistics

import pytest

from assay.sxs import DEFAULT_SPREAD, SxsAnswer, SxsQuery, SxsRule, analyse, expect, pooled_spread


def test_the_half_width_and_the_size_that_lets_a_mean_of_0_pass() -> None:
    at_10 = expect(10, SxsRule())
    z = statistics.NormalDist().inv_cdf(0.975)
    assert at_10.half_width == pytest.approx(z * DEFAULT_SPREAD / math.sqrt(10))
    assert (at_10.spread, at_10.studies) == (DEFAULT_SPREAD, 0)
    # 1.96 * 1.25 / 0.25 = 9.8; 9.8^2 = 96.04: 97 queries bring the half-width to 0.25 or below.
    assert at_10.needed == 97 and at_10.warn
    assert at_10.text == (
        "At 10 queries the 95% interval of the mean preference will likely be about ±0.77 (a spread of 1.25"
        " per query, the default: no earlier study of this set has two or more answered queries); about 97"
        " queries would let a candidate as good as the baseline pass"
    )
    assert at_10.warning == (
        "±0.77 is wider than the 0.25 between the rule's bound (-0.25) and 0: even a candidate as good as the"
        " baseline would likely stay inconclusive at 10 queries; about 97 would let it pass"
    )
    assert not expect(97, SxsRule()).warn and expect(97, SxsRule()).warning == ""
    at_96 = expect(96, SxsRule())
    # Never "±0.25 is wider than the 0.25": as many decimals as show it wider.
    assert at_96.warn and at_96.warning.startswith("±0.25005 is wider than the 0.25")


def test_a_bound_at_or_above_0_always_warns() -> None:
    for bound in (0.0, 0.5):
        e = expect(400, SxsRule(min_lower=bound))
        assert e.warn and e.needed is None
        assert "a candidate as good as the baseline never passes, at any size" in e.warning


def test_the_spread_is_pooled_over_earlier_studies_with_one() -> None:
    spread, n = pooled_spread([(10, 1.0), (21, 2.0), (1, None), (None, None), (0, None)])
    assert n == 2 and spread is not None and spread == pytest.approx(math.sqrt((9 * 1.0 + 20 * 4.0) / 29))
    assert pooled_spread([]) == (None, 0) and pooled_spread([(1, None)]) == (None, 0)
    e = expect(50, SxsRule(), spread, n)
    assert e.studies == 2 and "pooled over 2 earlier studies of this set" in e.text
    assert e.half_width == pytest.approx(statistics.NormalDist().inv_cdf(0.975) * spread / math.sqrt(50))


def test_the_expectation_holds_for_a_study_of_that_spread() -> None:
    # 40 queries with the default spread's standard deviation: the study's own interval is about as wide as
    # the expectation said (the bootstrap's percentile interval against the normal approximation).
    values = [(-2, -1), (-1, 0), (1, 2), (0, 1), (2, 2), (-2, -2), (0, 0), (1, 1)] * 5
    queries = [SxsQuery(f"q{i:02d}") for i in range(len(values))]
    answers = [
        SxsAnswer(f"q{i:02d}", r, p, r == "a")
        for i, v in enumerate(values)
        for r, p in zip("ab", v, strict=True)
    ]
    o = analyse(queries, answers, answers_per_query=2, seed=1).overall
    assert o.spread is not None and o.low is not None and o.high is not None
    e = expect(o.queries, SxsRule(), o.spread, 1)
    assert (o.high - o.low) / 2 == pytest.approx(e.half_width, rel=0.15)


def test_a_size_below_1_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        expect(0, SxsRule())
