""" "Ask the judge" (docs/runs.md, "Judge labels in the report"): a run's unjudged top-k documents sent to
the judge of the newest qualification covering each query, one job per judge over exactly those pairs;
refused, and said why, where no judge is qualified; only the set's reviewers may ask."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from evaluation.models import EvaluationRun
from evaluation.runs.services import JudgeOffer, unjudged_ask_judge, unjudged_judge_offer
from labeling.models import Assignment, Candidate, GoldenSet, JudgeJob, JudgeJobItem
from tests import factories
from tests.support.evaluation import (
    logged_in,
    messages_text,
)
from tests.support.judge_labels import make_judge, qualify
from tests.support.stub_server import StubServer, hits_reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def labeling(golden_set: GoldenSet) -> dict[str, Any]:
    """The labeling set's side of the run: queries q-1..q-6 (billing and docs alternate, as in the golden
    file) and the documents d3 and d7; d9 is a document it does not know."""
    queries = {
        f"q-{i}": factories.QueryFactory.create(
            golden_set=golden_set,
            external_id=f"q-{i}",
            stratum=("billing", "docs")[(i - 1) % 2],
            locale="en-US",
        )
        for i in range(1, 7)
    }
    docs = {d: factories.DocumentFactory.create(golden_set=golden_set, doc_id=d) for d in ("d3", "d7")}
    return {"queries": queries, "docs": docs}


@pytest.fixture
def run(finished: Any, stub: StubServer, labeling: dict[str, Any]) -> EvaluationRun:
    # Unjudged in the top k: d3 everywhere (the stub's d1, d2, d3); q-1 also d7 and d9.
    stub.on("query 1", hits_reply(["d1", "d7", "d3", "d9"]))
    return finished()


def _pairs(job: JudgeJob) -> set[tuple[str, str]]:
    return {
        (item.query.external_id, item.document.doc_id)
        for item in job.items.select_related("query", "document")
    }


def test_each_query_goes_to_its_newest_qualified_judge_with_exactly_its_unjudged_pairs(
    run: EvaluationRun, golden_set: GoldenSet, rita: User, labeling: dict[str, Any]
) -> None:
    everywhere, billing = make_judge(golden_set, "m-old"), make_judge(golden_set, "m-new")
    qualify(everywhere, rita)
    qualify(billing, rita, strata=["billing"])  # newer: it speaks for billing queries

    outcome = unjudged_ask_judge(run=run, by=rita)

    jobs = {job.judge_id: job for job in outcome.jobs}
    assert set(jobs) == {everywhere.pk, billing.pk}
    assert _pairs(jobs[billing.pk]) == {("q-1", "d7"), ("q-1", "d3"), ("q-3", "d3"), ("q-5", "d3")}
    assert _pairs(jobs[everywhere.pk]) == {("q-2", "d3"), ("q-4", "d3"), ("q-6", "d3")}
    assert jobs[billing.pk].total == 4 and jobs[billing.pk].created_by == rita
    assert outcome.unknown_documents == [("q-1", "d9")] and outcome.no_judge == []
    # They join the pools, where a judge's label can fill a pair no human labeled.
    assert Candidate.objects.filter(document=labeling["docs"]["d3"]).count() == 6


def test_the_judge_is_asked_not_the_raters_who_finished_the_query(
    run: EvaluationRun, golden_set: GoldenSet, rita: User, alice: User, labeling: dict[str, Any]
) -> None:
    qualify(make_judge(golden_set, "m1"), rita)
    done = factories.AssignmentFactory.create(
        query=labeling["queries"]["q-2"], rater=alice, status=Assignment.Status.DONE, completed=timezone.now()
    )

    unjudged_ask_judge(run=run, by=rita)

    done.refresh_from_db()
    assert done.status == Assignment.Status.DONE and done.completed is not None
    assert Candidate.objects.filter(query=done.query, document=labeling["docs"]["d3"]).exists()


def test_a_query_no_judge_is_qualified_for_is_left_alone(
    run: EvaluationRun, golden_set: GoldenSet, rita: User
) -> None:
    judge = make_judge(golden_set, "m1")
    qualify(judge, rita, strata=["docs"])

    outcome = unjudged_ask_judge(run=run, by=rita)

    assert [job.judge_id for job in outcome.jobs] == [judge.pk]
    assert _pairs(outcome.jobs[0]) == {("q-2", "d3"), ("q-4", "d3"), ("q-6", "d3")}
    assert outcome.no_judge == ["q-1", "q-3", "q-5"]
    assert not Candidate.objects.filter(query__external_id="q-1").exists()  # not sent, not pooled


def test_with_no_qualified_judge_the_button_says_why_and_a_post_sends_nothing(
    run: EvaluationRun, golden_set: GoldenSet, rita: User
) -> None:
    make_judge(golden_set, "m1")  # a judge, but not qualified
    client = logged_in(rita)
    offer = unjudged_judge_offer(run=run)
    assert offer.pairs == 0 and "no judge is qualified" in offer.reason
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert 'id="ask-judge" disabled' in page and f"Not offered: {escape(offer.reason)}." in page

    response = client.post(reverse("evaluation:run_unjudged_ask_judge", args=[run.pk]), follow=True)

    assert response.status_code == 200 and not JudgeJob.objects.exists()
    assert messages_text(response) == [
        "Nothing was sent to a judge, and no document joined a pool.",
        "7 documents not sent: no judge is qualified for q-1, q-2, q-3, q-4, q-5, q-6 "
        "(qualify one on the judges page, or queue them for rating instead).",
        "Not in the set's documents (import them first): q-1/d9.",
    ]
    assert not Candidate.objects.exists()


def test_asking_again_while_the_job_runs_sends_nothing_and_says_which_job_has_them(
    run: EvaluationRun, golden_set: GoldenSet, rita: User
) -> None:
    qualify(make_judge(golden_set, "m1"), rita)
    client = logged_in(rita)
    url = reverse("evaluation:run_unjudged_ask_judge", args=[run.pk])
    client.post(url, follow=True)  # the page read: its messages shown
    job = JudgeJob.objects.get()  # queued: no worker takes it in this test
    items, pool = JudgeJobItem.objects.count(), sorted(Candidate.objects.values_list("pk", "provenance"))

    response = client.post(url, follow=True)

    assert messages_text(response)[:2] == [
        "Nothing was sent to a judge, and no document joined a pool.",
        f"7 documents of q-1, q-2, q-3, q-4, q-5, q-6 still wait in judge job {job.pk}: not sent again "
        "(its answers are coming).",
    ]
    assert JudgeJob.objects.get() == job and JudgeJobItem.objects.count() == items
    assert sorted(Candidate.objects.values_list("pk", "provenance")) == pool
    # The page no longer offers what a press would not send, and says why.
    assert unjudged_judge_offer(run=run) == JudgeOffer(
        0, (), f"nothing left to send: 7 still wait in judge job {job.pk}"
    )
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert 'id="ask-judge" disabled' in page


def test_a_document_labeled_since_the_freeze_is_not_sent(
    run: EvaluationRun, golden_set: GoldenSet, labeling: dict[str, Any], rita: User, alice: User
) -> None:
    judge = make_judge(golden_set, "m1")
    qualify(judge, rita)
    query, d3 = labeling["queries"]["q-2"], labeling["docs"]["d3"]
    factories.CandidateFactory.create(query=query, document=d3)
    done = factories.AssignmentFactory.create(
        query=query, rater=alice, status=Assignment.Status.DONE, completed=timezone.now()
    )
    factories.grade(done, d3, 2)
    assert unjudged_judge_offer(run=run).pairs == 6  # the button counts what a press sends

    response = logged_in(rita).post(reverse("evaluation:run_unjudged_ask_judge", args=[run.pk]), follow=True)

    job = JudgeJob.objects.get()
    assert job.total == 6 and ("q-2", "d3") not in _pairs(job)
    assert (
        f"1 document is labeled since version {run.golden_version.name} was frozen, so a judge's label "
        "would not count: not sent; freeze a new golden version to score it (q-2)."
    ) in messages_text(response)


def test_the_button_names_the_judges_and_the_post_starts_the_jobs(
    run: EvaluationRun, golden_set: GoldenSet, rita: User
) -> None:
    judge = make_judge(golden_set, "m1")
    qualify(judge, rita)
    client = logged_in(rita)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert f"Sends 7 of them to {judge.name}" in page  # d3 in six queries, q-1's d7 (d9 is unknown)

    response = client.post(reverse("evaluation:run_unjudged_ask_judge", args=[run.pk]), follow=True)

    job = JudgeJob.objects.get()
    assert job.total == 7 and job.status == JudgeJob.Status.QUEUED
    assert f"{judge.name} (job {job.pk}, 7 pairs)" in response.content.decode()


@pytest.mark.parametrize("who", ["alice", "charlie", "victor"])
def test_only_the_sets_reviewers_may_ask(
    who: str, run: EvaluationRun, golden_set: GoldenSet, rita: User, alice: User, charlie: User, victor: User
) -> None:
    qualify(make_judge(golden_set, "m1"), rita)
    url = reverse("evaluation:run_unjudged_ask_judge", args=[run.pk])
    user = {"alice": alice, "charlie": charlie, "victor": victor}[who]
    assert logged_in(user).post(url).status_code == 404  # the run is not theirs to see
    EvaluationRun.objects.filter(pk=run.pk).update(triggered_by=charlie)
    # Having started it opens nothing: the run is its set's reviewers' (evaluation.runs.access).
    assert logged_in(user).post(url).status_code == 404
    assert not JudgeJob.objects.exists()
