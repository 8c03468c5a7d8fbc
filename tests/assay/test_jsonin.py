"""A user's JSON (assay.jsonin): bounded depth, every failure worded, nothing raised but JsonInputError."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.jsonin import MAX_DEPTH, JsonInputError, json_depth_over, json_loads


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
