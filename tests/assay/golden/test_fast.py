"""The fast readers against the careful ones they stand in for (hypothesis over valid and damaged input).

`assay.golden.fast` (golden files) and `read_run`'s pyarrow path may only ever accept what the careful
walk accepts, and then build the very same value; on anything else they step aside (None) and the careful
walk reports, so every message stays the careful walk's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from assay.golden.fast import _sort_keys, fast_columns, fast_parse
from assay.golden.fields import natural_key
from assay.golden.format import GoldenFormatError, _loads, from_dict, parse
from assay.golden.model import GoldenFile
from assay.golden.trec import TrecFormatError, TrecRun, _read_run_arrow, read_run

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ident = st.text("dq-_.:/0123456789", min_size=1, max_size=5)
# A version is also a git tag name (golden@<version>): no ":" and no lone "/" (the format refuses them).
version = st.text("abq-_0123456789", min_size=1, max_size=6)
text = st.text(st.characters(codec="utf-8", exclude_categories=["Cc"]), min_size=0, max_size=6)


# Query fields beyond id, text and judgments, valid (the fast path checks most of them in bulk) and not.
RICH_VALUES: dict[str, list[Any]] = {
    "locale": ["en-US", None, "de:DE", "", " ", 1, "x" * 36, "a\x01"],
    "stratum": ["billing", None, "a:b", "é", "\t"],
    "failure_mode": ["typo", None, ["typo"]],
    "traffic_band": ["head", None, "warm", 1],
    "tier": ["core", "shadow", "challenge", "Core", None],
    "weight": [1, 2.5, 0.001, 0, -1, True, "2", 1e308],
    "expect_empty": [False, True, 0, None],
    "critical": [False, True, 1],
    "filters": [
        {},
        {"product": "billing"},
        {"b": 1, "a:x": None, "c": 1.5, "d": True, "e": ""},
        {"tags": ["a", 1]},
        {"": "x"},
        {"a": "\x01"},
        {"a": {"b": 1}},
        [],
        None,
    ],
    "tags": [["a", "b"], []],
}


@st.composite
def golden_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """A golden file as JSON data, mostly in the fast path's shape, sometimes with more fields."""
    data: dict[str, Any] = {"version": draw(version)}
    if draw(st.booleans()):
        data["scale"] = {"min": 0, "max": draw(st.integers(1, 4))}
    if draw(st.booleans()):
        data["k"] = draw(st.integers(1, 20))
    high = data.get("scale", {}).get("max", 3)
    queries = []
    for qid in draw(st.lists(ident, min_size=1, max_size=4, unique=True)):
        query: dict[str, Any] = {"id": qid, "text": draw(text.filter(str.strip))}
        docs = draw(st.lists(ident, max_size=5, unique=True))
        judgments: list[dict[str, Any]] = []
        for doc in docs:
            judgment: dict[str, Any] = {"doc_id": doc, "grade": draw(st.integers(0, high))}
            if draw(st.integers(0, 4)) == 0:
                judgment["key"] = draw(st.one_of(st.none(), ident))
            if draw(st.integers(0, 3)) == 0:
                judgment["source"] = draw(st.sampled_from(["judge", None]))
            judgments.append(judgment)
        if bool(judgments) or draw(st.booleans()):
            query["judgments"] = judgments
        if draw(st.integers(0, 5)) == 0:
            query[draw(st.sampled_from(["tier", "weight", "critical", "tags", "stratum"]))] = draw(
                st.sampled_from(["shadow", 2, True, ["a"], "docs"])
            )
        for name in draw(st.lists(st.sampled_from(sorted(RICH_VALUES)), max_size=4, unique=True)):
            query[name] = draw(st.sampled_from(RICH_VALUES[name]))
        queries.append(query)
    data["queries"] = queries
    return data


DAMAGE: list[Any] = [None, "", " ", "a b", 1, 1.0, True, -1, 99, [], {}, "x\ty", "\ud800"]


@st.composite
def damaged(draw: st.DrawFn) -> str:
    """A golden file's text, often with one thing wrong in a judgment, a query or the text itself."""
    data = draw(golden_dicts())
    query = draw(st.sampled_from(data["queries"]))
    how = draw(st.integers(0, 9))
    judgments = query.get("judgments") or []
    if how == 0 and judgments:
        field = draw(st.sampled_from(["doc_id", "grade", "key", "source", "dok"]))
        draw(st.sampled_from(judgments))[field] = draw(
            st.sampled_from([*DAMAGE, "Judge", "human", "judge:x"])
        )
    elif how == 1 and judgments:
        judgments.append(dict(draw(st.sampled_from(judgments))))  # a duplicate judgment
    elif how == 2:
        query[draw(st.sampled_from(["id", "text", "judgments", "txt"]))] = draw(st.sampled_from(DAMAGE))
    elif how == 3:
        data["queries"].append(dict(query))  # a duplicate query id
    elif how == 4 and judgments:
        del draw(st.sampled_from(judgments))[draw(st.sampled_from(["doc_id", "grade"]))]
    elif how == 5:
        data[draw(st.sampled_from(["version", "k", "queries", "scale"]))] = draw(st.sampled_from(DAMAGE))
    out = json.dumps(data, ensure_ascii=draw(st.booleans()))
    if how == 6 and '"grade": ' in out:
        out = out.replace('"grade": ', '"grade": 1, "grade": ', 1)  # a repeated key
    elif how == 7 and '"text": ' in out:
        out = out.replace('"text": ', '"text": "a\\u003a", "text": ', 1)  # ... next to an escaped colon
    elif how == 8 and "[" in out:
        out = out.replace("[", "[NaN, ", 1)
    return out


def careful(text: str) -> GoldenFile | list[str]:
    try:
        return from_dict(_loads(text))
    except GoldenFormatError as exc:
        return [str(p) for p in exc.problems]
    except json.JSONDecodeError:
        return ["invalid JSON"]


def fast(text: str) -> GoldenFile | None:
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: not UTF-8, parse never hands it to the fast path
        return None
    return fast_parse(raw)


@SETTINGS
@given(damaged())
def test_the_fast_path_accepts_only_what_the_careful_walk_accepts_and_builds_the_same_file(
    text: str,
) -> None:
    expected = careful(text)
    got = fast(text)
    if isinstance(expected, list):
        assert got is None
    elif got is not None:
        assert got == expected


@SETTINGS
@given(golden_dicts())
def test_the_fast_path_takes_every_valid_file_in_its_shape(data: dict[str, Any]) -> None:
    text = json.dumps(data)
    simple = all(
        set(q) <= {"id", "text", "judgments", "locale", "stratum", "tier", "weight", "filters"}
        and not any(isinstance(v, list) for v in (q.get("filters") or {}).values())
        for q in data["queries"]
    )
    expected = careful(text)
    got = fast(text)
    if isinstance(expected, GoldenFile):
        assert got == expected or not simple
        assert parse(text) == expected


@SETTINGS
@given(damaged())
def test_parse_reports_exactly_the_careful_walks_problems(text: str) -> None:
    expected = careful(text)
    try:
        got: GoldenFile | list[str] = parse(text)
    except GoldenFormatError as exc:
        got = [str(p) for p in exc.problems]
    if expected != ["invalid JSON"]:
        assert got == expected


@given(st.lists(st.text("ab0123456789", max_size=5), unique=True, max_size=8))
@example(["ab1", "abab1"])  # the shared prefix again inside an id
def test_the_fast_sort_keys_order_ids_as_the_natural_key_does(values: list[str]) -> None:
    keys = _sort_keys(values)
    order = sorted(range(len(values)), key=keys.__getitem__)
    assert [values[i] for i in order] == sorted(values, key=natural_key)


# ------------------------------------------------------------------------------------------ TREC runs

token = st.text("dq-0123456789", min_size=1, max_size=3)
score = st.one_of(
    st.integers(-5, 5).map(str),
    st.sampled_from(["1.5", "-0.0", "0", "1e3", "inf", "-inf", "nan", "1_0", "0x10", ".5", "1.", "+2"]),
)


@st.composite
def run_texts(draw: st.DrawFn) -> str:
    lines = [
        " ".join([draw(token), "Q0", draw(token), "1", draw(score), draw(st.sampled_from(["a", "b"]))])
        for _ in range(draw(st.integers(1, 12)))
    ]
    damage = draw(st.integers(0, 6))
    if damage == 0:
        lines.append("q1 Q0 d1 1 2")  # too few columns
    elif damage == 1:
        lines.append("q1 Q0 d1 1 2 a junk")  # junk after the tag: the careful reading tolerates it
    elif damage == 2:
        lines.insert(0, "")
    elif damage == 3:
        lines.append("q1  Q0 d1 1 2 a")
    elif damage == 4:
        lines.append('"q1 x" Q0 d1 1 2 a')
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", " "]))


def trec(text: str) -> tuple[list[tuple[str, tuple[str, ...]]], tuple[str, ...]] | str:
    try:
        run = read_run(text)  # small: the line-by-line reading
    except TrecFormatError as exc:
        return str(exc)
    return list(run.items()), run.tags


@SETTINGS
@given(run_texts())
def test_the_arrow_reading_of_a_run_accepts_only_what_the_careful_one_does_and_agrees(text: str) -> None:
    expected = trec(text)
    got = _read_run_arrow(text)
    if isinstance(expected, str):
        assert got is None
    elif got is not None:
        assert (list(got.items()), got.tags) == expected


def test_the_arrow_reading_takes_a_plain_run_and_orders_it_like_trec_eval() -> None:
    text = "q2 Q0 d1 1 1 a\nq2 Q0 d3 2 1 a\nq1 Q0 d9 1 -0.0 b\nq1 Q0 d2 2 0 b\nq1 Q0 d7 3 5 b\n"
    got = _read_run_arrow(text)
    assert isinstance(got, TrecRun)
    assert list(got.items()) == [("q2", ("d3", "d1")), ("q1", ("d7", "d9", "d2"))]
    assert got.tags == ("a", "b")


@pytest.mark.parametrize("bad", ["q1 Q0 d1 1 nan a", "q1 Q0 d1 1 1_0 a", "q1 Q0 d1 1 2", "q1 Q0 d1 1 2 a\tb"])
def test_the_arrow_reading_steps_aside_for_what_only_the_careful_one_can_report(bad: str) -> None:
    assert _read_run_arrow(f"q0 Q0 d0 1 1 a\n{bad}\n") is None


def test_deep_nesting_that_orjson_reads_is_reported_by_the_careful_walk_not_a_recursion_error() -> None:
    deep = "[" * 900 + "]" * 900
    text = '{"version": "v1", "queries": [{"id": "q", "text": "t", "filters": {"f": ' + deep + "}}]}"
    with pytest.raises(GoldenFormatError) as caught:
        parse(text)
    assert "filters" in str(caught.value)


@SETTINGS
@given(damaged())
def test_the_files_order_is_checked_like_the_canonical_one(text: str) -> None:
    """`assay validate` reads the columns in the file's order: the same verdict, the same judgments."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        return
    canonical, as_filed = fast_columns(raw), fast_columns(raw, canonical=False)
    assert (canonical is None) == (as_filed is None)
    if canonical is not None and as_filed is not None:
        assert sorted(q.id for q in canonical.queries) == sorted(q.id for q in as_filed.queries)
        pairs = sorted(
            zip(canonical.doc_ids, canonical.grades.tolist(), canonical.owner.tolist(), strict=True)
        )
        assert len(pairs) == len(as_filed.doc_ids)
        assert sorted(as_filed.grades.tolist()) == sorted(canonical.grades.tolist())


@pytest.mark.parametrize(
    ("name", "value"), [(name, value) for name, values in RICH_VALUES.items() for value in values]
)
@pytest.mark.parametrize("grade", [0, 2])
def test_each_query_field_alone_is_taken_or_refused_as_the_careful_walk_does(
    name: str, value: Any, grade: int
) -> None:
    query = {"id": "q1", "text": "t", "judgments": [{"doc_id": "d1", "grade": grade}], name: value}
    text = json.dumps({"version": "v1", "queries": [query, {"id": "q2", "text": "u"}]})
    expected = careful(text)
    got = fast(text)
    if isinstance(expected, list):
        assert got is None, expected
    else:
        # Taken by the fast path, in bulk, unless the field is one it leaves to the careful walk.
        listed = isinstance(value, dict) and any(isinstance(v, list) for v in value.values())
        lists = name == "tags" or listed
        assert got == expected or (got is None and lists)


SOURCE_VALUES: list[Any] = [
    "judge",
    None,
    "Judge",
    "human",
    "judge ",
    "",
    "judge:a",
    1,
    True,
    [],
    {},
    ["judge"],
]


@pytest.mark.parametrize("value", SOURCE_VALUES)
@pytest.mark.parametrize("rich", [False, True])
def test_a_judgment_source_is_taken_or_refused_as_the_careful_walk_does(value: Any, rich: bool) -> None:
    """The fast path's bulk check of `source` (docs/golden-format.md, "Judgment sources") against the
    careful walk's, in a plain query and in one the careful walk reads (tags)."""
    query: dict[str, Any] = {
        "id": "q1",
        "text": "t",
        "judgments": [{"doc_id": "d1", "grade": 2, "source": value}, {"doc_id": "d2", "grade": 1}],
    }
    if rich:
        query["tags"] = ["a"]
    text = json.dumps({"version": "v1", "queries": [query, {"id": "q2", "text": "u"}]})
    expected = careful(text)
    got = fast(text)
    if value in ("judge", None):
        assert isinstance(expected, GoldenFile)
        assert got == expected
        assert expected.query("q1").judgments[0].source == value
        assert expected.sources == ({"judge": 1, "human": 1} if value else {"human": 2})
    else:
        assert got is None
        assert isinstance(expected, list) and len(expected) == 1
        assert expected[0].startswith("queries[0].judgments[0].source: ")
        assert "is not a judgment source: use judge, or leave it out (humans)" in expected[0]


@pytest.mark.parametrize(
    ("where", "name", "value"),
    [("judgment", "key", "https://x/9"), ("judgment", "source", "judge"), ("query", "locale", "de-DE")],
)
def test_a_field_beyond_the_plain_shape_in_the_last_query_only_is_kept(
    where: str, name: str, value: str
) -> None:
    # The fast path first decodes a file as id, text and judgments of a doc id and a grade; a field beyond
    # that anywhere, even in the last query only, has it decode every field instead.
    data: dict[str, Any] = {
        "version": "v1",
        "queries": [
            {"id": f"q{i}", "text": "t", "judgments": [{"doc_id": "d1", "grade": 1}]} for i in range(50)
        ],
    }
    last = data["queries"][-1]
    (last["judgments"][0] if where == "judgment" else last)[name] = value
    text = json.dumps(data)

    got = fast(text)

    assert got is not None and got == careful(text)
    query = got.query("q49")
    assert getattr(query.judgments[0] if where == "judgment" else query, name) == value
