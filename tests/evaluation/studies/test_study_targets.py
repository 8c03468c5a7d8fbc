"""A side-by-side study on two targets searched now (docs/sxs.md, "Creating a study"): the two runs start
through `run_create` and go all the way in-process (eager Celery, the loopback stub engines, as the run
tests do); the pending study becomes a study made exactly as from the two finished runs, once only; a
failed or cancelled run fails it in words; the refusals; the pages (the set's list, the pending page, the
form) and who sees them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from evaluation.models import EvaluationRun, PendingStudy, SearchTarget, StudyTask, SxsStudy
from evaluation.runs.services import run_cancel, run_finalize_process
from evaluation.studies.services import (
    StudyError,
    StudySpec,
    pending_resolve,
    pending_studies_resolve,
    study_create,
    study_on_targets,
)
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet, SecretGrant
from tests import factories
from tests.support.evaluation import TokenFor, bearer, logged_in, token_for_fixture  # noqa: F401
from tests.support.runs import eager_celery, make_target, make_version
from tests.support.stub_server import Reply, StubServer, hits_reply
from tests.support.studies import documents, study_form, two_runs

pytestmark = pytest.mark.django_db

Waiting = PendingStudy.Status


@pytest.fixture(name="reversed_stub")
def reversed_stub_fixture() -> Iterator[StubServer]:
    """A second loopback engine answering every query with d3, d2, d1 (the first answers d1, d2, d3)."""
    with StubServer(default=hits_reply(["d3", "d2", "d1"])) as server:
        yield server


@pytest.fixture(name="candidate")
def candidate_fixture(reversed_stub: StubServer, golden_set: GoldenSet) -> SearchTarget:
    return make_target(f"{reversed_stub.url}/search", golden_set, name="candidate")


def _ask(
    golden_set: GoldenSet,
    target_a: SearchTarget,
    target_b: SearchTarget,
    by: User,
    raters: list[User],
    **values: Any,
) -> PendingStudy:
    values.setdefault("seed", 7)
    values.setdefault("answers_per_query", len(raters))
    return study_on_targets(
        golden_set=golden_set, target_a=target_a, target_b=target_b, raters=raters, values=values, by=by
    )


def _shape(study: SxsStudy) -> tuple[list[Any], list[Any]]:
    """What a study asks, as values: its queries with both sides' cards, and its tasks' raters and sides."""
    queries = list(
        study.queries.order_by("id").values_list("query_id", "identical", "ndcg_change", "cards_a", "cards_b")
    )
    tasks = sorted(study.tasks.values_list("item__query_id", "rater__username", "candidate_left"))
    return queries, tasks


def test_the_pending_study_becomes_the_study_of_its_two_finished_runs_once(
    django_capture_on_commit_callbacks: Any,
    golden_set: GoldenSet,
    version: GoldenVersion,
    target: SearchTarget,
    candidate: SearchTarget,
    rita: User,
    alice: User,
    bob: User,
) -> None:
    documents(golden_set)
    newest = make_version(golden_set, name="2026-09-01")

    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        pending = _ask(golden_set, target, candidate, rita, [alice, bob], name="ranker v2")
        # Before the runs start (on commit): waiting, and no rater has a task.
        assert pending.status == Waiting.WAITING and not StudyTask.objects.exists()

    pending.refresh_from_db()
    assert pending.status == Waiting.CREATED and pending.reason == ""
    run_a, run_b = pending.run_a, pending.run_b
    for run, on in ((run_a, target), (run_b, candidate)):
        assert run.status == EvaluationRun.Status.SUCCEEDED and run.target == on
        assert run.trigger == EvaluationRun.Trigger.WEB and run.triggered_by == rita
        assert run.golden_version == newest  # the set's newest version by default
    study = pending.study
    assert study is not None and study.name == "ranker v2" and study.seed == 7 and study.created_by == rita
    assert (study.run_a, study.run_b, study.golden_version) == (run_a, run_b, newest)
    assert study.queries.filter(identical=False).count() == 6 and study.tasks.count() == 12

    # Delivered again (a second finalize, a page read): nothing new.
    assert run_finalize_process(run_id=run_b.pk) == "skipped"
    assert pending_studies_resolve(run_id=run_b.pk) == 0 and pending_studies_resolve(run_id=run_a.pk) == 0
    assert pending_resolve(pending).study == study
    assert SxsStudy.objects.count() == 1 and StudyTask.objects.count() == 12

    # Exactly the study the same options make from the two finished runs.
    again = study_create(spec=StudySpec.read(run_a, run_b, [alice, bob], pending.options), by=rita)
    assert _shape(again) == _shape(study)


def test_a_failed_run_fails_the_study_in_words_and_no_rater_gets_a_task(
    django_capture_on_commit_callbacks: Any,
    golden_set: GoldenSet,
    version: GoldenVersion,
    target: SearchTarget,
    rita: User,
    alice: User,
) -> None:
    with StubServer(default=Reply(status=500)) as broken_engine:
        broken = make_target(f"{broken_engine.url}/search", golden_set, name="broken")
        with eager_celery(), django_capture_on_commit_callbacks(execute=True):
            pending = _ask(golden_set, target, broken, rita, [alice])

    pending.refresh_from_db()
    assert pending.status == Waiting.FAILED and pending.study is None
    assert pending.reason.startswith(
        f"run B (run {pending.run_b_id}, target broken) failed: every one of the 6 queries errored"
    )
    assert pending.reason.endswith(": the study needs both runs finished")
    assert not SxsStudy.objects.exists() and not StudyTask.objects.exists()


def test_a_cancelled_run_fails_the_study_when_it_is_next_read(
    django_capture_on_commit_callbacks: Any,
    golden_set: GoldenSet,
    version: GoldenVersion,
    target: SearchTarget,
    candidate: SearchTarget,
    rita: User,
    alice: User,
) -> None:
    with django_capture_on_commit_callbacks(execute=False):  # the runs are not started
        pending = _ask(golden_set, target, candidate, rita, [alice])
    assert pending_resolve(pending).status == Waiting.WAITING

    run_cancel(run=pending.run_a, by=rita)

    assert pending_resolve(pending).status == Waiting.FAILED
    assert pending.reason == (
        f"run A (run {pending.run_a_id}, target staging) cancelled: cancelled by rita: the study needs both "
        "runs finished"
    )


def test_refusals_in_words_start_no_run(
    golden_set: GoldenSet,
    version: GoldenVersion,
    target: SearchTarget,
    candidate: SearchTarget,
    stub: StubServer,
    rita: User,
    alice: User,
    charlie: User,
) -> None:
    other = factories.GoldenSetFactory.create(slug="other", reviewers=[rita])
    elsewhere = make_target(f"{stub.url}/search", other, name="elsewhere")
    empty = factories.GoldenSetFactory.create(slug="empty", reviewers=[rita], raters=[alice])
    unfrozen = make_target(f"{stub.url}/search", empty, name="unfrozen")
    factories.grant_secrets(golden_set, "ASSAY_SECRET_TEST_SEARCH_TOKEN")
    secret = make_target(
        f"{stub.url}/search",
        golden_set,
        name="secret",
        headers={"Authorization": {"env": "ASSAY_SECRET_TEST_SEARCH_TOKEN"}},
    )
    SecretGrant.objects.filter(golden_set=golden_set).delete()  # withdrawn after the target was saved

    def refused(*args: Any, **values: Any) -> list[str]:
        with pytest.raises(StudyError) as caught:
            _ask(*args, **values)
        return caught.value.problems

    assert refused(golden_set, target, target, rita, [alice]) == [
        "target staging twice: a study on targets searches two different targets"
    ]
    assert refused(golden_set, target, elsewhere, rita, [alice]) == [
        "target B: target elsewhere is not set up for golden set help-center (add the set to the target "
        "first)"
    ]
    (problem,) = refused(golden_set, secret, candidate, rita, [alice])
    assert problem.startswith("target A: target secret: ") and "ASSAY_SECRET_TEST_SEARCH_TOKEN" in problem
    assert refused(empty, unfrozen, candidate, rita, [alice]) == [
        "golden set empty has no version yet: freeze one first"
    ]
    assert refused(golden_set, target, candidate, alice, [alice]) == [
        "only a reviewer of help-center can create a study of it"
    ]
    (raters,) = refused(golden_set, target, candidate, rita, [charlie], answers_per_query=1)
    assert raters.startswith("raters: charlie not a rater of help-center")
    assert not EvaluationRun.objects.exists() and not PendingStudy.objects.exists()


def _client(user: User) -> Client:
    return logged_in(user)


def _other_reviewer() -> User:
    """otto, a reviewer of another set only."""
    otto = User.objects.create_user("otto", password="x")
    otto.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    factories.GoldenSetFactory.create(slug="other", reviewers=[otto])
    return otto


def test_the_pages_show_the_pending_study_and_its_runs_to_the_sets_reviewers_only(
    django_capture_on_commit_callbacks: Any,
    golden_set: GoldenSet,
    version: GoldenVersion,
    target: SearchTarget,
    candidate: SearchTarget,
    rita: User,
    alice: User,
) -> None:
    client = _client(rita)
    form = study_form(target_a=target.pk, target_b=candidate.pk, raters=[alice.pk])
    twice = client.post("/sets/help-center/studies/new/", {**form, "target_b": target.pk})
    assert twice.status_code == 400 and "target staging twice" in twice.content.decode()
    run_a, run_b = two_runs(golden_set, 6)
    both = client.post("/sets/help-center/studies/new/", {**form, "run_a": run_a.pk, "run_b": run_b.pk})
    assert both.status_code == 400 and "either two runs or two targets, not both" in both.content.decode()
    neither = client.post("/sets/help-center/studies/new/", {**form, "target_a": "", "target_b": ""})
    assert neither.status_code == 400 and "or target A and target B" in neither.content.decode()
    assert EvaluationRun.objects.count() == 2 and not PendingStudy.objects.exists()

    with django_capture_on_commit_callbacks(execute=False):
        made = client.post("/sets/help-center/studies/new/", form)
    pending = PendingStudy.objects.get()
    assert made.status_code == 302 and made["Location"] == f"/studies/pending/{pending.pk}/"
    assert pending.run_a.trigger == EvaluationRun.Trigger.WEB and pending.run_a.triggered_by == rita

    page = client.get(made["Location"]).content.decode()
    assert "Waiting for runs" in page
    for run in (pending.run_a, pending.run_b):
        assert f'href="/runs/{run.pk}/"' in page and run.pk not in (run_a.pk, run_b.pk)
    listing = client.get("/sets/help-center/studies/").content.decode()
    assert f'href="/studies/pending/{pending.pk}/"' in listing and "waiting for runs" in listing
    # Raters have nothing to answer until it is ready.
    assert not StudyTask.objects.exists()

    otto = _other_reviewer()
    for user in (otto, alice):
        assert _client(user).get(f"/studies/pending/{pending.pk}/").status_code == 404
    assert f"/studies/pending/{pending.pk}/" not in _client(otto).get("/sets/other/studies/").content.decode()


def test_the_api_creates_a_study_on_targets_and_reads_it_until_it_is_made(
    django_capture_on_commit_callbacks: Any,
    golden_set: GoldenSet,
    version: GoldenVersion,
    target: SearchTarget,
    candidate: SearchTarget,
    rita: User,
    alice: User,
    bob: User,
    token_for: TokenFor,
) -> None:
    documents(golden_set)
    token = token_for(rita, "read", "studies:write")
    body = {
        "target_a": "staging",
        "target_b": "candidate",
        "golden_set": "help-center",
        "raters": ["alice", "bob"],
        "seed": 3,
    }

    def post(data: dict[str, Any]) -> Any:
        return Client().post(
            "/api/v1/studies/", json.dumps(data), content_type="application/json", **bearer(token)
        )

    assert post({**body, "target_b": "staging"}).json()["problems"] == [
        "target staging twice: a study on targets searches two different targets"
    ]
    mixed = post({**body, "run_a": 1, "run_b": 2})
    assert mixed.status_code == 400 and mixed.json()["problems"] == [
        "name either two runs or two targets (with golden_set), not both"
    ]
    half = post({"target_a": "staging", "raters": ["alice"]})
    assert half.status_code == 400 and "target_a, target_b and golden_set" in half.json()["problems"][0]
    assert post({**body, "target_b": "nowhere"}).status_code == 404
    assert post({**body, "version": "no-such"}).status_code == 404

    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        created = post({**body, "version": version.name})
    assert created.status_code == 202, created.json()
    pending = PendingStudy.objects.get(pk=created.json()["id"])
    assert created["Location"] == f"http://testserver/api/v1/studies/pending/{pending.pk}/"
    assert pending.run_a.trigger == EvaluationRun.Trigger.API and pending.run_b.triggered_by == rita

    read = Client().get(created["Location"], **bearer(token)).json()
    assert read["status"] == "created" and read["study"] == pending.study_id is not None
    assert read["links"]["study"] == f"http://testserver/api/v1/studies/{pending.study_id}/"
    study = Client().get(read["links"]["study"], **bearer(token)).json()
    assert study["seed"] == 3 and study["progress"]["expected"] == 12

    otto = _other_reviewer()
    assert Client().get(created["Location"], **bearer(token_for(otto))).status_code == 404
    assert Client().get(created["Location"], **bearer(token_for(alice))).status_code == 404
    # Another set's reviewer names this set's targets: no such set for them.
    other = Client().post(
        "/api/v1/studies/", json.dumps(body), content_type="application/json", **bearer(token_for(otto))
    )
    assert other.status_code == 404 and PendingStudy.objects.count() == 1
