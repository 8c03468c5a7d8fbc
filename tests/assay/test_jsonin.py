"""A user's JSON (assay.jsonin): bounded depth, every failure worded, nothing raised but JsonInputError."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.jsonin import MAX_DEPTH, JsonInputError, json_depth_over, json_loads, json_or_text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, "nested deeper than 64 levels"),
        ("[" * 5_000 + "]" * 5_000, "nested deeper than 64 levels"),
        ('{"a":' * 65 + "1" + "}" * 65, "nested deeper than 64 levels"),
        ('{"a": 1,}', "invalid JSON at line 1 column 9"),
        (b"\xff\xfe{", "not UTF-8 text"),
        ("1" * 5_000, "a number is too long to read"),
    ],
)
def test_it_refuses_with_words(text: str | bytes, message: str) -> None:
    with pytest.raises(JsonInputError, match=message):
        json_loads(text)


def test_it_reads_what_nests_up_to_the_bound() -> None:
    deepest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert json_loads(deepest) is not None
    assert json_depth_over([[[]]], 3) is False and json_depth_over([[[[]]]], 3) is True
    assert json_depth_over({"a": {"b": 1}}, 2) is False


@given(st.binary(max_size=200) | st.text(max_size=200))
def test_any_input_is_a_value_or_a_json_input_error(data: str | bytes) -> None:
    try:
        json_loads(data)
    except JsonInputError as exc:
        assert str(exc)


def test_a_syntax_error_carries_its_place_and_the_bounds_do_not() -> None:
    with pytest.raises(JsonInputError) as syntax:
        json_loads('{"a":\n tru}')
    assert (syntax.value.syntax, syntax.value.line, syntax.value.column) == (True, 2, 2)
    assert syntax.value.detail == "Expecting value"
    with pytest.raises(JsonInputError) as deep:
        json_loads("[" * 100_000)
    assert not deep.value.syntax and deep.value.line is None


def test_without_a_depth_bound_only_pythons_own_limit_is_refused() -> None:
    assert json_loads("[" * 200 + "]" * 200, max_depth=None) is not None
    with pytest.raises(JsonInputError, match="nested too deeply to read"):
        json_loads("[" * 100_000, max_depth=None)


def test_the_hooks_are_jsons_own() -> None:
    pairs = json_loads('{"a": 1, "a": 2}', object_pairs_hook=list)
    assert pairs == [("a", 1), ("a", 2)]
    assert json_loads("[NaN]", parse_constant=lambda name: name) == ["NaN"]


@pytest.mark.parametrize(
    ("typed", "value"),
    [("true", True), ("3", 3), ('"fast"', "fast"), ("fast", "fast"), ("[[", "[["), ("{", "{"), ("", "")],
)
def test_a_typed_value_is_json_when_it_is_and_the_text_otherwise(typed: str, value: object) -> None:
    assert json_or_text(typed) == value


@pytest.mark.parametrize(
    ("typed", "message"),
    [("[" * 100_000, "nested deeper than 64 levels"), ("1" * 5000, "a number is too long to read")],
)
def test_a_typed_value_beyond_the_bounds_is_refused_not_taken_for_text(typed: str, message: str) -> None:
    with pytest.raises(JsonInputError, match=message):
        json_or_text(typed)
