"""The metrics engine against numbers computed by trec_eval, ir_measures/gdeval and ranx (never by Assay).

Fixtures: tests/fixtures/oracles (see its README). trec_eval prints 4 decimals, rounding half-even or
half-up depending on the value's binary form, so a printed value is met when |ours - printed| <= 5e-5.
trec_eval's and ir_measures' reciprocal rank has no cutoff: it equals RR@k for any k >= the run's depth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from assay.golden.trec import golden_from_trec, read_qrels, read_run
from assay.metrics import MetricArrays, score_lists
from assay.report import build_report
from assay.results import QueryResult

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"
# Half a unit of trec_eval's 4th decimal; exact halves (1/32 = 0.03125 printed 0.0312) sit right on it, and
# the subtraction adds float noise of 1e-17.
PRINTED = 5e-5 + 1e-12
FULL = 1e-9
NO_CUTOFF = 1000  # deeper than every run here (500 at most), so RR@k is trec_eval's recip_rank


def oracle(name: str) -> str:
    return (ORACLES / name).read_text()


def trec_eval_values(lines: Sequence[str]) -> dict[tuple[str, str], float]:
    """(measure, topic) -> value from `trec_eval -q` output lines (non-numeric values skipped)."""
    values = {}
    for line in lines:
        fields = line.split()
        if len(fields) == 3 and not line.startswith("#"):
            try:
                values[(fields[0], fields[1])] = float(fields[2])
            except ValueError:
                continue  # runid, relstring
    return values


def derived_sections() -> list[dict[tuple[str, str], float]]:
    """derived_expected.trec_eval10.txt: nDCG and P/RR on results.test, then both on results.trunc."""
    sections: list[list[str]] = []
    for line in oracle("trec_eval/derived_expected.trec_eval10.txt").splitlines():
        if line.startswith("# exp-gain") or line.startswith("# binary") or line.startswith("# same on"):
            sections.append([])
        elif sections:
            sections[-1].append(line)
    assert len(sections) == 3
    return [trec_eval_values(s) for s in sections]


def score(
    qrels: Mapping[str, Mapping[str, int]], ranked: Mapping[str, Sequence[str]], *, k: int, c: int
) -> tuple[list[str], MetricArrays]:
    """Score every qrels topic; a topic the run lacks returned nothing (trec_eval -c)."""
    topics = list(qrels)
    return topics, score_lists(
        [qrels[t] for t in topics], [ranked.get(t, ()) for t in topics], k=k, relevant_min_grade=c
    )


def assert_matches(
    expected: Mapping[tuple[str, str], float],
    measure: str,
    topics: list[str],
    values: NDArray[np.float64],
    tolerance: float,
) -> int:
    """Every per-topic value and the mean (`all`) match; returns how many values were compared."""
    compared = 0
    for topic, value in zip(topics, values, strict=True):
        if (measure, topic) in expected:
            assert abs(value - expected[(measure, topic)]) <= tolerance, (measure, topic, value)
            compared += 1
    assert abs(sum(values) / len(values) - expected[(measure, "all")]) <= tolerance, (measure, "all")
    assert compared == len(topics), f"{measure}: oracle lacks topics"
    return compared + 1


RUNS = {"results.test": "trec_eval/results.test", "results.trunc": "trec_eval/results.trunc"}


@pytest.mark.parametrize(("section", "run"), [(0, "results.test"), (2, "results.trunc")])
def test_it_matches_trec_evals_exp_gain_ndcg_on_graded_qrels_with_negative_grades(
    section: int, run: str
) -> None:
    # The oracle ran trec_eval's ndcg_cut on grades mapped to 2^g - 1 (negatives to 0); Assay reads the raw
    # -1..4 grades and applies its own gain: the two must agree.
    expected = derived_sections()[section]
    qrels = read_qrels(oracle("trec_eval/qrels.rel_level"))
    ranked = read_run(oracle(RUNS[run]))
    for k in (5, 10, 20):
        topics, arrays = score(qrels, ranked, k=k, c=2)
        assert assert_matches(expected, f"ndcg_cut_{k}", topics, arrays.ndcg, PRINTED) == 4


@pytest.mark.parametrize(("section", "run"), [(1, "results.test"), (2, "results.trunc")])
def test_it_matches_trec_evals_precision_and_reciprocal_rank_at_level_2(section: int, run: str) -> None:
    expected = derived_sections()[section]
    qrels = read_qrels(oracle("trec_eval/qrels.rel_level"))
    ranked = read_run(oracle(RUNS[run]))
    for k in (5, 10, 20):
        topics, arrays = score(qrels, ranked, k=k, c=2)
        assert_matches(expected, f"P_{k}", topics, arrays.p, PRINTED)
    topics, arrays = score(qrels, ranked, k=NO_CUTOFF, c=2)
    assert_matches(expected, "recip_rank", topics, arrays.rr, PRINTED)
    if run == "results.trunc":
        assert [int(n) for n in arrays.n] == [int(expected[("num_ret", t)]) for t in topics]


CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@pytest.mark.parametrize(
    ("output", "qrels_file", "run", "level"),
    [
        ("out.test.aq", "qrels.test", "results.test", 1),
        ("out.test.aqc", "qrels.test", "results.trunc", 1),  # -c: topic 302 missing from the run scores 0
        ("out.test.aql", "qrels.rel_level", "results.test", 2),
    ],
)
def test_it_matches_trec_evals_own_expected_outputs(
    output: str, qrels_file: str, run: str, level: int
) -> None:
    expected = trec_eval_values(oracle(f"trec_eval/{output}").splitlines())
    qrels = read_qrels(oracle(f"trec_eval/{qrels_file}"))
    ranked = read_run(oracle(RUNS[run]))
    for k in CUTOFFS:
        topics, arrays = score(qrels, ranked, k=k, c=level)
        assert_matches(expected, f"P_{k}", topics, arrays.p, PRINTED)
        if qrels_file == "qrels.test":
            # Binary grades: trec_eval's linear gain equals 2^g - 1, so its ndcg_cut is Assay's nDCG@k
            # (qrels.test's -1 grades earn nothing in both). With graded qrels it is not: not compared.
            assert_matches(expected, f"ndcg_cut_{k}", topics, arrays.ndcg, PRINTED)
    topics, arrays = score(qrels, ranked, k=NO_CUTOFF, c=level)
    assert_matches(expected, "recip_rank", topics, arrays.rr, PRINTED)
    assert [int(n) for n in arrays.n] == [int(expected[("num_ret", t)]) for t in topics]


@pytest.mark.parametrize("output", ["out.test", "out.test.a"])
def test_it_matches_trec_evals_summary_output_over_all_topics(output: str) -> None:
    # out.test holds trec_eval's default measures (no ndcg_cut); out.test.a (-a) every measure.
    expected = trec_eval_values(oracle(f"trec_eval/{output}").splitlines())
    qrels = read_qrels(oracle("trec_eval/qrels.test"))
    ranked = read_run(oracle("trec_eval/results.test"))
    compared = 0
    for k in CUTOFFS:
        _, arrays = score(qrels, ranked, k=k, c=1)
        assert abs(float(arrays.p.mean()) - expected[(f"P_{k}", "all")]) <= PRINTED, k
        compared += 1
        if ("ndcg_cut_5", "all") in expected:
            # Binary qrels: trec_eval's linear gain equals 2^g - 1 (see the per-topic test above).
            assert abs(float(arrays.ndcg.mean()) - expected[(f"ndcg_cut_{k}", "all")]) <= PRINTED, k
            compared += 1
    _, arrays = score(qrels, ranked, k=NO_CUTOFF, c=1)
    assert abs(float(arrays.rr.mean()) - expected[("recip_rank", "all")]) <= PRINTED
    assert compared == {"out.test": 9, "out.test.a": 18}[output]


# --- ir_measures toy fixture (full precision) -------------------------------------------------------------


def toy_expected() -> list[tuple[str, str, str]]:
    rows = []
    for line in oracle("ir_measures_toy/expected.tsv").splitlines():
        if line and not line.startswith("#"):
            measure, qid, value, _source = line.split("\t")
            rows.append((measure, qid, value))
    return rows


def _tolerance(printed: str) -> float:
    # gdeval's means are printed to 5-6 decimals; the library values carry full precision.
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return max(FULL, 0.5 * 10.0**-decimals) if decimals < 12 else FULL


def test_it_matches_the_ir_measures_toy_values() -> None:
    qrels = read_qrels(oracle("ir_measures_toy/toy.qrels"))
    ranked = read_run(oracle("ir_measures_toy/toy.run"))
    compared = 0
    for measure, qid, printed in toy_expected():
        if measure.startswith("nDCG@"):
            # Linear-gain nDCG: Assay has exponential gain only (docs/metrics.md): these rows are not claimed.
            continue
        if measure.startswith("nDCG(dcg='exp-log2')@"):
            k, attr = int(measure.rsplit("@", 1)[1]), "ndcg"
        elif measure.startswith("P(rel=2)@"):
            k, attr = int(measure.rsplit("@", 1)[1]), "p"
        elif measure == "RR(rel=2)":
            k, attr = NO_CUTOFF, "rr"
        else:
            raise AssertionError(f"unexpected oracle row {measure}")
        topics, arrays = score(qrels, ranked, k=k, c=2)
        values = getattr(arrays, attr)
        ours = float(values.mean()) if qid == "all" else float(values[topics.index(qid)])
        assert abs(ours - float(printed)) <= _tolerance(printed), (measure, qid, ours, printed)
        compared += 1
    assert compared == 11


@pytest.mark.parametrize(
    ("run", "ndcg", "p1", "rr"), [("ties.run1", 1.0, 1.0, 1.0), ("ties.run2", 0.6309, 0.0, 0.5)]
)
def test_it_scores_trec_eval_tie_example_through_read_run(
    run: str, ndcg: float, p1: float, rr: float
) -> None:
    # ir_measures_toy/README.txt: trec_eval 10.0 on issue #22's example (binary qrels, level 1).
    qrels = read_qrels(oracle("ir_measures_toy/ties.qrels"))
    ranked = read_run(oracle(f"ir_measures_toy/{run}"))
    _, arrays = score(qrels, ranked, k=NO_CUTOFF, c=1)
    assert abs(float(arrays.ndcg[0]) - ndcg) <= PRINTED
    assert float(arrays.rr[0]) == rr
    _, at_one = score(qrels, ranked, k=1, c=1)
    assert float(at_one.p[0]) == p1


# --- Cranfield BM25: a real collection, a real run ----------------------------------------------------------

CRANFIELD_RUNS = ["run.bm25.top100", "run.bm25.top100.drop_qid_mod10"]


def cranfield_tsv(run: str) -> tuple[dict[str, dict[str, float]], str]:
    lines = oracle(f"cranfield_bm25/{run}.expected_fullprecision.tsv").splitlines()
    header = lines[0].split("\t")
    rows: dict[str, dict[str, float]] = {}
    all_comment = ""
    for line in lines[1:]:
        data, _, comment = line.partition("#")
        fields = data.split()
        rows[fields[0]] = {name: float(value) for name, value in zip(header[1:], fields[1:], strict=True)}
        if fields[0] == "all":
            all_comment = comment
    return rows, all_comment


def cranfield_qrels() -> dict[str, dict[str, int]]:
    return read_qrels(oracle("cranfield_bm25/qrels.graded0-3.minus1_as_0.derived.trec"))


@pytest.mark.parametrize("run", CRANFIELD_RUNS)
def test_it_matches_the_cranfield_full_precision_values(run: str) -> None:
    rows, _ = cranfield_tsv(run)
    qrels = cranfield_qrels()
    ranked = read_run(oracle(f"cranfield_bm25/{run}.trec"))
    checks = [(f"ndcg_exp@{k}", k, "ndcg") for k in (5, 10, 20)]
    checks += [(f"P_rel2@{k}", k, "p") for k in (5, 10, 20)]
    checks.append(("RR_rel2", NO_CUTOFF, "rr"))
    for column, k, attr in checks:
        topics, arrays = score(qrels, ranked, k=k, c=2)
        assert len(topics) == 225
        values = getattr(arrays, attr)
        for topic, value in zip(topics, values, strict=True):
            assert abs(value - rows[topic][column]) <= FULL, (column, topic)
        assert abs(float(values.mean()) - rows["all"][column]) <= FULL, column
    assert [int(n) for n in arrays.n] == [int(rows[t]["num_ret"]) for t in topics]


@pytest.mark.parametrize("run", CRANFIELD_RUNS)
def test_it_matches_trec_eval_on_cranfield(run: str) -> None:
    ndcg = trec_eval_values(oracle(f"cranfield_bm25/{run}.trec_eval10.expgain_ndcg.txt").splitlines())
    levels = trec_eval_values(oracle(f"cranfield_bm25/{run}.trec_eval10.l2_P_RR.txt").splitlines())
    qrels = cranfield_qrels()
    ranked = read_run(oracle(f"cranfield_bm25/{run}.trec"))
    for k in (5, 10, 20):
        topics, arrays = score(qrels, ranked, k=k, c=2)
        assert_matches(ndcg, f"ndcg_cut_{k}", topics, arrays.ndcg, PRINTED)
        assert_matches(levels, f"P_{k}", topics, arrays.p, PRINTED)
    topics, arrays = score(qrels, ranked, k=NO_CUTOFF, c=2)
    assert_matches(levels, "recip_rank", topics, arrays.rr, PRINTED)


def test_it_reports_the_cranfield_run_with_missing_queries_as_empty() -> None:
    run = "run.bm25.top100.drop_qid_mod10"
    rows, comment = cranfield_tsv(run)
    golden = golden_from_trec(cranfield_qrels(), version="cranfield", k=10)
    ranked = read_run(oracle(f"cranfield_bm25/{run}.trec"))
    results = {qid: QueryResult(query_id=qid, ids=ids) for qid, ids in ranked.items()}
    report = build_report(golden, results)
    assert report["n"] == 225
    assert abs(report["ndcg"] - rows["all"]["ndcg_exp@10"]) <= FULL
    assert abs(report["precision_at_k"] - rows["all"]["P_rel2@10"]) <= FULL
    # The oracle states the empty-result rate of this run in its `all` row.
    expected_empty = float(comment.split("empty_result_rate=")[1].split()[0])
    assert abs(report["empty_rate"] - expected_empty) <= FULL
    missing = [row["id"] for row in report["per_query"] if row["empty"]]
    assert missing == [str(q) for q in range(10, 221, 10)]
