"""TREC qrels and run files: reading in trec_eval's order, writing, and golden files from qrels."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale
from assay.golden.trec import (
    TrecFormatError,
    golden_from_trec,
    read_qrels,
    read_run,
    read_run_table,
    write_qrels,
    write_run,
)

ORACLES = Path(__file__).resolve().parents[2] / "fixtures" / "oracles"


def oracle(name: str) -> str:
    return (ORACLES / name).read_text()


# --- qrels -----------------------------------------------------------------------------------------------


def test_it_reads_qrels_in_file_order_keeping_grades_as_read() -> None:
    qrels = read_qrels(oracle("ir_measures_toy/toy.qrels"))
    assert list(qrels) == ["0", "1"]
    assert qrels["0"] == {"D0": 0, "D1": 1, "D2": 1, "D3": 2, "D4": 0}
    assert qrels["1"] == {"D0": 1, "D3": 2, "D5": 2}


def test_it_keeps_negative_grades_and_every_line_of_trec_evals_graded_qrels() -> None:
    text = oracle("trec_eval/qrels.rel_level")
    qrels = read_qrels(text)
    lines = [line.split() for line in text.splitlines() if line.strip()]
    assert sum(len(docs) for docs in qrels.values()) == len(lines)
    assert {grade for docs in qrels.values() for grade in docs.values()} == {-1, 0, 1, 2, 3, 4}
    qid, _, docno, rel = lines[-1]
    assert qrels[qid][docno] == int(rel)


def test_it_skips_blank_lines_and_accepts_tabs() -> None:
    assert read_qrels("\n1\t0\ta\t2\n   \n1 0 b 0\n") == {"1": {"a": 2, "b": 0}}


def test_it_reports_every_bad_qrels_line_with_its_number() -> None:
    text = "1 0 a 1\n1 0 a 2\n1 0 b\n1 0 c x\n1 0 d 1 extra\n2 0 a 1.5\n"
    with pytest.raises(TrecFormatError) as caught:
        read_qrels(text)
    assert caught.value.problems == [
        "line 2: duplicate judgment for qid 1 docno a (first at line 1)",
        "line 3: expected 4 columns (qid iter docno rel), got 3",
        "line 4: relevance 'x' is not an integer",
        "line 5: expected 4 columns (qid iter docno rel), got 5",
        "line 6: relevance '1.5' is not an integer",
    ]
    assert "line 4" in str(caught.value)


def _golden(*queries: GoldenQuery) -> GoldenFile:
    return GoldenFile(version="v1", queries=queries)


def test_it_writes_qrels_in_natural_order_whatever_the_input_order() -> None:
    a = GoldenQuery("q-10", "ten", (Judgment("d-2", 1), Judgment("d-10", 3)))
    b = GoldenQuery("q-2", "two", (Judgment("x", 0),))
    empty = GoldenQuery("q-3", "nothing judged")
    text = write_qrels(_golden(a, b, empty))
    assert text == "q-2 0 x 0\nq-10 0 d-2 1\nq-10 0 d-10 3\n"
    assert write_qrels(_golden(empty, b, a)) == text
    assert read_qrels(text) == {"q-2": {"x": 0}, "q-10": {"d-2": 1, "d-10": 3}}


def test_it_refuses_to_write_ids_that_a_qrels_reader_would_split() -> None:
    with pytest.raises(TrecFormatError) as caught:
        write_qrels(_golden(GoldenQuery("q 1", "t", (Judgment("doc a", 1),))))
    assert caught.value.problems == [
        "query 'q 1': query id 'q 1' is empty or contains whitespace",
        "query 'q 1': doc_id 'doc a' is empty or contains whitespace",
    ]


# --- runs ------------------------------------------------------------------------------------------------


def test_it_breaks_score_ties_by_docno_descending_like_trec_eval() -> None:
    # trec_eval issue #22 (ir_measures_toy/README.txt): tied b and c at 1.0 -> c before b.
    assert read_run(oracle("ir_measures_toy/ties.run1"))["1"] == ("b", "a")
    assert read_run(oracle("ir_measures_toy/ties.run2"))["1"] == ("c", "b")


def test_it_ignores_the_rank_column() -> None:
    run = read_run(oracle("ir_measures_toy/toy.run"))
    # Query 0's rank column puts D1 (0.3) third and D3 (0.4) fourth; scores decide.
    assert run["0"] == ("D0", "D2", "D3", "D1", "D4")
    assert run["1"] == ("D1", "D3", "D2", "D4")
    assert run.tags == ("run",)


@pytest.mark.parametrize("name", ["run.bm25.top100.trec", "run.bm25.top100.drop_qid_mod10.trec"])
def test_it_reproduces_trec_evals_order_on_the_cranfield_runs(name: str) -> None:
    # These files' rank column was written in trec_eval order (oracle README), ties included.
    text = oracle(f"cranfield_bm25/{name}")
    expected: dict[str, list[tuple[int, str]]] = {}
    for line in text.splitlines():
        qid, _, docno, rank, _, _ = line.split()
        expected.setdefault(qid, []).append((int(rank), docno))
    run = read_run(text)
    assert list(run) == list(expected)
    for qid, ranked in expected.items():
        assert run[qid] == tuple(docno for _, docno in sorted(ranked)), qid
    scores = [float(line.split()[4]) for line in text.splitlines()]
    assert len(scores) != len(set(scores))  # the file does hold ties, so the tie rule was exercised


def test_it_tolerates_junk_after_the_tag_and_leaves_missing_topics_out() -> None:
    run = read_run(oracle("trec_eval/results.trunc"))
    assert set(run) == {"301", "303"}
    assert len(run["301"]) == 500
    assert len(run["303"]) == 84
    assert run.tags == ("STANDARD",)


def test_it_reports_every_bad_run_line_with_its_number() -> None:
    text = (
        "1 Q0 a 1 2.0 t\n"
        "1 Q0 b 2 1.0\n"
        "1 Q0 c 3 high t\n"
        "1 Q0 d 4 nan t\n"
        "1 Q0 e 5 1_0 t\n"
        "1 Q0 a 6 0.5 t\n"
        "2 Q0 a 1 0.5 t\n"
    )
    with pytest.raises(TrecFormatError) as caught:
        read_run(text)
    assert caught.value.problems == [
        "line 2: expected at least 6 columns (qid Q0 docno rank score tag), got 5",
        "line 3: score 'high' is not a number",
        "line 4: score 'nan' is not a number",
        "line 5: score '1_0' is not a number",
        "line 6: docno a appears twice in topic 1 (first at line 1)",
    ]


def test_it_orders_negative_exponent_and_infinite_scores_numerically() -> None:
    text = "q Q0 a 1 1e-3 t\nq Q0 b 1 -inf t\nq Q0 c 1 2 t\nq Q0 d 1 -1 t\n"
    assert read_run(text)["q"] == ("c", "a", "d", "b")


def test_it_writes_runs_that_read_back_in_the_same_order() -> None:
    # Ascending docnos: were the scores tied, trec_eval's docno-descending rule would reverse them.
    ranked = {"q-1": ["a", "b", "c"], "q-2": ["z"], "q-3": []}
    text = write_run(ranked, tag="bm25")
    assert text.splitlines() == [
        "q-1 Q0 a 1 3 bm25",
        "q-1 Q0 b 2 2 bm25",
        "q-1 Q0 c 3 1 bm25",
        "q-2 Q0 z 1 1 bm25",
    ]
    run = read_run(text)
    assert dict(run) == {"q-1": ("a", "b", "c"), "q-2": ("z",)}
    assert run.tags == ("bm25",)


def test_it_refuses_to_write_a_run_it_could_not_read_back() -> None:
    with pytest.raises(TrecFormatError) as caught:
        write_run({"q": ["a", "b", "a"], "q 2": ["x y"]}, tag="my run")
    assert caught.value.problems == [
        "run: tag 'my run' is empty or contains whitespace",
        "topic 'q' rank 3: docno 'a' repeats rank 1 (a run file cannot hold it twice)",
        "topic 'q 2': qid 'q 2' is empty or contains whitespace",
        "topic 'q 2' rank 1: docno 'x y' is empty or contains whitespace",
    ]


# --- golden files from qrels -----------------------------------------------------------------------------


def test_it_builds_a_golden_file_from_qrels_and_query_texts() -> None:
    qrels = {"2": {"d9": 3, "d1": 0}, "1": {"d5": 1}}
    golden = golden_from_trec(
        qrels, {"1": "first", "2": "second", "3": "unjudged"}, version="cran-1", k=20, relevant_min_grade=3
    )
    assert golden.version == "cran-1"
    assert golden.k == 20
    assert golden.relevant_min_grade == 3
    assert golden.scale == Scale(0, 3)
    assert [(q.id, q.text) for q in golden.queries] == [("1", "first"), ("2", "second"), ("3", "unjudged")]
    assert golden.query("2").judgments == (Judgment("d1", 0), Judgment("d9", 3))  # canonical order
    assert golden.query("3").judgments == ()


def test_it_gives_a_binary_scale_a_cutoff_inside_the_scale_and_a_golden_file_that_dumps() -> None:
    from assay.golden.format import dump_json, parse

    golden = golden_from_trec({"1": {"b": 1, "a": 0}}, version="v", scale=Scale(0, 1))
    assert golden.relevant_min_grade == 1
    assert parse(dump_json(golden)) == golden


def test_it_uses_the_query_id_as_text_when_no_texts_are_given() -> None:
    golden = golden_from_trec({"7": {"a": 1}}, version="v")
    assert [(q.id, q.text) for q in golden.queries] == [("7", "7")]


def test_it_refuses_judged_queries_without_text_and_grades_off_the_scale() -> None:
    qrels = {"1": {"a": 4, "b": -1}, "2": {"c": 1}}
    with pytest.raises(TrecFormatError) as caught:
        golden_from_trec(qrels, {"1": "one"}, version="v")
    assert caught.value.problems == [
        "qrels qid 2: no query text for it",
        "qrels qid 1 docno a: grade 4 is outside the scale 0..3",
        "qrels qid 1 docno b: grade -1 is outside the scale 0..3",
    ]


def test_it_clamps_negative_grades_to_zero_only_when_asked() -> None:
    qrels = read_qrels(oracle("trec_eval/qrels.rel_level"))
    with pytest.raises(TrecFormatError):
        golden_from_trec(qrels, version="v", scale=Scale(0, 4))
    golden = golden_from_trec(qrels, version="v", scale=Scale(0, 4), clamp_negative=True)
    grades = {j.grade for q in golden.queries for j in q.judgments}
    assert grades == {0, 1, 2, 3, 4}
    assert sum(len(q.judgments) for q in golden.queries) == sum(len(d) for d in qrels.values())


def test_it_reads_the_cranfield_graded_qrels_into_a_golden_file() -> None:
    qrels = read_qrels(oracle("cranfield_bm25/qrels.graded0-3.minus1_as_0.derived.trec"))
    golden = golden_from_trec(qrels, version="cranfield")
    assert len(golden.queries) == 225
    # data/cranfield/README.md: 183 queries have a document at grade >= 2, 42 have none.
    assert sum(any(j.grade >= 2 for j in q.judgments) for q in golden.queries) == 183
    assert sum(len(q.judgments) for q in golden.queries) == 1837


line_st = st.lists(
    st.one_of(st.text(max_size=12), st.sampled_from(["1", "Q0", "0", "2.5", "-1", "nan", "1e3", "x y"])),
    max_size=8,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(line_st, max_size=8))
def test_it_never_fails_on_any_text_with_anything_but_a_format_error(lines: list[str]) -> None:
    text = "\n".join(lines)
    for reader in (read_qrels, read_run):
        try:
            reader(text)
        except TrecFormatError as error:
            assert error.problems and all(p.startswith("line ") for p in error.problems)


token_st = st.text(st.characters(blacklist_categories=["Z", "C"]), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(ranked=st.dictionaries(token_st, st.lists(token_st, unique=True, min_size=1, max_size=12), max_size=5))
def test_it_reads_back_every_run_it_writes(ranked: dict[str, list[str]]) -> None:
    run = read_run(write_run(ranked))
    assert {qid: list(ids) for qid, ids in run.items()} == ranked


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q10"]),
            st.text("abcXYZ019-", min_size=1, max_size=4),
            st.sampled_from(["1", "2", "2.0", "-0", "0", "1e-3", "-5"]),
        ),
        min_size=1,
        max_size=40,
        unique_by=lambda row: (row[0], row[1]),
    )
)
def test_the_columnar_reading_orders_any_run_as_the_line_by_line_reading(
    rows: list[tuple[str, str, str]],
) -> None:
    # Rows in any order, ties on score: the columnar reader's sort (read_run_table) gives trec_eval's order.
    text = "".join(f"{qid} Q0 {docno} 1 {score} tag\n" for qid, docno, score in rows)
    table = read_run_table(text.encode("ascii"))
    assert table is not None
    assert table.ranked().items() == read_run(text).items()
    # As the process `assay score` forks to read a run sends it back: every column equal, same types.
    sent = pickle.loads(pickle.dumps(table))  # noqa: S301  # its own bytes
    assert (sent.topics, sent.docnos, sent.tags) == (table.topics, table.docnos, table.tags)
    for name in ("topic", "bounds", "doc"):
        mine, theirs = getattr(sent, name), getattr(table, name)
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), name


# Mostly plain tokens, so that many runs are read both ways.
_PLAIN = st.sampled_from(["Q0", "1", "tag-a", "d1", "d2"])
_TOKEN = st.one_of(*[_PLAIN] * 8, st.text(alphabet="aZ0- \xa0\x0b\t\x00é\u3000", max_size=3))


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2"]),
            _TOKEN,
            _TOKEN,
            _TOKEN,
            st.sampled_from(["1", "2.5", "3", "x"]),
            _TOKEN,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_the_columnar_reading_takes_only_runs_the_line_by_line_reading_reads_alike(
    rows: list[tuple[str, ...]],
) -> None:
    # Any column may hold an empty value, a space of another kind, a control or non-ASCII character: the
    # columnar reader either declines (the line-by-line reading then reads or names every problem) or
    # gives what the line-by-line reading gives.
    # Each row's docno ends in its number, so that topics seldom hold one twice.
    text = "".join(
        f"{qid} {q0} {doc}{i} {rank} {score} {tag}\n"
        for i, (qid, q0, doc, rank, score, tag) in enumerate(rows)
    )
    table = read_run_table(text.encode("utf-8"))
    if table is not None:
        run = read_run(text)
        assert table.ranked().items() == run.items() and table.tags == run.tags


def test_the_columnar_reading_finds_every_tag_of_a_run_read_in_several_blocks() -> None:
    # Over 8 MB, so pyarrow reads it in more than one block: a tag first seen in the last block counts.
    lines = [f"q{i} Q0 d{r} {r + 1} {100 - r} tag-a\n" for i in range(4_000) for r in range(100)]
    lines[-1] = lines[-1].replace("tag-a", "tag-b")
    text = "".join(lines)
    assert len(text) > 8 << 20

    table = read_run_table(text.encode("ascii"))

    assert table is not None and table.tags == ("tag-a", "tag-b")
    assert len(table.topics) == 4_000 and table.bounds[-1] == 400_000
