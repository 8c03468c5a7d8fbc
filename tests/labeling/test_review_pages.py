"""The reviewer pages: agreement dashboard, review queue, adjudication page, gold marking, thresholds.

Two raters disagree on a three-document query (alice 0/1/2, bob 2/1/2: a hard disagreement and flip on
the first document), so the dispute check has put it in shadow and, with no third rater in the set, the
document waits for a reviewer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling import services
from labeling.models import (
    Adjudication,
    Assignment,
    Candidate,
    GoldenSet,
    GoldItem,
    Judgment,
    Query,
    TierMove,
)
from labeling.selectors import labels_consolidated
from tests import factories
from tests.support.forms import error_summary

pytestmark = pytest.mark.django_db


@dataclass
class Disputed:
    query: Query
    candidates: list[Candidate]


@pytest.fixture
def disputed(golden_set: GoldenSet, alice: User, bob: User) -> Disputed:
    query = factories.pooled_query(golden_set, 3, external_id="q-7", text="cancel my plan")
    candidates = list(query.candidates.order_by("best_rank"))
    first = factories.AssignmentFactory.create(query=query, rater=alice)
    second = factories.AssignmentFactory.create(query=query, rater=bob, kind="second")
    for assignment, rater, grades, note in (
        (first, alice, [0, 1, 2], "off topic"),
        (second, bob, [2, 1, 2], "explains cancelling"),
    ):
        for candidate, value in zip(candidates, grades, strict=True):
            services.judgment_submit(
                assignment_id=assignment.pk,
                rater=rater,
                candidate_id=candidate.pk,
                grade=value,
                note=note if candidate == candidates[0] else "",
                time_spent_ms=4000,
            )
        services.assignment_done(assignment_id=assignment.pk, rater=rater)
    query.refresh_from_db()
    assert query.tier == "shadow"
    return Disputed(query, candidates)


@pytest.fixture
def reviewer(client: Client, rita: User) -> Client:
    client.force_login(rita)
    return client


def _text(html: bytes) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.decode()))


def _section(html: bytes, element_id: str) -> str:
    body = html.decode()
    start = body.index(f'id="{element_id}"')
    end = body.find("</section>", start)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body[start:end]))


def test_the_queue_lists_the_disputed_query_and_the_document_a_reviewer_decides(
    disputed: Disputed, reviewer: Client, golden_set: GoldenSet
) -> None:
    page = reviewer.get(reverse("labeling:disputes", args=[golden_set.slug]))
    assert page.status_code == 200
    queries = _section(page.content, "disputed-queries")
    assert "q-7" in queries and "shadow" in queries
    assert "hard disagreement and relevance flip on" in queries
    documents = _section(page.content, "needs-reviewer")
    doc = disputed.candidates[0].document
    assert doc.doc_id in documents
    assert "two grades disagree (0 vs 2): no third rater is available, a reviewer decides" in documents
    assert "q-7" in _section(page.content, "shadow")


def test_the_adjudication_page_shows_grades_and_notes_side_by_side_without_systems_or_ranks(
    disputed: Disputed, reviewer: Client, golden_set: GoldenSet
) -> None:
    Candidate.objects.filter(pk=disputed.candidates[0].pk).update(
        provenance=[{"system": "secret-engine-x", "rank": 7}], best_rank=7
    )
    page = reviewer.get(reverse("labeling:adjudicate", args=[golden_set.slug, disputed.query.pk]))
    body = page.content.decode()
    assert "secret-engine-x" not in body and "rank" not in body.lower()
    assert "alice" not in _section(page.content, "documents") and "bob" not in _section(
        page.content, "documents"
    )
    first = disputed.candidates[0].document
    # The document a reviewer must decide comes first, with both grades and both notes.
    articles = re.findall(r'<article class="card adjudication[^"]*" id="d-(\d+)"', body)
    assert articles[0] == str(first.pk)
    row = body[body.index(f'id="d-{first.pk}"') : body.index("</article>", body.index(f'id="d-{first.pk}"'))]
    text = _text(row.encode())
    assert "First rater Second rater Final" in text
    assert "0 “off topic”" in text and "2 “explains cancelling”" in text
    assert "a reviewer decides" in text


def test_a_reviewer_sets_the_final_grade_with_a_rationale_and_the_label_changes(
    disputed: Disputed, reviewer: Client, golden_set: GoldenSet, rita: User
) -> None:
    doc = disputed.candidates[0].document
    url = reverse("labeling:adjudication_add", args=[golden_set.slug, disputed.query.pk])
    refused = reviewer.post(url, {"document": doc.pk, "grade": 2, "rationale": "   "})
    assert refused.status_code == 400 and not Adjudication.objects.exists()
    assert error_summary(refused).entries == [
        ("Rationale: This field is required.", f"adjudication-{doc.pk}-rationale")
    ]

    done = reviewer.post(url, {"document": doc.pk, "grade": 2, "rationale": "it explains how to cancel"})

    assert done.status_code == 303
    adjudication = Adjudication.objects.get()
    assert (adjudication.reviewer, adjudication.grade, adjudication.rationale) == (
        rita,
        2,
        "it explains how to cancel",
    )
    labels = {
        (label.document_id, label.method) for label in labels_consolidated(golden_set=golden_set).labels
    }
    assert (doc.pk, "adjudicated") in labels
    assert sorted(Judgment.objects.filter(document=doc).values_list("grade", flat=True)) == [0, 2]
    page = reviewer.get(reverse("labeling:adjudicate", args=[golden_set.slug, disputed.query.pk]))
    assert "rita set 2: “it explains how to cancel”" in _text(page.content)
    queue = reviewer.get(reverse("labeling:disputes", args=[golden_set.slug]))
    assert doc.doc_id not in _section(queue.content, "needs-reviewer")


def test_a_document_of_another_query_cannot_be_adjudicated_here(
    disputed: Disputed, reviewer: Client, golden_set: GoldenSet
) -> None:
    other = factories.pooled_query(golden_set, 1)
    url = reverse("labeling:adjudication_add", args=[golden_set.slug, disputed.query.pk])
    doc = other.candidates.get().document
    assert reviewer.post(url, {"document": doc.pk, "grade": 1, "rationale": "x"}).status_code == 404
    assert not Adjudication.objects.exists()


def test_returning_a_query_to_core_is_recorded_with_who_and_why(
    disputed: Disputed, reviewer: Client, golden_set: GoldenSet, rita: User
) -> None:
    url = reverse("labeling:tier_move", args=[golden_set.slug, disputed.query.pk])
    response = reviewer.post(url, {"tier": "core", "reason": "the raters read the rubric differently"})
    assert response.status_code == 303
    move = TierMove.objects.filter(by=rita).get()
    assert (move.from_tier, move.to_tier, move.reason) == (
        "shadow",
        "core",
        "the raters read the rubric differently",
    )
    assert Query.objects.get(pk=disputed.query.pk).tier == "core"
    # The document still without a final grade is pointed out: the freeze would stop at it.
    followed = reviewer.get(response["Location"])
    assert "1 of its documents have no final grade yet" in _text(followed.content)
    history = _section(followed.content, "moves")
    assert "rita: shadow → core — the raters read the rubric differently" in history
    assert "the system: core → shadow — disputed:" in history


def test_retiring_a_query_takes_it_out_of_the_consolidated_labels(
    disputed: Disputed, reviewer: Client, golden_set: GoldenSet
) -> None:
    url = reverse("labeling:retire", args=[golden_set.slug, disputed.query.pk])
    assert reviewer.post(url, {"reason": ""}).status_code == 400
    assert Query.objects.get(pk=disputed.query.pk).status == "active"
    assert reviewer.post(url, {"reason": "out of scope"}).status_code == 303
    assert Query.objects.get(pk=disputed.query.pk).status == "retired"
    result = labels_consolidated(golden_set=golden_set)
    assert (result.labels, result.unresolved) == ([], [])


def test_the_dashboard_shows_alpha_kappa_raters_and_disputes_with_charts(
    disputed: Disputed, reviewer: Client, golden_set: GoldenSet
) -> None:
    page = reviewer.get(reverse("labeling:agreement", args=[golden_set.slug]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "nan" not in _text(page.content).lower().split()
    alpha = _section(page.content, "alpha")
    assert "Krippendorff's alpha (ordinal)" in alpha
    # One query only: the value exists, the interval is undefined with its reason (not 0, not NaN).
    assert "interval undefined: one query only: resampling whole queries needs two or more" in alpha
    # One query is too few to read: the reading says so beside the value.
    assert re.search(
        r"\d\.\d{3} not enough data \(1 query with pairable grades; a reading needs &gt;= 10\)", alpha
    )
    kappa = _section(page.content, "kappa")
    assert "alice · bob 3" in kappa
    raters = _section(page.content, "raters")
    assert "alice 3 4.0 s" in raters and "undefined: no gold item rated" in raters
    assert "q-7" in _section(page.content, "disputed")
    # Inline SVG bar charts with their numbers; no chart library.
    assert body.count("<svg") == 3  # all grades, then one per rater
    chart = body[body.index("<svg") : body.index("</svg>")]
    assert re.findall(r'data-label="(\d)" data-value="(\d+)"', chart) == [
        ("0", "1"),
        ("1", "2"),
        ("2", "3"),
        ("3", "0"),
    ]
    assert "<script" not in body.split("</main>")[0].split("<main>")[1]


def test_the_dashboard_says_undefined_when_nothing_was_graded_twice(
    golden_set: GoldenSet, reviewer: Client
) -> None:
    page = reviewer.get(reverse("labeling:agreement", args=[golden_set.slug]))
    alpha = _section(page.content, "alpha")
    assert "undefined: no document has two or more grades" in alpha
    assert "0.000" not in alpha


def test_gold_marking_on_the_query_page_and_agreement_with_gold_on_the_dashboard(
    disputed: Disputed, reviewer: Client, golden_set: GoldenSet
) -> None:
    doc = disputed.candidates[2].document  # both raters gave 2
    url = reverse("labeling:gold", args=[golden_set.slug, disputed.query.pk])
    assert reviewer.post(url, {"document": doc.pk, "grade": 2}).status_code == 303
    assert GoldItem.objects.get().grade == 2
    review = reviewer.get(reverse("labeling:query_review", args=[golden_set.slug, disputed.query.pk]))
    assert "gold 2" in _text(review.content)
    raters = _section(reviewer.get(reverse("labeling:agreement", args=[golden_set.slug])).content, "raters")
    assert raters.count("1.000 · 1.000 (1)") == 2  # alice and bob each match the one gold answer
    assert reviewer.post(url, {"document": doc.pk, "unmark": "on"}).status_code == 303
    assert not GoldItem.objects.exists()


# A row's document and its final label's cell (headed by its column's name on a phone: its data-label).
FINAL_CELL = r'<tr data-doc="([^"]+)">.*?<td class="final"[^>]*>(.*?)</td>'


def test_the_query_page_shows_each_documents_final_label_and_method(
    disputed: Disputed, reviewer: Client, golden_set: GoldenSet
) -> None:
    page = reviewer.get(reverse("labeling:query_review", args=[golden_set.slug, disputed.query.pk]))
    body = page.content.decode()
    finals = {
        doc: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", cell)).strip()
        for doc, cell in re.findall(FINAL_CELL, body, re.S)
    }
    docs = [c.document.doc_id for c in disputed.candidates]
    assert finals[docs[1]] == "1 agreed" and finals[docs[2]] == "2 agreed"
    assert "a reviewer decides" in finals[docs[0]]


def test_thresholds_are_saved_from_the_dashboard_and_bad_ones_named(
    golden_set: GoldenSet, reviewer: Client
) -> None:
    url = reverse("labeling:thresholds", args=[golden_set.slug])
    good = {
        "hard_diff": 3,
        "min_dual_docs": 4,
        "min_exact": 0.6,
        "max_mad": 0.4,
        "reliable_min": 0.8,
        "tentative_min": 0.667,
        "min_pairable_units": 10,
    }
    assert reviewer.post(url, good).status_code == 303
    golden_set.refresh_from_db()
    assert (golden_set.hard_diff, golden_set.min_dual_docs, golden_set.min_exact, golden_set.max_mad) == (
        3,
        4,
        0.6,
        0.4,
    )
    bad = reviewer.post(url, {**good, "min_exact": 1.5})
    assert bad.status_code == 400
    assert error_summary(bad).entries == [
        ("Exact at least: Ensure this value is less than or equal to 1.", "id_min_exact")
    ]
    golden_set.refresh_from_db()
    assert golden_set.min_exact == 0.6


def test_the_set_page_summarises_the_consolidated_labels(
    disputed: Disputed, reviewer: Client, golden_set: GoldenSet
) -> None:
    page = reviewer.get(reverse("labeling:set_detail", args=[golden_set.slug]))
    line = reverse("labeling:labels_summary", args=[golden_set.slug])
    assert f'hx-get="{line}" hx-trigger="load"' in page.content.decode()  # the page loads the line after it
    summary = _text(reviewer.get(line, headers={"HX-Request": "true"}).content)
    assert summary.strip().startswith("Consolidated labels")  # the line alone; without htmx, a page
    assert "Consolidated labels: 2 (agreed 2) · unresolved: 1 (awaiting reviewer 1)" in summary
    assert reverse("golden_io:version_list", args=[golden_set.slug]) in page.content.decode()


def test_a_gold_item_looks_like_any_candidate_to_the_rater(
    disputed: Disputed, golden_set: GoldenSet, rita: User, client: Client
) -> None:
    carol = factories.UserFactory.create(username="carol", groups=["raters"])
    golden_set.raters.add(carol)
    services.gold_mark(query=disputed.query, document=disputed.candidates[1].document, grade=1, by=rita)
    gold = Assignment.objects.get(rater=carol)
    client.force_login(carol)
    for url in (reverse("labeling:grade", args=[gold.pk]), reverse("labeling:queue")):
        body = client.get(url).content.decode().lower()
        assert not re.search(r"\bgold\b|known answer", body)  # ("golden label" is the rubric's wording)
    assert (
        disputed.candidates[1].document.title.lower()
        in client.get(reverse("labeling:grade", args=[gold.pk])).content.decode().lower()
    )
