"""An undefined figure says why once: its interval, undefined for the same reason, is left out rather
than repeated ("undefined: no item graded by the judge" twice in a row read as two problems)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from assay.labels.agreement_types import Undefined
from labeling.models import GoldenSet
from labeling.templatetags.display import interval
from tests.support.disputes import dual_graded
from tests.support.evaluation import page_text
from tests.support.judge_labels import make_judge


def test_an_interval_says_nothing_beside_an_undefined_estimate() -> None:
    why = Undefined("no item graded by the judge")
    assert interval(why, why) == ""
    assert interval((0.1, 0.9), 0.5) == "[0.100, 0.900]"
    assert "too few queries" in interval(Undefined("too few queries"), 0.5)  # its own reason: said


@pytest.mark.django_db
def test_the_judge_qualification_page_says_each_reason_once(
    golden_set: GoldenSet, alice: User, bob: User, rita: User
) -> None:
    dual_graded(golden_set, (alice, [3, 2, 1]), (bob, [3, 2, 0]), external_id="q-1", text="refund")
    judge = make_judge(golden_set, "grader-1")  # it has graded nothing yet
    client = Client()
    client.force_login(rita)
    text = page_text(client.get(reverse("labeling:judge_qualification", args=[golden_set.slug, judge.pk])))
    assert "undefined: no item graded by the judge" in text
    assert not re.search(r"(undefined: [a-z ]+) \1", text), text
