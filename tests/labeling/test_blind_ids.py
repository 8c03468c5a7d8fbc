"""Ids that say nothing: whatever the grading page and its endpoints show of a candidate, and the order
they show candidates in, carries no trace of the systems' ranking (docs/labeling.md, "Ids that say
nothing").

Pools are imported as the demo's are (`pool_import_rankings`: one system's ranked ids per query), which
creates the candidates in ranking order, so a database id sorted gives the ranks back exactly. The tests
collect every value a rater can see per candidate (the page's attributes that differ between candidates,
the save's echo, the saved grades' keys, the done reply's and the done page's overturns), sort them and
check them against the imported ranks over many queries.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from html.parser import HTMLParser
from itertools import combinations
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling import services
from labeling.models import Assignment, Candidate, GoldenSet, Judgment, Query
from tests import factories

QUERIES = 20
DOCS = 6  # per query: a given order matches the ranking by chance 1 time in 720


def _kendall(order: list[int]) -> float:
    """Kendall's tau between `order` (ranks in the order shown) and the ranks sorted (no ties)."""
    pairs = list(combinations(order, 2))
    concordant = sum(1 for a, b in pairs if a < b)
    return (2 * concordant - len(pairs)) / len(pairs)


class _CandidateAttributes(HTMLParser):
    """Every attribute value inside each `<li class="candidate">` (the item and all its descendants), and
    the overturns' items on a done page, in the page's order."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[list[str]] = []
        self.overturns: list[list[str]] = []
        self._open: list[str] | None = None
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = [v for _, v in attrs if v is not None]
        classes = dict(attrs).get("class") or ""
        if self._open is None and tag == "li" and classes.split()[:1] in (["candidate"], ["overturn"]):
            self._open = []
            (self.items if classes.startswith("candidate") else self.overturns).append(self._open)
            self._depth = 0
        if self._open is not None:
            self._open.extend(values)
            if tag not in ("input", "br", "img"):
                self._depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self._open is not None:
            self._depth -= 1
            if self._depth == 0:
                self._open = None


def _identifiers(groups: list[list[str]]) -> list[str]:
    """Per item, the one identifier it carries: the attribute values no other item has (ids, labels'
    targets, data attributes), each with its `c-` / `t-` / ... prefix taken off. Every item must carry
    exactly one: two would be two channels to check, not one."""
    seen: dict[str, int] = defaultdict(int)
    for values in groups:
        for value in set(values):
            seen[value] += 1
    out = []
    for values in groups:
        own = {re.sub(r"^[a-z]+-", "", v) for v in values if seen[v] == 1}
        assert len(own) == 1, own
        out.append(own.pop())
    return out


@pytest.fixture
def scene(golden_set: GoldenSet, alice: User, bob: User) -> dict[str, Any]:
    """QUERIES queries, each pooled from one system's known ranking of DOCS documents (created in a
    shuffled order, so only the pool import orders them), a frozen label on each document, alice's
    assignment on each and bob's on the first."""
    rng = random.Random(20261204)
    ranked: dict[str, list[str]] = {}
    for q in range(QUERIES):
        query = factories.QueryFactory.create(golden_set=golden_set, external_id=f"b-{q:02d}")
        names = [f"b{q:02d}-doc-{i}" for i in range(DOCS)]
        for name in rng.sample(names, len(names)):
            factories.DocumentFactory.create(golden_set=golden_set, doc_id=name)
        ranked[query.external_id] = rng.sample(names, len(names))
    report = services.pool_import_rankings(golden_set=golden_set, rankings=ranked, system="bm25")
    assert report.ok, report
    rank_of: dict[int, int] = {}  # candidate pk -> the system's rank
    assignments = []
    for query in Query.objects.filter(golden_set=golden_set).order_by("external_id"):
        for c in query.candidates.select_related("document"):
            rank_of[c.pk] = ranked[query.external_id].index(c.document.doc_id) + 1
            factories.FrozenLabelFactory.create(query=query, document=c.document, grade=3)
        assignments.append(factories.AssignmentFactory.create(query=query, rater=alice))
    # The leak this guards against: by id, every pool is in the system's order.
    for a in assignments:
        by_id = [rank_of[pk] for pk in a.query.candidates.order_by("pk").values_list("pk", flat=True)]
        assert by_id == sorted(by_id)
    bobs = factories.AssignmentFactory.create(query=assignments[0].query, rater=bob, kind="second")
    return {"assignments": assignments, "rank_of": rank_of, "bobs": bobs}


def _post(client: Client, assignment: Assignment, body: Any) -> Any:
    return client.post(
        reverse("labeling:grades", args=[assignment.pk]),
        data=json.dumps(body),
        content_type="application/json",
    )


def _exposed(client: Client, assignment: Assignment) -> dict[str, list[str]]:
    """Everything the rater's page and endpoints name the assignment's candidates by, per channel, in the
    order each channel gives them; grades every document 0 (each overturns its frozen 3) and marks the
    query done on the way."""
    page_url = reverse("labeling:grade", args=[assignment.pk])
    parsed = _CandidateAttributes()
    parsed.feed(client.get(page_url).content.decode())
    shown = _identifiers(parsed.items)
    echoed = []
    for token in shown:
        saved = _post(client, assignment, {"candidate": token, "grade": 0})
        assert saved.status_code == 200, saved.content
        echoed.append(saved.json()["candidate"])
    grades = client.get(reverse("labeling:grades", args=[assignment.pk])).json()
    done = client.post(reverse("labeling:done", args=[assignment.pk]))
    assert done.status_code == 200, done.content
    after = _CandidateAttributes()
    after.feed(client.get(page_url).content.decode())
    return {
        "page order": shown,
        "save replies": echoed,
        "saved grades' keys": list(grades["grades"]),
        "done reply's overturns": [o["candidate"] for o in done.json()["overturns"]],
        "done page's overturns": _identifiers(after.overturns),
        "done page's items": _identifiers(after.items),
    }


def test_nothing_a_rater_sees_of_a_candidate_sorts_into_the_systems_ranking(
    scene: dict[str, Any], client: Client, alice: User
) -> None:
    client.force_login(alice)
    rank_of: dict[int, int] = scene["rank_of"]
    taus: dict[str, list[float]] = defaultdict(list)
    identical: dict[str, int] = defaultdict(int)
    for assignment in scene["assignments"]:
        by_token = {factories.token(assignment, c): c.pk for c in assignment.query.candidates.all()}
        channels = _exposed(client, assignment)
        pks = {str(pk) for pk in by_token.values()}
        for channel, values in channels.items():
            assert sorted(values) == sorted(by_token), channel  # every candidate, by its token only
            assert not pks & set(values), channel
            ranks_sorted = [rank_of[by_token[v]] for v in sorted(values)]
            ranks_given = [rank_of[by_token[v]] for v in values]
            for name, ranks in ((f"{channel}, sorted", ranks_sorted), (f"{channel}, as given", ranks_given)):
                taus[name].append(_kendall(ranks))
                identical[name] += ranks == sorted(ranks)
    # By id, each of these was 1.0 on every query. At random the mean of 20 taus of 6 items has a standard
    # deviation near 0.08: 0.35 is past four of them. The exact ranking turns up 1 time in 720 per query.
    for name, per_query in taus.items():
        mean = sum(per_query) / len(per_query)
        assert abs(mean) < 0.35, (name, mean, per_query)
        assert identical[name] <= 1, (name, identical[name])


def test_a_token_is_the_raters_own_and_says_nothing_to_another_rater(
    scene: dict[str, Any], alice: User, bob: User
) -> None:
    mine, bobs = scene["assignments"][0], scene["bobs"]
    for candidate in mine.query.candidates.all():
        assert factories.token(mine, candidate) != factories.token(bobs, candidate)
    mine_order = [c.pk for c in _order_on_page(alice, mine)]
    bobs_order = [c.pk for c in _order_on_page(bob, bobs)]
    assert sorted(mine_order) == sorted(bobs_order) and mine_order != bobs_order


def _order_on_page(user: User, assignment: Assignment) -> list[Candidate]:
    client = Client()
    client.force_login(user)
    body = client.get(reverse("labeling:grade", args=[assignment.pk])).content.decode()
    by_token = factories.tokens(assignment)
    return [by_token[t] for t in re.findall(r'data-candidate="([^"]*)"', body)]


def test_another_raters_or_assignments_token_is_refused_as_a_made_up_one(
    scene: dict[str, Any], golden_set: GoldenSet, client: Client, alice: User
) -> None:
    """Every token that names no candidate of this assignment answers byte for byte the same, whoever's it
    is: a rater who tries keys learns nothing from the answers, and nothing is written."""
    mine, other, bobs = scene["assignments"][0], scene["assignments"][1], scene["bobs"]
    candidate = mine.query.candidates.order_by("pk").first()
    assert candidate is not None
    # A scoped assignment of alice's: a pool candidate outside its scope has a token too.
    scoped_query = factories.pooled_query(golden_set, 3)
    scoped = factories.AssignmentFactory.create(query=scoped_query, rater=alice, kind="third")
    inside, outside = list(scoped_query.candidates.order_by("pk"))[:2]
    scoped.scope.add(inside)
    tried = {
        "made up": "0123456789abcdef",
        "another rater's, same candidate": factories.token(bobs, candidate),
        "alice's, another assignment": factories.token(other, other.query.candidates.first() or candidate),
        "alice's, another assignment, same document id": factories.token(other, candidate),
        "the candidate's database id": str(candidate.pk),
        "the id with the page's prefix": f"c-{candidate.pk}",
        "empty": "",
        "a token too long": factories.token(mine, candidate) + "0",
        "upper case": factories.token(mine, candidate).upper(),
    }
    client.force_login(alice)
    answers = {}
    for name, token in tried.items():
        response = _post(client, mine, {"candidate": token, "grade": 1})
        answers[name] = (response.status_code, response.content)
    out_of_scope = _post(client, scoped, {"candidate": factories.token(scoped, outside), "grade": 1})
    answers["outside the assignment's scope"] = (out_of_scope.status_code, out_of_scope.content)
    expected = (404, json.dumps({"error": "not_found", "message": services.NOT_IN_ASSIGNMENT}).encode())
    assert {name: answer for name, answer in answers.items() if answer != expected} == {}
    assert not Judgment.objects.exists()
    # The page's own token saves.
    assert _post(client, mine, {"candidate": factories.token(mine, candidate), "grade": 1}).status_code == 200
    in_scope = _post(client, scoped, {"candidate": factories.token(scoped, inside), "grade": 1})
    assert in_scope.status_code == 200
