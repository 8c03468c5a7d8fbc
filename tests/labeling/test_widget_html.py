"""The small forms' widgets drawn in Python (labeling/widget_html.py) are Django's templates' markup to the
byte: every field of every small form, fresh and sent back with what a person may type (quotes, angle
brackets, ampersands), each choice of a list on its own, and a select with groups."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from django import forms
from django.forms.renderers import DjangoTemplates

from labeling.forms import (
    AdjudicationForm,
    GoldForm,
    JudgeJobForm,
    ProposalDecisionForm,
    QualifyForm,
    ReassignForm,
    RetireForm,
    TierMoveForm,
    WithdrawForm,
)
from labeling.widget_html import PythonWidgets

TYPED = 'it\'s <b>"fine"</b> & more'


class _Rater:
    def __init__(self, pk: int, username: str) -> None:
        self.pk, self.username = pk, username


RATERS = [_Rater(1, "alice"), _Rater(2, "bob <o'neil>"), _Rater(3, "carol")]
QUERIES = [("1", "q-1: refund & <returns>"), ("2", 'q-2: "annual" plan')]
SCOPES = [("billing", "billing"), ("", "(no stratum)")]


Make = Callable[[], forms.Form]


def _makers() -> dict[str, Make]:
    made: dict[str, Make] = {}
    sent = {"grade": "2", "rationale": TYPED, "reason": TYPED, "tier": "x", "rater": "3"}
    for how, data in (("fresh", None), ("empty", {}), ("typed", sent)):
        made |= {
            f"adjudication {how}": partial(AdjudicationForm, data, key=7, scale=[0, 1, 2, 3], grade=1),
            f"gold {how}": partial(GoldForm, data, key=7, scale=[0, 1, 2, 3], grade=None),
            f"proposal {how}": partial(ProposalDecisionForm, data, key=3),
            f"tier {how}": partial(TierMoveForm, data, key="core", tier="shadow"),
            f"retire {how}": partial(RetireForm, data),
            f"withdraw {how}": partial(WithdrawForm, data, key=4),
            f"reassign {how}": partial(ReassignForm, data, key=9, raters=RATERS, held_by=1),
            f"job {how}": partial(JudgeJobForm, data, queries=QUERIES),
            f"qualify {how}": partial(QualifyForm, data, strata=SCOPES, locales=[("de-DE", "de-DE")]),
        }
    made["job chosen"] = lambda: JudgeJobForm({"queries": ["2", "x"], "all_queries": "on"}, queries=QUERIES)
    return made


MAKERS = _makers()


def _drawn(make: Make, renderer: Any) -> list[str]:
    """Every field of a form made afresh for `renderer` (a bound field keeps its choices' widgets)."""
    form = make()
    form.renderer = renderer
    if form.is_bound:
        form.is_valid()
    out = []
    for field in form:
        out.append(str(field))
        if getattr(field.field.widget, "input_type", "") == "radio":
            out += [str(box.tag(wrap_label=wrap)) for box in field.subwidgets for wrap in (False, True)]
    return out


@pytest.mark.parametrize("name", MAKERS)
def test_each_widget_is_djangos_markup(name: str) -> None:
    assert _drawn(MAKERS[name], PythonWidgets()) == _drawn(MAKERS[name], DjangoTemplates())


def test_a_select_with_groups_is_djangos_markup() -> None:
    class Grouped(forms.Form):
        pick = forms.MultipleChoiceField(
            choices=[("Fruit", [("a", "apple & <pear>"), ("b", "banana")]), ("c", "carrot")],
            widget=forms.SelectMultiple(attrs={"size": 3, "data-x": '"q"'}),
        )

    drawn = _drawn(lambda: Grouped({"pick": ["b", "c"]}), PythonWidgets())
    assert drawn == _drawn(lambda: Grouped({"pick": ["b", "c"]}), DjangoTemplates())
    assert "<optgroup" in drawn[0] and "selected" in drawn[0]
