"""The reviewer's pages of labeling say whose work came from people no longer rating the set (the rule of
labeling.roles: the raters list and the raters group): the set page's assignments, a query's grades, the
agreement figures, the adjudication columns, the proposals and a calibration round's progress mark bob's
work once he is taken off the list or out of the group, and alice's never; his work stays on every page
and counts. Put back, he is unmarked again. And no new work goes to him: assigning, reassigning and a
calibration round read the same rule."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from labeling import services
from labeling.models import Assignment, GoldenSet, LabelProposal, Query
from labeling.roles import RATERS
from tests import factories
from tests.support.disputes import dual_graded
from tests.support.forms import error_summary

pytestmark = pytest.mark.django_db

MARK = '<span class="muted no-longer-rates">(no longer rates this set: work kept)</span>'


def _pages(golden_set: GoldenSet, query: Query, round_pk: int) -> dict[str, tuple[str, str, str]]:
    """Per page: its URL, what shows bob's work marked, and what shows alice's unmarked."""
    slug = golden_set.slug
    return {
        "set page": (
            reverse("labeling:set_detail", args=[slug]),
            f'<div class="assignment">bob {MARK} <span class="badge">second',
            '<div class="assignment">alice <span class="badge">primary',
        ),
        "query review": (
            reverse("labeling:query_review", args=[slug, query.pk]),
            f"<strong>bob {MARK}</strong> (second)",
            "<strong>alice</strong> (primary)",
        ),
        "agreement": (
            reverse("labeling:agreement", args=[slug]),
            f'<tr data-rater="bob"><td>bob {MARK}</td>',
            '<tr data-rater="alice"><td>alice</td>',
        ),
        "adjudication": (
            reverse("labeling:adjudicate", args=[slug, query.pk]),
            f"<th>Second rater {MARK}</th>",
            "<th>First rater</th>",
        ),
        "proposals": (reverse("labeling:proposals", args=[slug]), f"by bob {MARK}", "by alice</span>"),
        "calibration round": (
            reverse("labeling:calibration_round", args=[slug, round_pk]),
            f'<tr data-rater="bob"><td>bob {MARK}</td>',
            '<tr data-rater="alice"><td>alice</td>',
        ),
    }


@pytest.mark.parametrize("removal", ["off the list", "out of the raters group"])
def test_reviewer_pages_mark_the_work_of_a_rater_no_longer_on_the_set(
    removal: str, golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    query, candidates = dual_graded(golden_set, (alice, [3, 2, 1]), (bob, [3, 2, 0]), external_id="q-1")
    for rater, candidate in ((alice, candidates[0]), (bob, candidates[1])):
        judgment = Assignment.objects.get(query=query, rater=rater).judgments.get(document=candidate.document)
        LabelProposal.objects.create(
            query=query,
            document=candidate.document,
            judgment=judgment,
            rater=rater,
            from_grade=0,
            to_grade=judgment.grade,
        )
    pooled = factories.pooled_query(golden_set, 2, external_id="q-2")
    round_ = services.calibration_round_start(
        golden_set=golden_set, name="r1", queries=[pooled], raters=[alice, bob], by=rita
    )
    pages = _pages(golden_set, query, round_.pk)
    client = Client()
    client.force_login(rita)
    for name, (url, _, alices) in pages.items():
        html = client.get(url).content.decode()
        assert MARK not in html and alices in html, name

    _remove(removal, golden_set, bob)

    for name, (url, bobs, alices) in pages.items():
        response = client.get(url)
        html = response.content.decode()
        assert response.status_code == 200 and bobs in html and alices in html, name
    # His work still counts in the figures.
    agreement = client.get(pages["agreement"][0]).content.decode()
    assert "6 current grades on the active queries from 2 raters" in agreement

    golden_set.raters.add(bob)
    bob.groups.add(Group.objects.get(name=RATERS))
    for name, (url, _, _) in pages.items():
        assert MARK not in client.get(url).content.decode(), name


def _remove(removal: str, golden_set: GoldenSet, user: User) -> None:
    if removal == "off the list":
        golden_set.raters.remove(user)
    else:
        user.groups.remove(Group.objects.get(name=RATERS))


@pytest.mark.parametrize("removal", ["off the list", "out of the raters group"])
def test_new_work_goes_only_to_those_who_rate_the_set_now(
    removal: str, golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    """Assigning, reassigning and a calibration round read the same rule as the rater's pages: work given
    to bob after his removal would wait where he cannot open it."""
    queries = [factories.pooled_query(golden_set, 2, external_id=f"q-{n}") for n in range(4)]
    _remove(removal, golden_set, bob)
    client = Client()
    client.force_login(rita)
    page = client.get(reverse("labeling:set_detail", args=[golden_set.slug])).content.decode()
    assert "Assign unassigned queries to 1 rater<" in page

    services.assignments_create(golden_set=golden_set)

    assert not Assignment.objects.filter(rater=bob).exists()
    assert Assignment.objects.filter(rater=alice, kind="primary").count() == len(queries)
    page = client.get(reverse("labeling:set_detail", args=[golden_set.slug])).content.decode()
    assert f'<option value="{bob.pk}">' not in page
    held = Assignment.objects.filter(rater=alice).first()
    assert held is not None
    refused = client.post(reverse("labeling:reassign", args=[held.pk]), {"rater": bob.pk})
    assert refused.status_code == 400
    assert error_summary(refused).entries == [
        ("Reassign to: choose one of the golden set's other raters", f"reassign-{held.pk}-rater")
    ]
    assert Assignment.objects.get(pk=held.pk).status == Assignment.Status.OPEN
    with pytest.raises(services.CalibrationError) as error:
        services.calibration_round_start(
            golden_set=golden_set, name="r1", queries=queries[:1], raters=[alice, bob], by=rita
        )
    assert "raters: bob is not a rater of golden set help-center" in error.value.problems
