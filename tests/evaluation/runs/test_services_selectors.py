"""Reads the run pages and the API will call: who sees runs, progress, trends, the side-by-side data of one
query, unjudged documents in the top k (and queueing them for rating), and durable keys in reports."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from evaluation.models import EvaluationRun, SearchTarget
from evaluation.runs.selectors import (
    near_duplicate_titles,
    run_compare_query,
    run_get,
    run_list,
    run_progress,
    run_trend,
    unjudged_in_top_k,
)
from evaluation.runs.services import run_begin, run_create, unjudged_queue
from golden_io.models import GoldenVersion
from labeling.models import Candidate, GoldenSet
from tests import factories
from tests.support.runs import (
    golden_file,
    make_version,
)
from tests.support.stub_server import Reply, StubServer, hits_reply

pytestmark = pytest.mark.django_db


def test_runs_are_seen_by_those_who_review_their_set_whoever_triggered_them(
    finished: Any, rita: User, alice: User, bob: User, charlie: User
) -> None:
    reviewed = finished()
    started_by_charlie = finished(triggered_by=charlie)
    admin = factories.UserFactory.create(username="ada", groups=["admins"])

    assert list(run_list(user=rita)) == [started_by_charlie, reviewed]
    assert list(run_list(user=admin)) == [started_by_charlie, reviewed]
    # Starting a run opens nothing of its own: its ranks and grades are the set's (evaluation.runs.access).
    assert list(run_list(user=charlie)) == []
    # Raters grade blind: run pages name systems and show rankings.
    assert list(run_list(user=alice)) == [] and run_get(user=bob, run_id=reviewed.pk) is None
    assert run_get(user=rita, run_id=reviewed.pk) == reviewed
    assert list(run_list(user=rita, status="queued")) == []
    # Without the reviewer role, a place on the set's list opens nothing; with it back, everything.
    rita.groups.clear()
    assert list(run_list(user=User.objects.get(pk=rita.pk))) == []
    rita.groups.add(Group.objects.get(name="reviewers"))
    assert list(run_list(user=User.objects.get(pk=rita.pk))) == [started_by_charlie, reviewed]


def test_progress_reads_fresh_counts(version: GoldenVersion, target: SearchTarget, rita: User) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)
    assert run_progress(run=run)["percent"] == 0.0
    run_begin(run_id=run.pk)
    EvaluationRun.objects.filter(pk=run.pk).update(done=3, errors=1)

    progress = run_progress(run=run)

    assert (progress["status"], progress["done"], progress["total"], progress["errors"]) == (
        "running",
        3,
        6,
        1,
    )
    assert progress["percent"] == 50.0 and progress["final"] is False


def test_the_trend_lists_finished_runs_oldest_first_with_core_means(
    finished: Any, stub: StubServer, golden_set: GoldenSet, target: SearchTarget
) -> None:
    first = finished()
    stub.default = hits_reply(["d9"])
    second = finished(params={"rewrite": True})

    points = run_trend(target=target, golden_set=golden_set)

    assert [p["run_id"] for p in points] == [first.pk, second.pk]
    assert points[0]["ndcg"] == pytest.approx(first.report["ndcg"]) and points[1]["ndcg"] == 0.0
    assert points[1]["params"] == {"rewrite": True}
    assert points[1]["golden_version"] == "2026-08-01" and points[1]["empty_rate"] == 0.0


def test_side_by_side_shows_both_lists_with_grades_and_rank_changes(finished: Any, stub: StubServer) -> None:
    before = finished()
    stub.on(
        "query 1", Reply(json={"hits": [{"id": "d3", "title": "Returns"}, {"id": "d1", "title": "Refunds"}]})
    )
    after = finished()

    data = run_compare_query(run_a=before, run_b=after, query_id="q-1")

    assert data["query"]["text"] == "query 1" and data["query"]["filters"] == {"product": "billing"}
    assert [(h["doc_id"], h["grade"], h["judged"]) for h in data["a"]["hits"]] == [
        ("d1", 3, True),
        ("d2", 2, True),
        ("d3", None, False),
    ]
    assert [(h["rank"], h["doc_id"], h["title"]) for h in data["b"]["hits"]] == [
        (1, "d3", "Returns"),
        (2, "d1", "Refunds"),
    ]
    moves = {d["doc_id"]: (d["rank_a"], d["rank_b"], d["moved"]) for d in data["documents"]}
    assert moves == {"d1": (1, 2, -1), "d2": (2, None, None), "d3": (3, 1, 2)}
    assert data["a"]["metrics"]["ndcg"] > data["b"]["metrics"]["ndcg"]
    with pytest.raises(KeyError):
        run_compare_query(run_a=before, run_b=after, query_id="q-404")


def test_unjudged_documents_in_the_top_k_are_listed_and_queued_for_rating(
    finished: Any, stub: StubServer, golden_set: GoldenSet, rita: User
) -> None:
    stub.on("query 1", hits_reply(["d1", "d8", "d3", "d8"]))
    stub.on("query 2", Reply(status=500, text="down"))
    run = finished()
    q1 = factories.QueryFactory.create(golden_set=golden_set, external_id="q-1")
    factories.QueryFactory.create(golden_set=golden_set, external_id="q-3")
    d3 = factories.DocumentFactory.create(golden_set=golden_set, doc_id="d3")

    rows = {row.query_id: row.documents for row in unjudged_in_top_k(run=run)}
    queued = unjudged_queue(run=run, by=rita)

    assert rows["q-1"] == [("d8", 2), ("d3", 3)]  # a repeated id is one document to judge
    assert "q-2" not in rows  # errored: there is no list to look at
    assert rows["q-3"] == [("d3", 3)]
    assert queued.queued == {"q-1": ["d3"], "q-3": ["d3"]}
    assert queued.unknown_documents == [("q-1", "d8")]
    assert queued.unknown_queries == ["q-4", "q-5", "q-6"]
    assert queued.added == 2
    candidate = Candidate.objects.get(query=q1, document=d3)
    assert candidate.provenance == [{"system": f"run:{run.pk}", "rank": 3}]
    assert unjudged_queue(run=run, by=rita).added == 0  # queueing again adds nothing


def test_near_duplicate_titles_in_the_top_k_are_grouped(finished: Any, stub: StubServer) -> None:
    titles = [
        ("d1", "Refund policy for annual plans"),
        ("d2", "Invoices"),
        ("d3", "Refund Policy for Annual Plans!"),
        ("d5", "refund policy: annual plans"),
        ("d6", ""),
    ]
    stub.on("query 1", Reply(json={"hits": [{"id": d, "title": t} for d, t in titles]}))

    run = finished()
    found = near_duplicate_titles(run=run)

    assert [row["query_id"] for row in found] == ["q-1"]
    assert [[(h["rank"], h["doc_id"]) for h in group] for group in found[0]["groups"]] == [
        [(1, "d1"), (3, "d3"), (4, "d5")]
    ]


def test_durable_keys_resolve_to_renumbered_ids_and_the_rest_are_listed(
    finished: Any, stub: StubServer, golden_set: GoldenSet
) -> None:
    keyed = make_version(golden_set, golden_file(2, keys=True, version="2026-08-02"))
    factories.DocumentFactory.create(golden_set=golden_set, doc_id="d1-new", key="key:d1")
    factories.DocumentFactory.create(golden_set=golden_set, doc_id="d2", key="key:d2")
    stub.default = hits_reply(["d1-new", "d2", "d3"])

    run = finished(golden_version=keyed)

    assert run.key_map == {"key:d1": "d1-new", "key:d2": "d2"}
    keys = run.report["keys"]
    assert keys["counts"] == {"unresolved": 2, "withheld": 0, "remapped": 2}
    assert {(u["query_id"], u["key"], u["kept"]) for u in keys["unresolved"]} == {
        ("q-1", "key:d4", True),
        ("q-2", "key:d4", True),
    }
    assert run.report["per_query"][0]["ranks"]["d1-new"] == 1  # the grade-3 judgment followed its key
    gain = 7 + 3 / 1.5849625007211562
    assert run.report["ndcg"] == pytest.approx(gain / (gain + 0.5))
