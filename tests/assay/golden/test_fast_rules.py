"""Every rule of the careful walk holds on the fast path (assay/golden/checks.py, assay/golden/fast.py).

`RULES` breaks one rule of `assay.golden.checks` each, on any valid file hypothesis draws: the careful walk
refuses it with that rule's code, and the fast path steps aside (None) so the careful walk's words are
the ones said. `test_every_rule_of_the_checks_has_a_case` holds the table to the checks: every place
`Checker` records a problem must be reached by one of the cases, so a rule added to checks.py alone
fails here until it has a case, and then its case holds the fast path to it.
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.golden import checks
from assay.golden.fast import fast_columns, fast_parse
from assay.golden.format import GoldenFormatError, _loads, from_dict
from tests.assay.golden.test_fast import SETTINGS, golden_dicts


def _query(data: dict[str, Any]) -> dict[str, Any]:
    query: dict[str, Any] = data["queries"][0]
    return query


def _judgment(data: dict[str, Any]) -> dict[str, Any]:
    """The first query's first judgment (one is added when it has none)."""
    judgments = _query(data).setdefault("judgments", [])
    if not judgments:
        judgments.append({"doc_id": "added-doc", "grade": 1})
    judgment: dict[str, Any] = judgments[0]
    return judgment


def _set(**fields: Any) -> Callable[[dict[str, Any]], None]:
    """The first query's fields set to these values."""
    return lambda data: _query(data).update(fields)


def _header(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.update(fields)


def _grade(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda data: _judgment(data).update(grade=value)


def _no_positive(data: dict[str, Any]) -> None:
    for judgment in _query(data).get("judgments", []):
        judgment["grade"] = 0
    _query(data).update(critical=True, expect_empty=False)


def _twice(data: dict[str, Any]) -> None:
    judgment = _judgment(data)
    _query(data)["judgments"].append(dict(judgment))


@dataclass(frozen=True)
class Rule:
    """One rule broken: `damage` changes valid data in place, `text` (when given) then changes its JSON
    text (what a dict cannot hold: a key twice, a non-finite number); `code` is the problem's code."""

    name: str
    code: str
    damage: Callable[[dict[str, Any]], None]
    text: Callable[[str], str] | None = None


RULES = [
    Rule("a query that is not an object", "type", lambda data: data["queries"].__setitem__(0, "q")),
    Rule(
        "a field twice in one object",
        "duplicate_field",
        _set(text="twice"),
        lambda text: text.replace('"text": ', '"text": "once", "text": ', 1),
    ),
    Rule("an unknown query field", "unknown_field", _set(txt="typo")),
    Rule("a missing required field", "missing", lambda data: _query(data).pop("text")),
    Rule("a string field given a number", "type", _set(text=5)),
    Rule("a blank string", "value", _set(text="  ")),
    Rule("an integer beyond the bounds", "range", _grade(10**30)),
    Rule("an integer with a decimal point", "type", _grade(1.0)),
    Rule("a flag that is not a boolean", "type", _set(critical=1)),
    Rule("a version git cannot tag", "value", _header(version="v1..2")),
    Rule("k below 1", "range", _header(k=0)),
    Rule("relevant_min_grade off the scale", "range", _header(relevant_min_grade=0)),
    Rule("a scale below 0", "range", _header(scale={"min": -1, "max": 3})),
    Rule("a scale whose min is not below its max", "range", _header(scale={"min": 2, "max": 2})),
    Rule("critical and expect_empty both", "conflict", _set(critical=True, expect_empty=True)),
    Rule("a critical query with nothing relevant", "critical_without_positive", _no_positive),
    Rule("an unknown tier", "enum", _set(tier="gold")),
    Rule("an unknown traffic band", "enum", _set(traffic_band="warm")),
    Rule("a weight that is not a number", "type", _set(weight="2")),
    Rule("an infinite weight", "range", _set(weight=10**400)),
    Rule("a weight of 0", "range", _set(weight=0)),
    Rule("a filter value with a control character", "value", _set(filters={"a": "\x01"})),
    Rule("a filter value that is an object", "type", _set(filters={"a": {"b": 1}})),
    Rule("tags that are not an array", "type", _set(tags="a")),
    Rule("judgments that are not an array", "type", _set(judgments="d1")),
    Rule("a grade off the scale", "off_scale", _grade(99)),
    Rule("a document judged twice", "duplicate_judgment", _twice),
]
# Only Python data can break these (JSON object keys are always strings, and the JSON reader refuses
# NaN and Infinity as values of no JSON type): `from_dict` callers.
DATA_ONLY_RULES = [
    Rule("a filter value that is not finite", "range", _set(filters={"a": float("inf")})),
    Rule("a field name that is not a string", "type", lambda data: data["queries"].__setitem__(0, {1: "x"})),
]


def _text(rule: Rule, data: dict[str, Any]) -> str:
    rule.damage(data)
    text = json.dumps(data, ensure_ascii=False)
    return rule.text(text) if rule.text else text


def _codes(data: Any) -> list[str]:
    with pytest.raises(GoldenFormatError) as refused:
        from_dict(data)
    return [problem.code for problem in refused.value.problems]


@SETTINGS
@given(golden_dicts(), st.sampled_from(RULES))
def test_each_rule_is_refused_by_the_careful_walk_and_left_to_it_by_the_fast_path(
    data: dict[str, Any], rule: Rule
) -> None:
    text = _text(rule, data)
    assert rule.code in _codes(_loads(text)), rule.name
    raw = text.encode("utf-8")
    assert fast_parse(raw) is None, rule.name
    assert fast_columns(raw) is None, rule.name
    assert fast_columns(raw, canonical=False) is None, rule.name


BASE: dict[str, Any] = {
    "version": "v1",
    "queries": [
        {
            "id": "q1",
            "text": "refund",
            "judgments": [{"doc_id": "d1", "grade": 2}, {"doc_id": "d2", "grade": 0}],
        },
        {"id": "q2", "text": "billing", "judgments": [{"doc_id": "d1", "grade": 1}]},
    ],
}


def _problem_places() -> set[int]:
    """The lines of checks.py where `Checker` records a problem (each call of its `add`)."""
    source = inspect.getsource(checks)
    return {
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    }


def test_every_rule_of_the_checks_has_a_case(monkeypatch: pytest.MonkeyPatch) -> None:
    reached: set[int] = set()
    add = checks.Checker.add

    def recording(self: checks.Checker, *args: Any, **kwargs: Any) -> None:
        caller = sys._getframe(1)
        if caller.f_code.co_filename == checks.__file__:
            reached.add(caller.f_lineno)
        add(self, *args, **kwargs)

    monkeypatch.setattr(checks.Checker, "add", recording)
    for rule in RULES:
        data = copy.deepcopy(BASE)
        assert rule.code in _codes(_loads(_text(rule, data))), rule.name
    for rule in DATA_ONLY_RULES:
        data = copy.deepcopy(BASE)
        rule.damage(data)
        assert rule.code in _codes(data), rule.name
    places = _problem_places()
    assert len(places) >= 25  # the walk found the checks' calls
    assert places - reached == set(), "rules of assay/golden/checks.py with no case in RULES (by line)"
