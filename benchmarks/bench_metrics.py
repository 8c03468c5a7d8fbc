"""Metrics engine throughput: 100,000 queries x 100 results (20 judgments each, k=10) to the three means.

Side by side, same data, same process, best of 3: Assay's `score_lists`, pytrec_eval's
RelevanceEvaluator (`ndcg_cut_10` on 2^g - 1 gains, `P_10` and `recip_rank` at relevance level 2) and
ranx's `evaluate` (`ndcg_burges@10`, `precision@10-l2`, `mrr@10-l2`). Everyone starts from the same Python
structures a harness holds: qid -> ranked ids, qid -> {doc id: grade}. Converting those into the scored
dicts pytrec_eval and ranx take is work their users must do, so it is timed with them, and their bare
evaluation time is reported too. trec_eval's recip_rank has no cutoff, so pytrec_eval gets each list's top
10 (which also makes it faster); a row on the full 100-deep lists shows what the naive call costs.
Before timing, the script asserts that the three tools agree on the three means to 1e-9.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pytrec_eval
from numba.core.errors import NumbaTypeSafetyWarning
from ranx import Qrels, Run, evaluate

from assay.metrics import score_lists
from benchmarks._report import write_section

QUERIES = 100_000
DEPTH = 100
JUDGED = 20
K = 10
LEVEL = 2
POOL = 20_011  # a prime, so a stride walk over the pool never repeats a document within a list
SEED = 20260801
T = TypeVar("T")

Ranked = dict[str, list[str]]
Qrels_ = dict[str, dict[str, int]]


def make_data() -> tuple[Ranked, Qrels_]:
    """Distinct ids per list; 10 judgments among each list's top 30 and 10 deeper; grades 0-3."""
    rng = np.random.default_rng(SEED)
    pool = np.array([f"doc-{i}" for i in range(POOL)], dtype=object)
    start = rng.integers(0, POOL, size=(QUERIES, 1))
    stride = rng.integers(1, POOL, size=(QUERIES, 1))
    positions = (start + stride * np.arange(DEPTH)) % POOL
    ids = pool[positions]
    top = np.argsort(rng.random((QUERIES, 30)), axis=1)[:, : JUDGED // 2]
    deep = 30 + np.argsort(rng.random((QUERIES, DEPTH - 30)), axis=1)[:, : JUDGED - JUDGED // 2]
    judged_docs = np.take_along_axis(ids, np.hstack([top, deep]), axis=1)
    grades = rng.integers(0, 4, size=(QUERIES, JUDGED))
    qids = [f"q{i}" for i in range(QUERIES)]
    ranked = dict(zip(qids, ids.tolist(), strict=True))
    qrels = {
        qid: dict(zip(docs, g, strict=True))
        for qid, docs, g in zip(qids, judged_docs.tolist(), grades.tolist(), strict=True)
    }
    return ranked, qrels


def best_of(fn: Callable[[], T], repeat: int = 3) -> tuple[float, T]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    assert result is not None
    return best, result


Means = tuple[float, float, float]  # nDCG@10, P@10, RR@10


def assay(ranked: Ranked, qrels: Qrels_) -> Means:
    qids = list(ranked)
    arrays = score_lists(
        [qrels.get(q, {}) for q in qids], [ranked[q] for q in qids], k=K, relevant_min_grade=LEVEL
    )
    return float(arrays.ndcg.mean()), float(arrays.p.mean()), float(arrays.rr.mean())


def as_scores(ranked: Ranked, depth: int) -> dict[str, dict[str, float]]:
    """Ranked lists as the {doc: score} dicts trec_eval-style tools take (decreasing scores keep order)."""
    return {qid: {doc: float(depth - i) for i, doc in enumerate(ids[:depth])} for qid, ids in ranked.items()}


def pytrec_inputs(ranked: Ranked, qrels: Qrels_, depth: int) -> tuple[Any, ...]:
    gains = {qid: {doc: 2**g - 1 for doc, g in docs.items()} for qid, docs in qrels.items()}
    return as_scores(ranked, depth), gains, qrels


def pytrec(run: dict[str, dict[str, float]], gains: Qrels_, qrels: Qrels_) -> Means:
    ndcg = pytrec_eval.RelevanceEvaluator(gains, {f"ndcg_cut_{K}"}).evaluate(run)
    binary = pytrec_eval.RelevanceEvaluator(qrels, {f"P_{K}", "recip_rank"}, relevance_level=LEVEL).evaluate(
        run
    )
    return (
        float(np.mean([m[f"ndcg_cut_{K}"] for m in ndcg.values()])),
        float(np.mean([m[f"P_{K}"] for m in binary.values()])),
        float(np.mean([m["recip_rank"] for m in binary.values()])),
    )


RANX_METRICS = [f"ndcg_burges@{K}", f"precision@{K}-l{LEVEL}", f"mrr@{K}-l{LEVEL}"]


def ranx_means(qrels: Any, run: Any) -> Means:
    scores = evaluate(qrels, run, RANX_METRICS, save_results_in_run=False)
    return tuple(float(scores[m]) for m in RANX_METRICS)  # type: ignore[return-value]


def load_note(load_before: float) -> str:
    cpus, load_after = os.cpu_count() or 1, os.getloadavg()[0]
    note = f"Machine: {cpus} CPUs, 1-minute load average {load_before:.1f} before and {load_after:.1f} after"
    if max(load_before, load_after) > cpus / 2:
        note += " (other work was running: compare the ratios rather than the seconds)"
    return note + "."


def main() -> None:
    warnings.filterwarnings("ignore", category=NumbaTypeSafetyWarning)  # inside ranx, about its own casts
    load_before = os.getloadavg()[0]  # other processes on the machine slow every tool alike
    ranked, qrels = make_data()
    expected = assay(ranked, qrels)

    # Agreement first (which also compiles ranx's numba code before anything is timed). On the full lists
    # pytrec_eval's recip_rank has no cutoff, so RR@10 is checked on the top-10 input.
    full = pytrec(*pytrec_inputs(ranked, qrels, DEPTH))
    top = pytrec(*pytrec_inputs(ranked, qrels, K))
    ranx = ranx_means(Qrels(qrels), Run(as_scores(ranked, DEPTH)))
    for name, means in (("pytrec_eval top 10", top), ("pytrec_eval full", full[:2]), ("ranx", ranx)):
        assert np.allclose(means, expected[: len(means)], rtol=0, atol=1e-9), (name, means, expected)

    timings: dict[str, float] = {}
    timings["assay"], _ = best_of(lambda: assay(ranked, qrels))
    timings["pytrec_full"], _ = best_of(lambda: pytrec(*pytrec_inputs(ranked, qrels, DEPTH)))
    full_inputs = pytrec_inputs(ranked, qrels, DEPTH)
    timings["pytrec_full_eval"], _ = best_of(lambda: pytrec(*full_inputs))
    timings["pytrec_top"], _ = best_of(lambda: pytrec(*pytrec_inputs(ranked, qrels, K)))
    top_inputs = pytrec_inputs(ranked, qrels, K)
    timings["pytrec_top_eval"], _ = best_of(lambda: pytrec(*top_inputs))
    timings["ranx"], _ = best_of(lambda: ranx_means(qrels, as_scores(ranked, DEPTH)))
    qrels_obj, run_obj = Qrels(qrels), Run(as_scores(ranked, DEPTH))
    timings["ranx_eval"], _ = best_of(lambda: ranx_means(qrels_obj, run_obj))

    rows = [
        ("assay", "Assay `score_lists`", "ranked lists and grade dicts -> the three means"),
        (
            "pytrec_full",
            "pytrec_eval",
            "convert the 100-deep lists to score dicts, grades to 2^g-1 gains, evaluate",
        ),
        ("pytrec_full_eval", "pytrec_eval", "evaluate only, 100-deep score dicts prepared beforehand"),
        ("pytrec_top", "pytrec_eval", "convert only each list's top 10 (+ gains), evaluate"),
        ("pytrec_top_eval", "pytrec_eval", "evaluate only, top-10 score dicts prepared beforehand"),
        ("ranx", "ranx `evaluate`", "convert to score dicts, build Qrels/Run inside `evaluate`, evaluate"),
        ("ranx_eval", "ranx `evaluate`", "evaluate only, Qrels/Run built beforehand"),
    ]
    base = timings["assay"]
    lines = [
        "### Metrics engine",
        "",
        f"{QUERIES:,} queries x {DEPTH} results ({JUDGED} judgments each, grades 0-3, k={K}, "
        f"relevant grade >= {LEVEL}), from the Python structures a harness holds (qid -> ranked ids, "
        f"qid -> {{doc: grade}}) to mean nDCG@{K}, P@{K} and RR@{K}; best of 3 in one process. The tools "
        f"agree on the means to 1e-9 (nDCG@{K} {expected[0]:.6f}, P@{K} {expected[1]:.6f}, "
        f"RR@{K} {expected[2]:.6f}; pytrec_eval's recip_rank has no cutoff, so it matches RR@{K} only on "
        f"the top-{K} input). ranx runs numba code on every core (compiled before timing); pytrec_eval and "
        f"Assay use one. {load_note(load_before)}",
        "",
        "| tool | what is timed | seconds | vs Assay |",
        "| --- | --- | ---: | ---: |",
    ]
    for key, tool, what in rows:
        ratio = "1.0x" if key == "assay" else f"{timings[key] / base:.1f}x slower"
        lines.append(f"| {tool} | {what} | {timings[key]:.3f} | {ratio} |")
    lines += [
        "",
        "Target: at least 10x faster than pytrec_eval's RelevanceEvaluator on the same input. On the same "
        f"100-deep lists Assay is {timings['pytrec_full'] / base:.1f}x faster counting the conversion a "
        f"pytrec_eval user must write and {timings['pytrec_full_eval'] / base:.1f}x faster than its bare "
        "evaluation; if the user first cuts every list to its top 10 (which the three metrics allow), the "
        f"margins are {timings['pytrec_top'] / base:.1f}x and {timings['pytrec_top_eval'] / base:.1f}x.",
    ]
    write_section("metrics", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
