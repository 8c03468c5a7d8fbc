"""Properties of the golden file format over generated input (hypothesis).

Any input either parses or raises GoldenFormatError (never another exception), and every valid file
round-trips: parse(dump(x)) == x and dump(parse(dump(x))) == dump(x), in both forms.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.golden.format import GoldenFormatError, dump, dump_json, dump_jsonl, from_dict, parse, to_dict
from assay.golden.model import GoldenFile

# Small budgets: the whole file should take a few seconds; CI runs it on every change anyway.
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GENERATED = settings(FAST, max_examples=25)

# ------------------------------------------------------------------------------------------ strategies

ident = st.text("abq-_.:/@0123456789", min_size=1, max_size=6)
# A version is also a git tag name (golden@<version>): no ":" and no lone "/" (the format refuses them).
version = st.text("abq-_0123456789", min_size=1, max_size=6)
# Any printable text, including non-ASCII, quotes, backslashes and the line separators JSONL must survive
# (control characters cannot be stored: the format refuses them).
printable = st.characters(codec="utf-8", exclude_categories=["Cc"])
text = st.text(printable, min_size=1, max_size=8).filter(str.strip)
scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)


@st.composite
def golden_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """A valid golden file as JSON data, with every optional field sometimes present."""
    low = draw(st.integers(0, 2))
    high = draw(st.integers(low + 1, low + 4))
    data: dict[str, Any] = {"version": draw(version)}
    if draw(st.booleans()):
        data["k"] = draw(st.integers(1, 1000))
    if draw(st.booleans()) or (low, high) != (0, 3):
        data["scale"] = {"min": low, "max": high}
    if draw(st.booleans()):
        data["relevant_min_grade"] = draw(st.integers(low + 1, high))
    if draw(st.booleans()):
        data["rubric"] = draw(text)
    ids = draw(st.lists(ident, min_size=1, max_size=4, unique=True))
    data["queries"] = [draw(query_dicts(qid, low, high)) for qid in ids]
    return data


@st.composite
def query_dicts(draw: st.DrawFn, qid: str, low: int, high: int) -> dict[str, Any]:
    query: dict[str, Any] = {"id": qid, "text": draw(text)}
    for key, strategy in [
        ("locale", st.sampled_from(["en-US", "fr-FR", "de"])),
        ("stratum", text),
        ("traffic_band", st.sampled_from(["head", "torso", "tail"])),
        ("failure_mode", text),
        ("filters", st.dictionaries(text, st.one_of(scalar, st.lists(scalar, max_size=3)), max_size=3)),
        (
            "weight",
            st.one_of(st.integers(1, 10**6), st.floats(min_value=1e-9, max_value=1e12, allow_nan=False)),
        ),
        ("tier", st.sampled_from(["core", "shadow", "challenge"])),
        ("tags", st.lists(text, max_size=3, unique=True)),
    ]:
        if draw(st.booleans()):
            query[key] = draw(strategy)
    docs = draw(st.lists(ident, max_size=4, unique=True))
    keys = draw(st.lists(text, min_size=len(docs), max_size=len(docs), unique=True))
    judgments = []
    for doc, key in zip(docs, keys, strict=True):
        judgment: dict[str, Any] = {"doc_id": doc, "grade": draw(st.integers(low, high))}
        if draw(st.booleans()):
            judgment["key"] = key
        judgments.append(judgment)
    written = bool(judgments) or draw(st.booleans())  # "judgments": [] and no field at all are the same
    if written:
        query["judgments"] = judgments
    flag = draw(st.sampled_from([None, "expect_empty", "critical"]))
    if flag == "expect_empty":
        query["expect_empty"] = True
    elif flag == "critical" and any(j["grade"] >= 1 for j in judgments):
        query["critical"] = True
    return query


json_like = st.recursive(
    st.one_of(scalar, st.sampled_from(["version", "queries", "id", "text", "judgments", "doc_id", "grade"])),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(text, st.sampled_from(["version", "k", "queries", "id", "text", "judgments", "grade"])),
            children,
            max_size=4,
        ),
    ),
    max_leaves=20,
)


@st.composite
def damaged_golden_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """A valid file with one value somewhere replaced by arbitrary JSON: reaches every check in turn."""
    data = draw(golden_dicts())
    node: Any = data
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return data
        key = draw(st.sampled_from(keys))
        child = node[key]
        if isinstance(child, dict | list) and child and draw(st.booleans()):
            node = child
            continue
        node[key] = draw(json_like)
        return data


def _parses_or_reports(data: str | bytes, **kwargs: Any) -> GoldenFile | None:
    try:
        return parse(data, **kwargs)
    except GoldenFormatError as error:
        assert error.problems, "an error always names at least one problem"
        assert all(str(p) for p in error.problems)
        return None


# ------------------------------------------------------------------------------------------ properties


@FAST
@given(st.binary(max_size=300), st.sampled_from([None, "json", "jsonl"]))
def test_arbitrary_bytes_parse_or_raise_only_the_format_error(data: bytes, fmt: Any) -> None:
    _parses_or_reports(data, fmt=fmt)


@FAST
@given(st.text(max_size=300), st.sampled_from([None, "json", "jsonl"]))
def test_arbitrary_text_parses_or_raises_only_the_format_error(data: str, fmt: Any) -> None:
    _parses_or_reports(data, fmt=fmt)


@FAST
@given(json_like)
def test_arbitrary_json_structures_raise_only_the_format_error(value: Any) -> None:
    with contextlib.suppress(GoldenFormatError):
        from_dict(value)
    _parses_or_reports(json.dumps(value))


@GENERATED
@given(damaged_golden_dicts())
def test_a_damaged_file_is_reported_or_still_round_trips(data: dict[str, Any]) -> None:
    golden = _parses_or_reports(json.dumps(data))
    if golden is not None:
        assert parse(dump_json(golden)) == golden
    lines = [json.dumps({k: v for k, v in data.items() if k != "queries"})]
    if isinstance(data.get("queries"), list):
        lines += [json.dumps(q) for q in data["queries"]]
    _parses_or_reports("\n".join(lines), fmt="jsonl")


@GENERATED
@given(golden_dicts())
def test_a_valid_file_round_trips_through_both_forms(data: dict[str, Any]) -> None:
    golden = from_dict(data)

    for fmt in ("json", "jsonl"):
        raw = dump(golden, fmt)
        assert parse(raw) == golden
        assert parse(raw, fmt=fmt) == golden
        assert dump(parse(raw), fmt) == raw
    assert from_dict(to_dict(golden)) == golden
    assert parse(json.dumps(data, ensure_ascii=True)) == golden


@GENERATED
@given(golden_dicts(), st.randoms(use_true_random=False))
def test_the_dump_is_the_same_whatever_order_the_input_came_in(data: dict[str, Any], rnd: Any) -> None:
    shuffled = json.loads(json.dumps(data))
    rnd.shuffle(shuffled["queries"])
    for query in shuffled["queries"]:
        rnd.shuffle(query.get("judgments", []))
        rnd.shuffle(query.get("tags", []))

    assert dump_jsonl(from_dict(shuffled)) == dump_jsonl(from_dict(data))
    assert dump_json(from_dict(shuffled)) == dump_json(from_dict(data))


@GENERATED
@given(golden_dicts(), st.sampled_from(["json", "jsonl"]), st.data())
def test_a_corrupted_dump_is_reported_or_still_round_trips(
    data: dict[str, Any], fmt: Any, edits: Any
) -> None:
    raw = bytearray(dump(from_dict(data), fmt))
    for _ in range(edits.draw(st.integers(1, 3))):
        start = edits.draw(st.integers(0, len(raw)))
        end = edits.draw(st.integers(start, min(len(raw), start + 8)))
        raw[start:end] = edits.draw(st.binary(max_size=4))

    golden = _parses_or_reports(bytes(raw))
    if golden is not None:
        assert parse(dump(golden, fmt)) == golden
