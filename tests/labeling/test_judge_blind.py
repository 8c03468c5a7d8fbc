"""Raters see nothing of machine judges: not a judge's grade, not its reason, not that one exists. A frozen
label a judge gave is no human decision a rater overturns (no overturn listed, no proposal): the rater's
grade simply replaces it (docs/judge.md)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling.models import Assignment, FrozenLabel, JudgeLabel, LabelProposal
from labeling.selectors import labels_consolidated
from labeling.services import judgment_submit
from tests.support.judge_labels import label, make_judge, qualify

pytestmark = pytest.mark.django_db

REASON = "the zebra-secret reason only a judge would give"


def test_the_queue_the_grading_page_and_marking_done_show_nothing_of_a_judge(
    client: Client, assignment: Assignment, alice: User, rita: User
) -> None:
    client.force_login(alice)
    as_alice = client
    query = assignment.query
    candidates = list(query.candidates.order_by("best_rank"))
    judge = make_judge(query.golden_set, "zebra-model")
    for candidate in candidates:
        label(judge, query, candidate.document, 3)
    JudgeLabel.objects.update(reason=REASON)
    qualify(judge, rita)
    # The fixture's frozen 3 on the first document is now the judge's (as a freeze of its fill-in writes).
    FrozenLabel.objects.filter(query=query).update(source="judge", judge=judge, judge_name=judge.name)

    secrets = (judge.name, "zebra-model", REASON, '"source"', "judge label", "machine judge")
    for url in (reverse("labeling:queue"), reverse("labeling:grade", args=[assignment.pk])):
        page = as_alice.get(url).content.decode()
        for secret in secrets:
            assert secret not in page, (url, secret)

    for candidate in candidates:
        judgment_submit(
            assignment_id=assignment.pk, rater=assignment.rater, candidate_id=candidate.pk, grade=0, note=""
        )
    response = as_alice.post(
        reverse("labeling:done", args=[assignment.pk]), data=json.dumps({}), content_type="application/json"
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert response.json()["overturns"] == []  # the judge's 3 is not shown as a label the rater overturns
    for secret in secrets:
        assert secret not in body
    page = as_alice.get(reverse("labeling:grade", args=[assignment.pk])).content.decode()
    for secret in secrets:
        assert secret not in page
    assert not LabelProposal.objects.exists()
    # The rater's grades are the labels: a judge's never overrides a human's.
    labels = labels_consolidated(golden_set=query.golden_set).labels
    assert {(f.grade, f.method, f.source) for f in labels} == {(0, "single", "human")}
