"""A page's small forms refused where they stand (labeling/inline_forms.py): the post answers with the page
it was sent from (400), the error beside that form's field (inside the form, the field marked invalid and
described by it), the summary at the top linking to the field, what was typed kept, nothing written; the
page's other forms as they were. Done, the post still redirects (303) with its message."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling import services
from labeling.models import (
    Adjudication,
    Assignment,
    Document,
    GoldenSet,
    GoldItem,
    Judge,
    JudgeJob,
    JudgeQualification,
    LabelProposal,
    Query,
    TierMove,
)
from labeling.services import judges
from tests import factories
from tests.support.forms import error_summary, read_forms
from tests.support.judge_stub import judge_settings

pytestmark = pytest.mark.django_db


@dataclass
class Scene:
    golden_set: GoldenSet
    query: Query  # in shadow, five documents graded by alice, two of them proposals
    documents: list[Document]
    proposal: LabelProposal
    judge: Judge
    qualification: JudgeQualification  # active
    assignment: Assignment  # alice's, done

    def url(self, name: str, *args: Any) -> str:
        return reverse(f"labeling:{name}", args=[self.golden_set.slug, *args])

    def written(self) -> tuple[Any, ...]:
        """Everything these forms could write."""
        query = Query.objects.get(pk=self.query.pk)
        return (
            Adjudication.objects.count(),
            TierMove.objects.count(),
            (query.tier, query.status),
            GoldItem.objects.count(),
            sorted(LabelProposal.objects.values_list("status", flat=True)),
            JudgeJob.objects.count(),
            sorted(JudgeQualification.objects.values_list("status", flat=True)),
            sorted(Assignment.objects.values_list("rater__username", "status")),
        )


@pytest.fixture
def scene(golden_set: GoldenSet, assignment: Assignment, alice: User, rita: User) -> Scene:
    query = assignment.query
    candidates = list(query.candidates.order_by("best_rank"))
    factories.FrozenLabelFactory.create(query=query, document=candidates[1].document, grade=0)
    for candidate, grade in zip(candidates, [0, 3, 1, 2, 2], strict=True):
        services.judgment_submit(
            assignment_id=assignment.pk, rater=alice, candidate_id=candidate.pk, grade=grade
        )
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    Query.objects.filter(pk=query.pk).update(tier=Query.Tier.SHADOW)
    judge, _ = judges.judge_save(
        golden_set=golden_set, settings=judge_settings("http://127.0.0.1:9"), by=None, stand_in=True
    )
    qualification = JudgeQualification.objects.create(judge=judge, rationale="agrees", bar=0.6, by=rita)
    return Scene(
        golden_set=golden_set,
        query=query,
        documents=[c.document for c in candidates],
        proposal=LabelProposal.objects.order_by("pk").first(),  # type: ignore[arg-type]
        judge=judge,
        qualification=qualification,
        assignment=assignment,
    )


@dataclass
class Case:
    post: Callable[[Scene], tuple[str, dict[str, Any]]]
    page: Callable[[Scene], str]  # the page it is sent from
    heading: str
    entry: Callable[[Scene], tuple[str, str]]  # the summary's one entry: words, the id it links to
    kept: Callable[[Scene], tuple[str, str]] = lambda s: ("", "")  # an element's id, what it still shows


CASES: dict[str, Case] = {
    "adjudication": Case(
        post=lambda s: (
            s.url("adjudication_add", s.query.pk),
            {"document": s.documents[0].pk, "grade": "7", "rationale": "covers cancelling"},
        ),
        page=lambda s: s.url("adjudicate", s.query.pk),
        heading="Not saved",
        entry=lambda s: ("grade: 7 is outside the scale 0..3", f"adjudication-{s.documents[0].pk}-grade_0"),
        kept=lambda s: (f"adjudication-{s.documents[0].pk}-rationale", "covers cancelling"),
    ),
    "tier move": Case(
        post=lambda s: (s.url("tier_move", s.query.pk), {"tier": "elsewhere", "reason": "too vague"}),
        page=lambda s: s.url("adjudicate", s.query.pk),
        heading="Not moved",
        entry=lambda s: (
            "Move to: Select a valid choice. elsewhere is not one of the available choices.",
            "tier-tier",
        ),
        kept=lambda s: ("tier-reason", "too vague"),
    ),
    "return to core": Case(
        post=lambda s: (s.url("tier_move", s.query.pk), {"tier": "core", "return": "1", "reason": " "}),
        page=lambda s: s.url("adjudicate", s.query.pk),
        heading="Not moved",
        entry=lambda s: ("Why: This field is required.", "tier-core-reason"),
    ),
    "retire": Case(
        post=lambda s: (s.url("retire", s.query.pk), {"reason": ""}),
        page=lambda s: s.url("adjudicate", s.query.pk),
        heading="Not retired",
        entry=lambda s: ("Why: This field is required.", "retire-reason"),
    ),
    "gold item": Case(
        post=lambda s: (s.url("gold", s.query.pk), {"document": s.documents[2].pk, "grade": "9"}),
        page=lambda s: s.url("query_review", s.query.pk),
        heading="Gold item not changed",
        entry=lambda s: ("grade: 9 is outside the scale 0..3", f"gold-{s.documents[2].pk}-grade"),
    ),
    "proposal decision": Case(
        post=lambda s: (
            s.url("proposal_decide", s.proposal.pk),
            {"decision": "accept", "rationale": "x" * 2001},
        ),
        page=lambda s: s.url("proposals"),
        heading="Nothing decided",
        entry=lambda s: (
            "Rationale: Ensure this value has at most 2000 characters (it has 2001).",
            f"proposal-{s.proposal.pk}-rationale",
        ),
        kept=lambda s: (f"proposal-{s.proposal.pk}-rationale", "x" * 2001),
    ),
    "a query's proposals": Case(
        post=lambda s: (s.url("proposals_decide_query", s.query.pk), {"rationale": "the rubric says so"}),
        page=lambda s: s.url("proposals"),
        heading="Nothing decided",
        entry=lambda s: ("press Accept or Reject", f"proposals-{s.query.pk}-rationale"),
        kept=lambda s: (f"proposals-{s.query.pk}-rationale", "the rubric says so"),
    ),
    "judge job": Case(
        post=lambda s: (s.url("judge_job_start", s.judge.pk), {"queries": ["not-an-id"]}),
        page=lambda s: s.url("judge_detail", s.judge.pk),
        heading="Not started",
        entry=lambda s: (
            "Queries: choose one or more of these queries, or every active query of the set",
            "job-queries",
        ),
    ),
    "qualify": Case(
        post=lambda s: (s.url("judge_qualify", s.judge.pk), {"rationale": "it agrees with alice"}),
        page=lambda s: s.url("judge_qualification", s.judge.pk),
        heading="Not qualified",
        entry=lambda s: (
            "not qualified for every stratum and locale: the figures say not enough data (no human-human"
            " kappa to compare with: no human-human pairs)",
            "qualify-strata",
        ),
        kept=lambda s: ("qualify-rationale", "it agrees with alice"),
    ),
    "withdraw": Case(
        post=lambda s: (
            s.url("judge_qualification_withdraw", s.judge.pk, s.qualification.pk),
            {"reason": " "},
        ),
        page=lambda s: s.url("judge_qualification", s.judge.pk),
        heading="Not withdrawn",
        entry=lambda s: ("Reason: This field is required.", f"withdraw-{s.qualification.pk}-reason"),
    ),
    "reassign": Case(
        post=lambda s: (
            reverse("labeling:reassign", args=[s.assignment.pk]),
            {"rater": s.assignment.rater_id},
        ),
        page=lambda s: reverse("labeling:set_detail", args=[s.golden_set.slug]),
        heading="Not reassigned",
        entry=lambda s: (
            "Reassign to: choose one of the golden set's other raters",
            f"reassign-{s.assignment.pk}-rater",
        ),
    ),
}


def _shown(html: str, element_id: str) -> str:
    """What a text field shows: a textarea's text, an input's value."""
    found = re.search(rf'<(textarea|input)\b[^>]*\bid="{re.escape(element_id)}"[^>]*>', html)
    assert found, element_id
    if found.group(1) == "input":
        value = re.search(r'\bvalue="([^"]*)"', found.group(0))
        return value.group(1) if value else ""
    return html[found.end() : html.index("</textarea>", found.end())].strip()


def _words_of(html: str, element_id: str) -> str:
    """The words of a `div` (an error beside its field), tags left out."""
    start = html.index(f'id="{element_id}"')
    inner = html[html.index(">", start) + 1 : html.index("</div>", start)]
    return unescape(" ".join(re.sub(r"<[^>]+>", " ", inner).split()))


@pytest.mark.parametrize("name", CASES)
def test_a_refused_small_form_answers_with_its_page_and_the_error_beside_it(
    name: str, scene: Scene, rita: User, client: Client
) -> None:
    case = CASES[name]
    client.force_login(rita)
    url, data = case.post(scene)
    before = scene.written()

    response = client.post(url, data)

    assert response.status_code == 400
    assert scene.written() == before  # nothing written
    summary = error_summary(response)  # one, at the top, each link to an element of the page
    assert summary.heading == f"{case.heading}: 1 problem to fix"
    text, anchor = case.entry(scene)
    assert summary.entries == [(text, anchor)]
    page = read_forms(response)
    assert page.repeated == []
    # The field linked to is in the form that was sent; its error is in that form too, the only one on the
    # page, and describes the field (or the fieldset of its choices), marked invalid.
    action = page.form_of[anchor]
    assert action.split("?")[0] == url
    [error] = [i for i in page.ids if i.endswith("_error")]
    assert page.form_of[error] == action
    assert text.endswith(_words_of(response.content.decode(), error))  # the summary's words, beside
    [(tag, described)] = [
        (tag, attrs) for tag, attrs in page.ids.values() if error in attrs.get("aria-describedby", "").split()
    ]
    assert page.form_of[described["id"]] == action
    assert tag == "fieldset" or described.get("aria-invalid") == "true"
    assert anchor in (described["id"], f"{described['id']}_0")
    element, typed = case.kept(scene)
    if element:
        assert page.form_of[element] == action
        assert _shown(response.content.decode(), element) == typed
    # The page it was sent from, with the same forms, but none marked.
    shown = client.get(case.page(scene))
    assert shown.status_code == 200
    again = read_forms(shown)
    assert not again.summaries and again.repeated == []
    assert anchor in again.ids and "aria-invalid" not in again.ids[anchor][1]


def test_a_done_small_form_still_redirects_with_its_message_keeping_the_list_page(
    scene: Scene, rita: User, bob: User, client: Client
) -> None:
    client.force_login(rita)
    url = reverse("labeling:reassign", args=[scene.assignment.pk]) + "?sort=text&page=1"

    refused = client.post(url, {"rater": scene.assignment.rater_id})
    action = read_forms(refused).form_of[f"reassign-{scene.assignment.pk}-rater"]
    assert action == url  # the page's list state, kept in the form's address
    done = client.post(url, {"rater": bob.pk})

    assert done.status_code == 303
    assert (
        done["Location"] == reverse("labeling:set_detail", args=[scene.golden_set.slug]) + "?sort=text&page=1"
    )
    assert Assignment.objects.get(pk=scene.assignment.pk).status == Assignment.Status.REASSIGNED
    page = client.get(done["Location"]).content.decode()
    assert "Query q-0471 now goes to bob." in page and "data-error-summary" not in page
