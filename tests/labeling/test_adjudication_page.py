"""The adjudication page as a reviewer works it: the disputed documents first and open, the agreed ones
folded; the verdict, "Return to core" and the tier move at the top, before any document; after a decision
the page comes back at its top (no anchor), and "Next dispute" leads through the review queue."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling.models import Candidate, GoldenSet, Query
from tests import factories
from tests.support.disputes import dual_graded

pytestmark = pytest.mark.django_db


@dataclass
class Disputed:
    query: Query
    candidates: list[Candidate]


def _disputed_query(golden_set: GoldenSet, alice: User, bob: User, external_id: str, n: int = 6) -> Disputed:
    """alice and bob agree on every document but the first two (0 vs 3, then 1 vs 2): the check quarantines
    the query, and with no third rater the reviewer decides both."""
    query, candidates = dual_graded(
        golden_set, (alice, [0, 1] + [2] * (n - 2)), (bob, [3, 2] + [2] * (n - 2)), external_id=external_id
    )
    assert query.tier == "shadow"
    return Disputed(query, candidates)


@pytest.fixture
def reviewer(client: Client, rita: User) -> Client:
    client.force_login(rita)
    return client


def _url(golden_set: GoldenSet, query: Query) -> str:
    return reverse("labeling:adjudicate", args=[golden_set.slug, query.pk])


def _found(pattern: str, html: str) -> str:
    match = re.search(pattern, html)
    assert match is not None, pattern
    return match.group(1)


def _article_docs(html: str) -> list[str]:
    return re.findall(r'<article class="card adjudication[^"]*" id="d-\d+" data-doc="([^"]+)"', html)


def test_the_disputed_documents_come_first_and_the_agreed_ones_are_folded(
    golden_set: GoldenSet, alice: User, bob: User, reviewer: Client
) -> None:
    disputed = _disputed_query(golden_set, alice, bob, "q-1")
    html = reviewer.get(_url(golden_set, disputed.query)).content.decode()
    docs = [c.document.doc_id for c in disputed.candidates]
    start = html.index('<details class="agreed"')
    folded = html[start : html.index("</section>", start)]
    before = html[:start]
    assert _article_docs(before) == sorted(docs[:2])  # both await the reviewer: by document id
    assert sorted(_article_docs(folded)) == sorted(docs[2:])
    assert "4 documents the raters agree on" in folded


def test_the_verdict_and_the_tier_move_sit_at_the_top_before_the_documents(
    golden_set: GoldenSet, alice: User, bob: User, reviewer: Client
) -> None:
    disputed = _disputed_query(golden_set, alice, bob, "q-1")
    html = reviewer.get(_url(golden_set, disputed.query)).content.decode()
    documents = html.index('id="documents"')
    for marker in ('id="verdict"', 'id="return-to-core"', 'id="move-tier"', "Return to core</button>"):
        assert html.index(marker) < documents, marker
    verdict = re.sub(r"<[^>]+>|\s+", " ", html[html.index('id="verdict"') : html.index('id="tier"')])
    assert "Disputed" in verdict and "hard disagreement and relevance flip" in verdict
    assert "2 documents left for a reviewer to decide." in re.sub(r"\s+", " ", verdict)
    assert len(set(re.findall(r' id="([^"]+)"', html))) == len(re.findall(r' id="([^"]+)"', html))  # unique


def test_after_a_decision_the_page_comes_back_at_its_top_with_the_next_dispute(
    golden_set: GoldenSet, alice: User, bob: User, reviewer: Client
) -> None:
    first = _disputed_query(golden_set, alice, bob, "q-1")
    second = _disputed_query(golden_set, alice, bob, "q-2")
    url = reverse("labeling:adjudication_add", args=[golden_set.slug, first.query.pk])
    for candidate in first.candidates[:2]:
        done = reviewer.post(url, {"document": candidate.document_id, "grade": 2, "rationale": "fits"})
        assert done.status_code == 303 and done["Location"] == _url(golden_set, first.query)  # no "#d-..."
    page = reviewer.get(done["Location"]).content.decode()
    text = re.sub(r"<[^>]+>|\s+", " ", page)
    assert f"{first.candidates[1].document.doc_id}: final grade 2 (adjudicated)." in text
    assert (
        "Nothing left for a reviewer to decide here: return it to core, or go on to the next dispute" in text
    )
    assert f'id="next-dispute" href="{_url(golden_set, second.query)}"' in page
    assert page.index('class="messages"') < page.index('id="verdict"')


def test_next_dispute_goes_round_the_queue_and_says_when_there_is_no_other(
    golden_set: GoldenSet, alice: User, bob: User, reviewer: Client
) -> None:
    first = _disputed_query(golden_set, alice, bob, "q-1")
    page = reviewer.get(_url(golden_set, first.query)).content.decode()
    assert "No other disputed query." in page
    second = _disputed_query(golden_set, alice, bob, "q-2")
    third = _disputed_query(golden_set, alice, bob, "q-3")
    nexts = {}
    for d in (first, second, third):
        html = reviewer.get(_url(golden_set, d.query)).content.decode()
        nexts[d.query.external_id] = _found(r'id="next-dispute" href="[^"]*/queries/(\d+)/', html)
    assert nexts == {"q-1": str(second.query.pk), "q-2": str(third.query.pk), "q-3": str(first.query.pk)}


def test_the_documents_are_filtered_and_paged_with_the_state_in_the_links(
    golden_set: GoldenSet, alice: User, bob: User, reviewer: Client
) -> None:
    disputed = _disputed_query(golden_set, alice, bob, "q-1", n=24)
    url = _url(golden_set, disputed.query)
    html = reviewer.get(url, {"state": "agreed"}).content.decode()
    assert len(_article_docs(html)) == 20 and "1–20 of 22 documents (of 24)" in html
    link = _found(r'<a href="(\?[^"]*page=2[^"]*)" rel="next"', html).replace("&amp;", "&")
    assert link.startswith("?state=agreed&page=2")
    assert len(_article_docs(reviewer.get(url + link.split("#")[0]).content.decode())) == 2
    decide = reviewer.get(url, {"state": "decide"}).content.decode()
    assert sorted(_article_docs(decide)) == sorted(c.document.doc_id for c in disputed.candidates[:2])
    assert "rank" not in decide.lower()  # the page never hints at the systems' ranks


def test_the_queue_read_from_the_disagreements_alone_is_the_whole_sets_queue(
    golden_set: GoldenSet, alice: User, bob: User
) -> None:
    """The review queue and "Next dispute" consolidate only the documents two raters graded apart; the
    queue is the one the whole set's consolidation gives (single-labeled, agreeing and disagreeing work)."""
    from labeling.selectors import dispute_next, labels_consolidated, review_queue_get

    first = _disputed_query(golden_set, alice, bob, "q-1")
    dual_graded(golden_set, (alice, [2, 2, 1]), (bob, [2, 2, 1]), external_id="q-2")  # agreeing
    dual_graded(golden_set, (alice, [2, 1, 1]), (bob, [2, 2, 1]), external_id="q-3")  # one apart, one doc
    single = factories.pooled_query(golden_set, 3, external_id="q-4")
    factories.AssignmentFactory.create(query=single, rater=alice)
    quick = review_queue_get(golden_set=golden_set)
    whole = review_queue_get(golden_set=golden_set, consolidated=labels_consolidated(golden_set=golden_set))
    for field in ("disputed", "needs_reviewer", "awaiting_third", "shadow"):
        assert getattr(quick, field) == getattr(whole, field), field
    assert [d.query.external_id for d in quick.disputed] == ["q-1", "q-3"]
    assert dispute_next(golden_set=golden_set, after=first.query) == Query.objects.get(external_id="q-3")
