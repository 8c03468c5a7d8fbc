"""The one list helper (labeling.lists) every long list uses: search, filters, sort and pages read from the
URL, on plain rows and on QuerySets alike, and links that keep the other parameters; then the set page and
the review queue, whose links keep their state."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.db.models import Q
from django.test import Client, RequestFactory
from django.urls import reverse

from labeling.lists import (
    NONE,
    Filter,
    ListSpec,
    Sort,
    choices_of,
    contains,
    equals,
    list_page,
    ordered,
    where,
)
from labeling.models import GoldenSet, Query
from tests import factories
from tests.support.disputes import dual_graded


@dataclass
class Row:
    id: str
    text: str
    stratum: str
    score: float | None


ROWS = [
    Row(f"q-{i:02d}", f"refund {i}" if i % 3 == 0 else f"login {i}", "billing" if i % 2 else "", i / 10)
    for i in range(1, 26)
]
ROWS.append(Row("q-99", "no score", "billing", None))

SPEC = ListSpec(
    noun="queries",
    search=contains("id", "text"),
    filters=[
        Filter("stratum", "Stratum", choices_of((r.stratum for r in ROWS), "(none)"), equals("stratum"))
    ],
    sorts=[Sort("id", "id", ordered("id")), Sort("score", "best first", ordered("-score", "id"))],
    per_page=10,
    anchor="queries",
)


def _page(query: str, items: Any = ROWS, spec: ListSpec = SPEC) -> Any:
    return list_page(RequestFactory().get(f"/x/?{query}"), items, spec)


def _params(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_a_plain_list_is_searched_filtered_sorted_and_paged() -> None:
    page = _page("q=refund&stratum=billing&sort=score")
    assert [r.id for r in page.items] == ["q-21", "q-15", "q-09", "q-03"]  # odd ids, every third, best first
    assert page.summary == "4 queries (of 26)" and page.active
    page = _page("stratum=" + NONE)
    assert all(r.stratum == "" for r in page.items) and page.page.paginator.count == 12
    page = _page("sort=score&page=3")
    assert [r.id for r in page.items] == ["q-05", "q-04", "q-03", "q-02", "q-01", "q-99"]  # no score: last
    assert page.summary == "21–26 of 26 queries"


def test_every_word_of_a_search_must_match_somewhere_case_blind() -> None:
    assert [r.id for r in _page("q=REFUND+q-1").items] == ["q-12", "q-15", "q-18"]


def test_unknown_filter_values_sorts_and_pages_fall_back_to_the_defaults() -> None:
    page = _page("stratum=nope&sort=nope&page=nope")
    assert page.sort == "id" and page.filters[0].value == "" and page.page.number == 1
    assert _page("page=99").page.number == 3  # past the end: the last page


def test_links_keep_the_search_filters_sort_and_the_pages_other_parameters() -> None:
    page = _page("a=1&b=2&q=login&stratum=billing&sort=score&page=2")
    nxt = _page("a=1&b=2&q=login&sort=score")
    assert nxt.next_url.endswith("#queries")
    assert _params(nxt.next_url) == {"a": ["1"], "b": ["2"], "q": ["login"], "sort": ["score"], "page": ["2"]}
    assert _params(_page("a=1&q=login&page=2").previous_url) == {
        "a": ["1"],
        "q": ["login"],
    }  # page 1: no number
    assert _params(_page("a=1&q=login&stratum=billing").clear_url) == {"a": ["1"]}
    assert page.hidden == [("a", "1"), ("b", "2")]  # what its form carries along


def test_a_page_with_two_lists_keeps_each_ones_state_apart() -> None:
    other = ListSpec(noun="documents", search=contains("id"), sorts=SPEC.sorts, per_page=5, prefix="r-")
    request = RequestFactory().get("/x/?q=refund&r-q=q-1&r-page=2")
    first, second = list_page(request, ROWS, SPEC), list_page(request, ROWS, other)
    assert first.q == "refund" and second.q == "q-1" and second.page.number == 2
    assert ("r-q", "q-1") in first.hidden and ("q", "refund") in second.hidden
    assert _params(second.previous_url) == {"q": ["refund"], "r-q": ["q-1"]}


def test_the_page_links_show_the_first_the_last_and_the_neighbours() -> None:
    rows = [Row(f"q-{i:03d}", "", "", None) for i in range(200)]
    page = _page("page=10", rows)
    assert [n for n, _ in page.pages] == [1, None, 8, 9, 10, 11, 12, None, 20]


@pytest.mark.django_db
def test_the_same_spec_filters_and_sorts_a_queryset_in_the_database(golden_set: GoldenSet) -> None:
    for i in range(12):
        factories.QueryFactory.create(
            golden_set=golden_set,
            external_id=f"q-{i:02d}",
            text=f"text {i}",
            stratum="billing" if i % 2 else "",
        )
    spec = ListSpec(
        noun="queries",
        search=contains("external_id", "text"),
        filters=[
            Filter("stratum", "Stratum", choices_of(["billing", ""], "(none)"), equals("stratum")),
            Filter(
                "even", "Even", [("yes", "yes")], where(lookup=lambda v: Q(external_id__regex=r"[02468]$"))
            ),
        ],
        sorts=[Sort("id", "id", ordered("-external_id"))],
        per_page=4,
    )
    page = _page("stratum=billing&q=text", Query.objects.all(), spec)
    assert [q.external_id for q in page.items] == ["q-11", "q-09", "q-07", "q-05"]
    assert page.page.paginator.count == 6 and page.total == 12
    assert [q.external_id for q in _page("stratum=-", Query.objects.all(), spec).items] == [
        "q-10",
        "q-08",
        "q-06",
        "q-04",
    ]


# --- the set page and the review queue ------------------------------------------------------------------


def _links(html: str) -> list[str]:
    return [href.replace("&amp;", "&") for href in re.findall(r'<a href="(\?[^"]*)"', html)]


@pytest.mark.django_db
def test_the_set_page_filters_sorts_and_pages_its_queries_keeping_the_state_in_links(
    golden_set: GoldenSet, client: Client, rita: User
) -> None:
    for i in range(60):
        factories.QueryFactory.create(
            golden_set=golden_set,
            external_id=f"q-{i:03d}",
            text=f"refund {i}" if i % 2 else f"login {i}",
            tier="shadow" if i % 3 == 0 else "core",
            stratum="billing",
        )
    client.force_login(rita)
    url = reverse("labeling:set_detail", args=[golden_set.slug])
    page = client.get(url, {"tier": "core", "q": "refund"})
    html = page.content.decode()
    shown = re.findall(r">(q-\d{3})</a>", html)
    assert len(shown) == 20 and all(int(q[2:]) % 2 == 1 and int(q[2:]) % 3 != 0 for q in shown)
    assert "20 queries (of 60)" in html
    assert '<option value="core" selected>' in html and 'name="q" value="refund"' in html

    page = client.get(url, {"sort": "new"})
    html = page.content.decode()
    assert re.findall(r">(q-\d{3})</a>", html)[:2] == ["q-059", "q-058"]
    assert "1–50 of 60 queries" in html
    (next_page,) = {link for link in _links(html) if "page=2" in link}
    assert _params(next_page) == {"sort": ["new"], "page": ["2"]}
    second = client.get(url + next_page.split("#")[0]).content.decode()
    assert re.findall(r">(q-\d{3})</a>", second) == [f"q-{i:03d}" for i in range(9, -1, -1)]
    assert '<option value="new" selected>' in second


@pytest.mark.django_db
def test_the_review_queue_keeps_each_lists_state_apart(
    golden_set: GoldenSet, client: Client, alice: User, bob: User, rita: User
) -> None:
    for n in range(3):
        dual_graded(golden_set, (alice, [0, 2]), (bob, [3, 2]), external_id=f"q-{n}")
    client.force_login(rita)
    url = reverse("labeling:disputes", args=[golden_set.slug])
    html = client.get(url, {"r-q": "q-1", "s-sort": "text"}).content.decode()
    needs = html[html.index('id="needs-reviewer"') : html.index('id="awaiting-third"')]
    assert re.findall(r'<tr data-query="(q-\d)"', needs) == ["q-1"]
    disputed = html[html.index('id="disputed-queries"') : html.index('id="needs-reviewer"')]
    assert re.findall(r'<tr data-query="(q-\d)"', disputed) == ["q-0", "q-1", "q-2"]  # not narrowed
    # Each form carries the other lists' parameters, and its own as fields.
    form = needs[needs.index("<form") : needs.index("</form>")]
    assert 'name="s-sort" value="text"' in form and 'name="r-q" value="q-1"' in form
    assert 'action="#needs-reviewer"' in form
    # Every search form and page list is a landmark of its own name.
    landmarks = re.findall(r'(?:role="search"|class="pager") aria-label="([^"]+)"', html)
    assert len(landmarks) == len(set(landmarks)) == 7, landmarks  # no form for the empty list
