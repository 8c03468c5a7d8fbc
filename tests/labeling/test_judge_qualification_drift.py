"""The drift watch (labeling/services/judge_qualification.py): human labels that land after a judge's
qualification, in its scope (a rater's grades when their query is marked done, a reviewer's final grade
when it is recorded: an adjudication, an accepted proposal, a promoted calibration round); a suspension
with the numbers once the running kappa falls below the bar (never before `min_pairs`), the reviewers
mailed, the banner, the judge's labels no longer counting; and a failing check never breaking the rater's
done. The check is the task `labeling.judge_drift_check`, run in-process here (`eager_celery`);
tests/integration/test_judge_workers.py runs it on a real worker."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.utils.html import escape

from labeling import services
from labeling.models import Assignment, CalibrationRound, GoldenSet, Judge, JudgeQualification, Query
from labeling.selectors.judge_scope import qualified_judge_labels
from labeling.services import judge_qualification as jq
from labeling.services.done import assignment_done
from labeling.services.review import adjudication_create
from tests import factories
from tests.labeling.test_judge_qualification import dual_query, label, make_judge
from tests.support.runs import eager_celery

pytestmark = pytest.mark.django_db

HUMAN = [0, 1, 2, 3]


@pytest.fixture(autouse=True)
def _eager() -> Iterator[None]:
    """The queued check runs in-process (a worker runs it in tests/integration/test_judge_workers.py)."""
    with eager_celery():
        yield


@pytest.fixture(autouse=True)
def _small_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A window of 20 pairs that can fall from 6 on (the defaults are 200 and 50)."""
    monkeypatch.setattr(jq, "DRIFT_WINDOW", 20)
    monkeypatch.setattr(jq, "DRIFT_MIN_PAIRS", 6)


@pytest.fixture
def judge(golden_set: GoldenSet) -> Judge:
    return make_judge(golden_set, "drifting")


@pytest.fixture
def qualification(judge: Judge, rita: User) -> JudgeQualification:
    return JudgeQualification.objects.create(
        judge=judge, by=rita, rationale="agrees on billing", bar=0.7, strata=["billing"]
    )


def judged_query(golden_set: GoldenSet, judge: Judge, judge_grades: list[int], stratum: str) -> Query:
    """A query with a pool the judge graded (labels on the documents as they are)."""
    query = factories.pooled_query(golden_set, len(judge_grades), stratum=stratum, locale="en-US")
    for candidate, grade in zip(query.candidates.order_by("best_rank"), judge_grades, strict=True):
        label(judge, query, candidate.document, grade)
    return query


def rater_done(query: Query, rater: User, grades: list[int], capture: Callable[..., Any]) -> Assignment:
    """The rater grades the pool and marks the query done through the service, its on-commit work run."""
    assignment = factories.AssignmentFactory.create(query=query, rater=rater)
    for candidate, grade in zip(query.candidates.order_by("best_rank"), grades, strict=True):
        factories.grade(assignment, candidate.document, grade)
    with capture(execute=True):
        result = assignment_done(assignment_id=assignment.pk, rater=rater)
    assert result.status == Assignment.Status.DONE
    return assignment


def test_disagreeing_human_grades_suspend_the_qualification_once_there_are_enough(
    client: Client,
    golden_set: GoldenSet,
    judge: Judge,
    qualification: JudgeQualification,
    alice: User,
    bob: User,
    rita: User,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    # Grades that landed before the qualification do not count, whatever they say.
    early, _ = dual_query(golden_set, (alice, bob), HUMAN, stratum="billing", locale="en-US")
    early.assignments.update(completed=qualification.at.replace(year=qualification.at.year - 1))
    for candidate, grade in zip(early.candidates.order_by("best_rank"), [3, 2, 1, 0], strict=True):
        label(judge, early, candidate.document, grade)
    assert jq.drift_pairs(qualification) == []

    first = judged_query(golden_set, judge, [3, 2, 1, 0], "billing")
    rater_done(first, alice, HUMAN, django_capture_on_commit_callbacks)
    qualification.refresh_from_db()
    assert qualification.status == JudgeQualification.Status.ACTIVE  # 4 pairs: fewer than 6
    assert jq.drift_reading(qualification).watch.status == "too few pairs"
    # Out of the scope: a docs query's grades are not the qualification's business.
    outside = judged_query(golden_set, judge, [3, 2, 1, 0], "docs")
    rater_done(outside, alice, HUMAN, django_capture_on_commit_callbacks)
    qualification.refresh_from_db()
    assert qualification.status == JudgeQualification.Status.ACTIVE
    assert len(jq.drift_pairs(qualification)) == 4
    assert not mail.outbox
    assert qualified_judge_labels(golden_set=golden_set)

    second = judged_query(golden_set, judge, [3, 2, 1, 0], "billing")
    rater_done(second, bob, HUMAN, django_capture_on_commit_callbacks)
    qualification.refresh_from_db()
    assert qualification.status == JudgeQualification.Status.SUSPENDED
    assert qualification.ended_at is not None
    assert qualification.ended_reason.startswith(
        "the drift watch: the running kappa over the latest 20 pairs fell below the bar 0.700 at pair 6;"
        " now -1.000 over 8 pairs"
    )
    assert "exact agreement 0.000" in qualification.ended_reason
    # The reviewers with an address are mailed; the judge's labels count nowhere any more.
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["rita@example.org"]
    assert "suspended" in message.subject and judge.name in message.subject
    assert "fell below the bar 0.700" in message.body
    assert f"/sets/{golden_set.slug}/judges/{judge.pk}/qualification/" in message.body
    assert qualified_judge_labels(golden_set=golden_set) == {}
    assert jq.qualification_status(judge).startswith("suspended: the drift watch: the running kappa")
    client.force_login(rita)
    html = client.get(f"/sets/{golden_set.slug}/judges/{judge.pk}/qualification/").content.decode()
    assert 'id="judge-suspended"' in html and "Judge qualification suspended" in html
    for url in (f"/sets/{golden_set.slug}/judges/", f"/sets/{golden_set.slug}/judges/{judge.pk}/"):
        assert 'id="judge-suspended"' in client.get(url).content.decode(), url
    detail = client.get(f"/sets/{golden_set.slug}/judges/{judge.pk}/").content.decode()
    assert "<strong>Qualification:</strong> suspended: the drift watch: the running kappa" in detail
    # Marking more queries done does not mail again.
    third = judged_query(golden_set, judge, [3, 2, 1, 0], "billing")
    rater_done(third, alice, HUMAN, django_capture_on_commit_callbacks)
    assert len(mail.outbox) == 1
    # The banner stays until the judge is qualified again or replaced by a new version.
    assert jq.suspended_recently(golden_set=golden_set) == [qualification]
    make_judge(golden_set, "drifting-2", previous=judge)
    assert jq.suspended_recently(golden_set=golden_set) == []


def test_agreeing_human_grades_keep_it_active_and_the_page_shows_the_running_agreement(
    client: Client,
    golden_set: GoldenSet,
    judge: Judge,
    qualification: JudgeQualification,
    alice: User,
    rita: User,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    for _ in range(3):
        query = judged_query(golden_set, judge, HUMAN, "billing")
        rater_done(query, alice, HUMAN, django_capture_on_commit_callbacks)
    qualification.refresh_from_db()
    assert qualification.status == JudgeQualification.Status.ACTIVE
    watch = jq.drift_reading(qualification).watch
    assert (watch.status, watch.n_pairs, watch.kappa_quadratic) == ("holding", 12, 1.0)
    assert not mail.outbox
    client.force_login(rita)
    response = client.get(f"/sets/{golden_set.slug}/judges/{judge.pk}/qualification/")
    assert response.context["drift"][0].watch == watch
    assert escape(watch.why) in response.content.decode()


def test_a_failing_drift_check_never_breaks_marking_a_query_done(
    golden_set: GoldenSet,
    judge: Judge,
    qualification: JudgeQualification,
    alice: User,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    def broken(**kwargs: Any) -> None:
        raise RuntimeError("the watch broke")

    monkeypatch.setattr(jq, "drift_check", broken)
    query = judged_query(golden_set, judge, [3, 2, 1, 0], "billing")
    with caplog.at_level(logging.ERROR, logger="labeling.services.judge_qualification"):
        assignment = rater_done(query, alice, HUMAN, django_capture_on_commit_callbacks)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.DONE and assignment.completed is not None
    assert f"drift watch of golden set {golden_set.pk} failed" in caplog.text


def test_no_active_qualification_no_check(
    golden_set: GoldenSet,
    judge: Judge,
    alice: User,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(jq, "drift_check", lambda *, golden_set_id: calls.append(golden_set_id))
    query = judged_query(golden_set, judge, [3, 2, 1, 0], "billing")
    rater_done(query, alice, HUMAN, django_capture_on_commit_callbacks)
    assert calls == []


def test_grades_on_other_content_than_the_documents_now_are_not_compared(
    golden_set: GoldenSet,
    judge: Judge,
    qualification: JudgeQualification,
    alice: User,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    query = judged_query(golden_set, judge, [3, 2, 1, 0], "billing")
    assignment = rater_done(query, alice, HUMAN, django_capture_on_commit_callbacks)
    judgments = list(assignment.judgments.order_by("document__candidates__best_rank"))
    judgments[0].content_hash = "0" * 64  # graded before the document changed
    judgments[0].save()
    judgments[1].content_hash = judgments[1].document.content_hash
    judgments[1].save()
    assert jq.drift_pairs(qualification) == [(2, 1), (1, 2), (0, 3)]


def test_a_reviewers_final_grade_is_a_human_label_the_watch_compares(
    golden_set: GoldenSet,
    judge: Judge,
    qualification: JudgeQualification,
    alice: User,
    rita: User,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    query = judged_query(golden_set, judge, [3, 2, 1, 0], "billing")
    rater_done(query, alice, HUMAN, django_capture_on_commit_callbacks)
    documents = [c.document for c in query.candidates.order_by("best_rank")]
    # Decided after the rater's grades: the two final grades land after them, in the order decided.
    with django_capture_on_commit_callbacks(execute=True):
        adjudication_create(query=query, document=documents[3], reviewer=rita, grade=1, rationale="minor")
    with django_capture_on_commit_callbacks(execute=True):
        adjudication_create(query=query, document=documents[0], reviewer=rita, grade=0, rationale="off")
    assert jq.drift_pairs(qualification) == [(3, 0), (2, 1), (1, 2), (0, 3), (0, 1), (3, 0)]
    # Six pairs far apart: the reviewer's decisions tipped the watch, which the adjudication queued.
    qualification.refresh_from_db()
    assert qualification.status == JudgeQualification.Status.SUSPENDED
    assert "at pair 6" in qualification.ended_reason


def test_a_promoted_calibration_round_queues_one_check_and_its_medians_are_compared(
    golden_set: GoldenSet,
    judge: Judge,
    qualification: JudgeQualification,
    alice: User,
    bob: User,
    rita: User,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    queries = [judged_query(golden_set, judge, [3, 2, 1, 0], "billing") for _ in range(2)]
    round_ = services.calibration_round_start(
        golden_set=golden_set, name="spring", queries=queries, raters=[alice, bob], by=rita
    )
    for assignment in Assignment.objects.filter(calibration_round=round_):
        for candidate in assignment.query.candidates.order_by("best_rank"):
            factories.grade(assignment, candidate.document, 3)
    calls: list[int] = []
    monkeypatch.setattr(jq, "drift_check", lambda *, golden_set_id: calls.append(golden_set_id))
    with django_capture_on_commit_callbacks(execute=True):
        result = services.calibration_round_promote(round=CalibrationRound.objects.get(pk=round_.pk), by=rita)
    assert len(result.adjudications) == 8
    assert calls == [golden_set.pk]  # one check for the round, not one per document
    # The round's own grades measure the rubric, not the judge: only the promoted medians are compared.
    assert jq.drift_pairs(qualification) == [(3, 3), (2, 3), (1, 3), (0, 3)] * 2
