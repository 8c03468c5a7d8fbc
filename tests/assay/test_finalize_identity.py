"""The finalize path's faster report and gate (row validation, top losers, pairing, resampling) give what
the straightforward code gave: digests of seeded random runs' report and gate JSON, recorded from the code
before those changes (tests/assay/finalize_fixture.py makes the runs), re-recorded where noted below."""

from __future__ import annotations

import copy
import hashlib
import random

import pytest

from assay.gate import ArtifactError, compare, validate_artifact
from tests.assay.finalize_fixture import gate_json, problems_checking_every_row, seeded_run

# sha256 of `gate_json` of `seeded_run(n, seed)`, as the code before the finalize changes wrote it, then
# re-recorded twice. Once when the expected-empty finding's words took their noun in number ("returned 10
# results", was "result(s)"): the JSON of both versions differed in those messages and nowhere else. Once
# when the bootstrap and randomization sums became exact sums of the same draws (`_exact_parts`, now in
# assay/resampling.py): compared as JSON with the previous code's for these three runs and one of 100,000
# queries, the keys, texts, verdicts, failures, warnings and p-values were the same and 10 to 16 of each
# JSON's 116 interval bounds differed, by at most 2.8e-17 (floating-point summation order); the new JSON was
# the same bytes with numpy's BLAS on one thread and on two. And once more when a gate given no noise floor
# that fails a budget came to say so in a note ("no noise floor given: ..."): with that note left out, each
# JSON was the previous digest's bytes. And when the gate came to carry the two reports' overlap (its
# `overlap` key, `assay.overlap`): with that key left out of both gates, each JSON was the previous
# digest's bytes.
RECORDED = {
    (300, 1): "c658c7901caf6c8f731d92ed4294c9457f5598aa617e25e27999c65622c22508",
    (300, 2): "a492340b9c0c019c6794f95a57fc1b6a30b665ed484a3d45d6f396bd7941d3ce",
    (5000, 1): "cd6769cc92350c6b5dd8eed21017c245c8d678f0177edebf04623670ca48ad28",
}


@pytest.mark.parametrize(("n", "seed"), sorted(RECORDED))
def test_report_and_gate_bytes_unchanged(n: int, seed: int) -> None:
    golden, current, baseline, budgets = seeded_run(n, seed)
    # The run is varied enough to exercise what is compared: a change with an interval, losers, slices.
    gate = compare(current, baseline, budgets).to_dict()
    assert gate["comparison"]["core"]["ndcg"]["interval"] is not None
    assert len(gate["top_losers"]) == 10
    assert gate["comparison"]["strata"]["billing"]["ndcg"]["p_value"] is not None
    assert (
        hashlib.sha256(gate_json(golden, current, baseline, budgets).encode()).hexdigest()
        == RECORDED[(n, seed)]
    )


_BAD_VALUES: tuple[object, ...] = (
    None,
    True,
    False,
    -1,
    1,
    2.5,
    float("nan"),
    float("inf"),
    "x",
    [],
    {},
    {"d1": "x"},
    {"d1": None},
)


def test_row_fast_path_finds_what_the_checks_find() -> None:
    """Each per-query field set to each kind of value (good and bad): the problems reported are the ones
    the field-by-field checks report, in order, for the current report and for it gated against itself."""
    _, report, _, budgets = seeded_run(40, 3)
    rng = random.Random(5)
    keys = sorted({key for row in report["per_query"] for key in row} | {"ndcg", "ranks", "grades"})
    for trial in range(300):
        broken = copy.deepcopy(report)
        for _ in range(rng.randint(1, 3)):
            row = rng.choice(broken["per_query"])
            key = rng.choice(keys)
            if rng.random() < 0.1:
                row.pop(key, None)
            else:
                row[key] = copy.deepcopy(rng.choice(_BAD_VALUES))
        expected = problems_checking_every_row(broken)
        try:
            validate_artifact(broken, "current")
            found: list[str] = []
        except ArtifactError as error:
            found = error.problems
        assert found == expected, trial
        if expected:
            with pytest.raises(ArtifactError) as caught:
                compare(broken, broken, budgets)
            assert caught.value.problems == expected + [p.replace("current", "baseline", 1) for p in expected]
