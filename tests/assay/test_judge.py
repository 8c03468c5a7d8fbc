"""The judge's pure parts: the prompt (what it shows, the trim, the hash) and the answer contract."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.judge.answer import parse_answer, seen
from assay.judge.client import RetryPolicy, endpoint_problem
from assay.judge.prompt import (
    Grade,
    PromptDocument,
    PromptQuery,
    PromptSpec,
    Rubric,
    messages,
    prompt_hash,
    query_hash,
    response_format,
    trim,
)

SCALE = range(0, 4)
RUBRIC = Rubric(
    0,
    3,
    [
        Grade(3, "Exact", "answers the query fully", ["the refund policy page"], ["a blog post"]),
        Grade(0, "Irrelevant", "unrelated", ["a recipe"], ["the refund policy page"]),
    ],
)
SPEC = PromptSpec(instructions="Grade it.", rubric=RUBRIC, text_budget=40)


def test_the_prompt_shows_the_rubric_the_query_and_the_document() -> None:
    query = PromptQuery("refund policy", "en-US", {"product": "billing"})
    system, user = messages(SPEC, query, PromptDocument("Refunds", "Short text."))
    assert system["role"] == "system" and user["role"] == "user"
    assert "Grade it." in system["content"]
    assert "Grade 3 (Exact): answers the query fully" in system["content"]
    assert "earns it: the refund policy page" in system["content"]
    assert "does not: a blog post" in system["content"]
    assert '"grade": <an integer from 0 to 3>' in system["content"]
    assert "Query: refund policy" in user["content"]
    assert "Locale: en-US" in user["content"]
    assert 'Filters: {"product": "billing"}' in user["content"]
    assert "Document title: Refunds" in user["content"]
    assert "Short text." in user["content"] and "trimmed" not in user["content"]


def test_a_long_text_is_trimmed_to_the_budget_and_says_so() -> None:
    text = "word " * 50
    _, user = messages(SPEC, PromptQuery("q"), PromptDocument("t", text))
    assert "[... document text trimmed to 40 characters ...]" in user["content"]
    body = user["content"].split("Document text:\n", 1)[1].split("\n[...", 1)[0]
    assert len(body) <= 40


@given(st.text(), st.integers(min_value=1, max_value=200))
def test_trim_never_exceeds_the_budget_and_keeps_short_texts(text: str, budget: int) -> None:
    cut, trimmed = trim(text, budget)
    assert len(cut) <= budget
    assert trimmed == (len(text) > budget)
    if not trimmed:
        assert cut == text


def test_the_prompt_hash_follows_every_prompt_side_setting() -> None:
    base = prompt_hash(SPEC, temperature=0.0, structured=True)
    assert base == prompt_hash(SPEC, temperature=0.0, structured=True)
    assert base != prompt_hash(SPEC, temperature=0.5, structured=True)
    assert base != prompt_hash(SPEC, temperature=0.0, structured=False)
    other = PromptSpec(instructions="Grade it!", rubric=RUBRIC, text_budget=40)
    assert base != prompt_hash(other, temperature=0.0, structured=True)
    assert query_hash(PromptQuery("a", "en", {"x": 1})) != query_hash(PromptQuery("a", "de", {"x": 1}))


def test_the_schema_is_the_scale() -> None:
    schema = response_format(RUBRIC)["json_schema"]["schema"]
    assert schema["properties"]["grade"] == {"type": "integer", "minimum": 0, "maximum": 3}
    assert schema["required"] == ["grade", "reason"]


@pytest.mark.parametrize(
    "content",
    [
        '{"grade": 2, "reason": "covers refunds"}',
        '  {"reason": "covers refunds", "grade": 2}\n',
        '```json\n{"grade": 2, "reason": "covers refunds"}\n```',
        '```\n{"grade": 2, "reason": "covers refunds"}\n```',
    ],
)
def test_a_good_answer_is_a_grade(content: str) -> None:
    answer = parse_answer(content, SCALE)
    assert (answer.grade, answer.reason, answer.error) == (2, "covers refunds", None)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"grade": 7, "reason": "great"}', "off the scale 0..3"),
        ('{"grade": -1, "reason": "bad"}', "off the scale"),
        ('{"grade": 2.5, "reason": "half"}', "not an integer"),
        ('{"grade": 2.0, "reason": "float"}', "not an integer"),
        ('{"grade": "2", "reason": "text"}', "not an integer"),
        ('{"grade": true, "reason": "bool"}', "not an integer"),
        ('{"grade": 2}', "missing reason"),
        ('{"reason": "no grade"}', "missing grade"),
        ('{"grade": 2, "reason": "x", "confidence": 0.9}', "unexpected field confidence"),
        ('{"grade": 2, "reason": 5}', "reason is not a string"),
        ("I think this is a 2 because it covers refunds.", "not a JSON object"),
        ('Sure! {"grade": 2, "reason": "x"}', "not a JSON object"),
        ("[2]", "not a JSON object"),
        ("", "not a JSON object"),
        ("[" * 100_000, "not a usable JSON object (nested deeper than 64 levels of arrays or objects)"),
        ('{"grade": 1' + "0" * 5000 + ', "reason": "x"}', "not a usable JSON object (a number is too long"),
    ],
)
def test_anything_else_is_an_error_that_quotes_what_was_seen(content: str, problem: str) -> None:
    answer = parse_answer(content, SCALE)
    assert answer.grade is None
    assert answer.error is not None and problem in answer.error
    assert repr(seen(content)) in answer.error


@given(st.text(max_size=300))
def test_no_text_but_a_contract_object_is_ever_a_grade(text: str) -> None:
    answer = parse_answer(text, SCALE)
    if answer.grade is not None:
        body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
        value = json.loads(body)
        assert set(value) == {"grade", "reason"} and value["grade"] == answer.grade
        assert answer.grade in SCALE
    else:
        assert answer.error and len(answer.error) < 300


@given(st.integers(), st.text(max_size=50))
def test_an_integer_grade_is_accepted_exactly_on_the_scale(grade: int, reason: str) -> None:
    answer = parse_answer(json.dumps({"grade": grade, "reason": reason}), SCALE)
    assert (answer.grade == grade) == (grade in SCALE)


def test_the_error_quote_is_one_trimmed_line() -> None:
    assert seen("a\n b  c") == "a b c"
    assert len(seen("x" * 1000)) == 200


def test_retry_after_wins_capped_and_backoff_doubles_capped() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_max=3.0, retry_after_max=10.0)
    assert policy.delay(1, 4.0) == 4.0
    assert policy.delay(1, 500.0) == 10.0
    assert 1.0 <= policy.delay(1, None) <= 1.1
    assert 2.0 <= policy.delay(2, None) <= 2.2
    assert policy.delay(5, None) == 3.0


def test_endpoint_addresses_follow_the_network_policy() -> None:
    assert endpoint_problem("ftp://x/v1") is not None
    assert endpoint_problem("http://127.0.0.1:9/v1", allow_private=True) is None
    assert "loopback" in (endpoint_problem("http://127.0.0.1:9/v1", allow_private=False) or "")
    assert endpoint_problem("https://api.example.com/v1", allow_private=False) is None
