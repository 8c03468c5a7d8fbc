"""Closing a side-by-side study (docs/sxs.md, "Closing a study"): a reviewer closes it on its page or
through the API, or a promotion to baseline that rested on its pass closes it; after that no answer or
undo is taken (the service, the rater's endpoints and pages, the queue), the verdict stays the one read
at the close, with its time; reopening is a reviewer's act with a reason, recorded, and lets answers in
again. Who may: only a reviewer of the study's set (404 to a rater and a reviewer of another set, 403 to
a token without `studies:write`). The close waits for an answer in flight, on the real database."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection, transaction
from django.test import Client

from evaluation.models import StudyEvent, StudyTask, SxsStudy
from evaluation.runs.services import baseline_promote
from evaluation.studies.services import (
    CLOSED,
    Answer,
    AnswerRefused,
    study_analysis,
    study_answer,
    study_setting_set,
    study_undo,
)
from evaluation.studies.services.close import (
    StudyError,
    StudyStateError,
    baseline_study_problems,
    study_close,
    study_reopen,
)
from labeling.models import GoldenSet
from tests import factories
from tests.support.evaluation import (  # noqa: F401  (fixture by name)
    TokenFor,
    bearer,
    logged_in,
    messages_text,
    token_for_fixture,
)
from tests.support.studies import answered_study, two_runs
from tests.support.threads import race

pytestmark = pytest.mark.django_db


def _tasks(study: SxsStudy) -> list[tuple[Any, ...]]:
    """Every task's answer as stored: what a refused answer or undo must leave as it was."""
    return list(
        StudyTask.objects.filter(study=study)
        .order_by("pk")
        .values_list("pk", "revision", "preference", "reasons", "answered_at", "note")
    )


def _half_answered(golden_set: GoldenSet, rita: User, alice: User) -> tuple[SxsStudy, StudyTask, StudyTask]:
    """A passing study of alice's with one of her six answers undone: (study, an open task, an answered
    one)."""
    study = answered_study(golden_set, rita, [alice], candidate=2)
    first, second = StudyTask.objects.filter(study=study).order_by("pk")[:2]
    study_undo(token=first.token, rater=alice, revision=first.revision)
    return study, StudyTask.objects.get(pk=first.pk), second


def _json(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_a_closed_study_takes_no_answer_and_no_undo_at_the_service(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    study, open_task, answered = _half_answered(golden_set, rita, alice)
    before = study_analysis(study)

    closed = study_close(study=study, by=rita, why="we have what we need")

    assert closed.closed_at is not None and closed.verdict == before["verdict"]["result"] == "pass"
    event = StudyEvent.objects.get(study=study)
    assert (event.kind, event.by, event.why, event.verdict, event.at) == (
        "closed",
        rita,
        "we have what we need",
        "pass",
        closed.closed_at,
    )
    stored = _tasks(study)
    for call in (
        lambda: study_answer(
            token=open_task.token, rater=alice, revision=open_task.revision, answer=Answer(preference=1)
        ),
        lambda: study_undo(token=answered.token, rater=alice, revision=answered.revision),
    ):
        with pytest.raises(AnswerRefused) as refused:
            call()
        assert (refused.value.status, refused.value.code, refused.value.message) == (409, "closed", CLOSED)
    assert _tasks(study) == stored
    with pytest.raises(StudyStateError) as again:
        study_close(study=study, by=rita)
    assert again.value.problems[0].startswith(f"study {study.pk} is closed already (since ")
    assert StudyEvent.objects.filter(study=study).count() == 1


def test_the_rater_s_pages_say_the_study_is_closed_and_its_endpoints_refuse_in_words(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    study, open_task, answered = _half_answered(golden_set, rita, alice)
    client = logged_in(alice)
    assert "1 side-by-side query to answer" in client.get("/").content.decode()
    study_close(study=study, by=rita)
    stored = _tasks(study)

    answer = _json(
        client, f"/sxs/{open_task.token}/answer/", {"revision": open_task.revision, "preference": 1}
    )
    undo = _json(client, f"/sxs/{answered.token}/undo/", {"revision": answered.revision})

    for refused in (answer, undo):
        assert refused.status_code == 409
        assert refused.json() == {"error": "closed", "message": CLOSED}
    assert _tasks(study) == stored
    page = client.get(f"/sxs/{open_task.token}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<p class="error" id="sxs-closed" role="alert">This study is closed' in html
    assert 'id="sxs-submit" disabled' in html and 'data-closed="This study is closed' in html
    # The queue skips it: nothing left to answer, and the home page offers nothing.
    nxt = client.get("/sxs/next/")
    assert nxt.status_code == 302 and nxt["Location"] == "/sxs/"
    assert 'id="sxs-home"' not in client.get("/").content.decode()
    listing = client.get("/sxs/").content.decode()
    assert "0 queries to answer" in listing and '<span class="badge">closed</span>' in listing


def test_a_reviewer_closes_and_reopens_on_the_study_page_and_both_are_recorded(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    study, open_task, _ = _half_answered(golden_set, rita, alice)
    reviewer = logged_in(rita)
    url = f"/studies/{study.pk}/"
    assert 'id="study-close-form"' in reviewer.get(url).content.decode()

    closed = reviewer.post(f"{url}close/", {"why": "enough answers"}, follow=True)

    assert f"Study {study.pk} is closed: its verdict (pass) is frozen" in " ".join(messages_text(closed))
    study.refresh_from_db()
    assert study.closed_at is not None
    html = closed.content.decode()
    stamp = f"{study.closed_at:%Y-%m-%d %H:%M:%S} UTC"
    assert f"<strong>Frozen:</strong> read from the answers as they stood at {stamp}" in html
    assert '<span class="badge closed"' in html and 'id="study-reopen-form"' in html
    assert "<strong>closed</strong> by rita, the verdict pass: “enough answers”" in html

    twice = reviewer.post(f"{url}close/", {}, follow=True)
    assert any("is closed already" in m for m in messages_text(twice))
    no_reason = reviewer.post(f"{url}reopen/", {"why": "  "}, follow=True)
    assert "why: say why the study opens again (it is recorded with your name)" in messages_text(no_reason)
    assert SxsStudy.objects.get(pk=study.pk).closed_at == study.closed_at

    reopened = reviewer.post(f"{url}reopen/", {"why": "two more raters join"}, follow=True)

    assert any("is open again" in m for m in messages_text(reopened))
    assert SxsStudy.objects.get(pk=study.pk).closed_at is None
    events = list(StudyEvent.objects.filter(study=study).values_list("kind", "by__username", "why"))
    assert events == [("reopened", "rita", "two more raters join"), ("closed", "rita", "enough answers")]
    assert (
        "<strong>reopened</strong> by rita, the verdict pass: “two more raters join”"
        in reopened.content.decode()
    )
    # Open again: the rater's answer is taken.
    saved = _json(
        logged_in(alice), f"/sxs/{open_task.token}/answer/", {"revision": open_task.revision, "preference": 2}
    )
    assert saved.status_code == 200 and saved.json()["saved"]


def test_the_frozen_verdict_stays_what_was_read_at_the_close_until_reopened(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    study = answered_study(golden_set, rita, [alice, bob], candidate=[3, 3, 3, -3, -3, -3])
    read = study_analysis(study)
    study_close(study=study, by=rita)
    # No answer can move it: every task of every rater is refused, both ways.
    stored = _tasks(study)
    for task in StudyTask.objects.filter(study=study).select_related("rater"):
        with pytest.raises(AnswerRefused):
            study_undo(token=task.token, rater=task.rater, revision=task.revision)
        with pytest.raises(AnswerRefused):
            study_answer(token=task.token, rater=task.rater, revision=task.revision, answer=Answer(3))
    assert _tasks(study) == stored
    # Nor a newer version of the analysis: one stored by an older rule is made again when read, but not a
    # closed study's (simulated: the kept key no longer matches the answers).
    SxsStudy.objects.filter(pk=study.pk).update(analysed_key="v0:stale")
    frozen = SxsStudy.objects.get(pk=study.pk)
    assert study_analysis(frozen) == read and frozen.verdict == read["verdict"]["result"]
    page = logged_in(rita).get(f"/studies/{study.pk}/").content.decode()
    assert "<strong>Frozen:</strong>" in page
    assert SxsStudy.objects.get(pk=study.pk).analysed_key == "v0:stale"  # nothing was made again

    study_reopen(study=frozen, by=rita, why="read it again")
    reopened = SxsStudy.objects.get(pk=study.pk)
    assert study_analysis(reopened) == read  # made again from the same answers: the same figures
    assert SxsStudy.objects.get(pk=study.pk).analysed_key != "v0:stale"


def test_a_promotion_resting_on_a_passed_study_closes_it(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    run_a, run_b = two_runs(golden_set, 6)
    baseline_promote(run=run_a, by=rita, rationale="first")
    passed = answered_study(golden_set, rita, [alice, bob], candidate=3, runs=(run_a, run_b))
    failed = answered_study(golden_set, rita, [alice], candidate=-3, runs=(run_a, run_b))
    # The setting off: a promotion rests on no study and closes none.
    other_a, other_b = two_runs(golden_set, 6)
    unrequired = answered_study(golden_set, rita, [alice], candidate=3, runs=(other_a, other_b))
    baseline_promote(run=other_b, by=rita, rationale="no study asked")
    assert SxsStudy.objects.get(pk=unrequired.pk).closed_at is None
    study_setting_set(golden_set=golden_set, require_passed_study=True, by=rita)

    baseline = baseline_promote(run=run_b, by=rita, rationale="people prefer it")

    passed.refresh_from_db()
    assert passed.closed_at is not None and SxsStudy.objects.get(pk=failed.pk).closed_at is None
    event = StudyEvent.objects.get(study=passed)
    assert (event.kind, event.by, event.baseline, event.verdict) == ("closed", rita, baseline, "pass")
    assert event.why == (
        f"run {run_b.pk} engine became the baseline of help-center on this study's pass (the set "
        "requires a passed study before a baseline)"
    )
    task = StudyTask.objects.filter(study=passed, rater=alice).first()
    assert task is not None
    with pytest.raises(AnswerRefused) as refused:
        study_undo(token=task.token, rater=alice, revision=task.revision)
    assert refused.value.code == "closed"
    page = logged_in(rita).get(f"/studies/{passed.pk}/").content.decode()
    assert f"(the promotion of run {run_b.pk} engine to" in page
    # The frozen pass still counts before a baseline.
    assert baseline_study_problems(run_b) == []


def test_the_api_closes_and_reopens_with_worded_refusals(
    golden_set: GoldenSet, rita: User, alice: User, token_for: TokenFor
) -> None:
    study, _, _ = _half_answered(golden_set, rita, alice)
    auth = bearer(token_for(rita, "read", "studies:write"))
    base = f"/api/v1/studies/{study.pk}/"

    def post(path: str, body: dict[str, Any]) -> Any:
        return Client().post(base + path, json.dumps(body), content_type="application/json", **auth)

    assert Client().get(base, **auth).json()["closed_at"] is None
    closed = post("close/", {"why": "read"})

    assert closed.status_code == 200, closed.json()
    body = closed.json()
    study.refresh_from_db()
    assert body["closed_at"] is not None and body["verdict"] == "pass"
    assert body["events"] == [
        {
            "kind": "closed",
            "by": "rita",
            "at": body["closed_at"],
            "why": "read",
            "verdict": "pass",
            "baseline": None,
        }
    ]
    again = post("close/", {})
    assert again.status_code == 409 and again.json()["problems"][0].startswith(f"study {study.pk} is closed")
    for bad, words in (({}, "why: This field is required."), ({"why": "a\x00b"}, "why:")):
        refused = post("reopen/", bad)
        assert refused.status_code == 400 and refused.json()["problems"][0].startswith(words), refused.json()
    reopened = post("reopen/", {"why": "more raters"})
    assert reopened.status_code == 200 and reopened.json()["closed_at"] is None
    assert [e["kind"] for e in reopened.json()["events"]] == ["reopened", "closed"]
    open_again = post("reopen/", {"why": "again"})
    assert (
        open_again.status_code == 409
        and "is open: there is nothing to reopen" in open_again.json()["problems"][0]
    )


def test_only_a_reviewer_of_the_set_closes_or_reopens(
    golden_set: GoldenSet, rita: User, alice: User, token_for: TokenFor
) -> None:
    study, _, _ = _half_answered(golden_set, rita, alice)
    otto = User.objects.create_user("otto")
    otto.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    factories.GoldenSetFactory.create(slug="other", reviewers=[otto])

    def tries(expected_closed: bool) -> None:
        for user in (alice, otto):  # the study's own rater, and a reviewer of another set
            for act in ("close", "reopen"):
                page = logged_in(user).post(f"/studies/{study.pk}/{act}/", {"why": "mine"})
                api = Client().post(
                    f"/api/v1/studies/{study.pk}/{act}/",
                    json.dumps({"why": "mine"}),
                    content_type="application/json",
                    **bearer(token_for(user)),
                )
                assert (page.status_code, api.status_code) == (404, 404), (user, act)
        # The set's reviewer with a token that may only read: 403, naming the scope.
        for act in ("close", "reopen"):
            scoped = Client().post(
                f"/api/v1/studies/{study.pk}/{act}/",
                json.dumps({"why": "mine"}),
                content_type="application/json",
                **bearer(token_for(rita, "read")),
            )
            assert scoped.status_code == 403 and "studies:write" in scoped.json()["detail"]
        assert (SxsStudy.objects.get(pk=study.pk).closed_at is not None) == expected_closed

    tries(expected_closed=False)
    assert not StudyEvent.objects.exists()
    study_close(study=study, by=rita)
    tries(expected_closed=True)
    assert StudyEvent.objects.count() == 1
    # The service holds the same rule for any caller.
    for who in (alice, otto):
        with pytest.raises(StudyError) as refused:
            study_reopen(study=study, by=who, why="mine")
        assert refused.value.problems == ["only a reviewer of help-center can reopen its studies"]


@pytest.mark.django_db(transaction=True)
def test_a_close_waits_for_an_answer_in_flight_and_freezes_it_in(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    """The answer holds its task's lock until it commits; the close, started meanwhile, waits for it
    (seen in PostgreSQL's lock table), so the verdict it freezes counts the answer."""
    study, open_task, _ = _half_answered(golden_set, rita, alice)
    saved, release = threading.Event(), threading.Event()
    close_pid: list[int] = []

    def answer() -> object:
        with transaction.atomic():
            study_answer(token=open_task.token, rater=alice, revision=open_task.revision, answer=Answer(2))
            saved.set()
            assert release.wait(60)
        return "answered"

    def close() -> object:
        assert saved.wait(60)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            close_pid.append(cursor.fetchone()[0])
        return study_close(study=study, by=rita)

    def watch() -> object:
        """Let the answer commit once the close waits on a lock (or, were it not to wait, has ended)."""
        assert saved.wait(60)
        waited = False
        for _ in range(6000):
            if close_pid:
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [close_pid[0]]
                    )
                    row = cursor.fetchone()
                if row is not None and row[0] == "Lock":
                    waited = True
                    break
                if SxsStudy.objects.filter(pk=study.pk, closed_at__isnull=False).exists():
                    break
            threading.Event().wait(0.01)
        release.set()
        return waited

    answered, closed, waited = race([answer, close, watch])

    assert answered == "answered" and isinstance(closed, SxsStudy) and waited is True
    frozen = SxsStudy.objects.get(pk=study.pk)
    assert frozen.analysis is not None and frozen.analysis["answers"] == 6
    assert StudyTask.objects.filter(study=study, answered_at__isnull=False).count() == 6
    assert study_analysis(frozen) == frozen.analysis and frozen.closed_at is not None
