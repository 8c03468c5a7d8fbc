"""The name raters read for a study (docs/sxs.md, "The name raters see"): chosen by the reviewer on the form
or through the API, else the study's title when it names nothing compared, else "Study of <date>"; a
name that names a target, a parameter or a run is refused in words; it stays put when a new study
arrives. And every rater page stays blind: no target name, parameter, run id, rank, internal label
(`default@2`) or position in a list reaches a rater."""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from evaluation.models import (
    EvaluationRun,
    PendingStudy,
    SearchTarget,
    StudyInstructions,
    StudyTask,
    SxsStudy,
)
from evaluation.studies.services import StudyError, StudySpec, study_create, study_on_targets
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.evaluation import bearer, logged_in
from tests.support.runs import eager_celery, golden_file, make_target, make_version
from tests.support.stub_server import StubServer, hits_reply
from tests.support.studies import documents, finished_run, study_form

pytestmark = pytest.mark.django_db

TARGETS = ("acme-bm25", "acme-neural")


def _runs(golden_set: GoldenSet) -> tuple[EvaluationRun, EvaluationRun]:
    """Two finished runs of one version on two targets named like systems, run B sending `boost_title`;
    A answers d1..d5 and B d5..d1 on every query."""
    documents(golden_set)
    version = GoldenVersion.objects.filter(golden_set=golden_set).first() or make_version(
        golden_set, golden_file(4)
    )
    target_a, target_b = (
        SearchTarget.objects.filter(name=name).first()
        or make_target("http://127.0.0.1:9/search", golden_set, name=name)
        for name in TARGETS
    )
    ids = [q.id for q in version.golden().queries]
    forward = ["d1", "d2", "d3", "d4", "d5"]
    run_a = finished_run(version, target_a, {q: forward for q in ids}, {q: 0.6 for q in ids})
    run_b = finished_run(
        version, target_b, {q: forward[::-1] for q in ids}, {q: 0.7 for q in ids}, params={"boost_title": 2}
    )
    return run_a, run_b


def _study(golden_set: GoldenSet, rita: User, raters: list[User], **values: Any) -> SxsStudy:
    run_a, run_b = _runs(golden_set)
    spec = StudySpec(run_a=run_a, run_b=run_b, raters=raters, seed=5, answers_per_query=1, **values)
    return study_create(spec=spec, by=rita)


# --- the name chosen -------------------------------------------------------------------------------


def test_the_reviewer_s_name_is_kept_as_typed(golden_set: GoldenSet, rita: User, alice: User) -> None:
    study = _study(golden_set, rita, [alice], name="acme-neural vs bm25", rater_name="  Checkout wording ")
    assert study.rater_name == "Checkout wording"


def test_without_one_the_title_is_used_when_it_names_nothing_compared(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    study = _study(golden_set, rita, [alice], name="Spring refresh")
    assert study.rater_name == "Spring refresh"


@pytest.mark.parametrize("title", ["", "acme-neural against the old ranker", "title boost: boost_title=2"])
def test_a_title_that_names_a_system_or_none_gives_the_day(
    golden_set: GoldenSet, rita: User, alice: User, title: str
) -> None:
    study = _study(golden_set, rita, [alice], name=title)
    day = timezone.localtime(study.created)
    assert study.rater_name == f"Study of {day.day} {day:%B %Y}"
    assert study.name == (title or f"run {study.run_a_id} against run {study.run_b_id}")


def test_a_second_study_of_the_day_gets_the_time_and_the_first_keeps_its_name(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    first = _study(golden_set, rita, [alice])
    second = _study(golden_set, rita, [alice])
    assert second.rater_name.startswith(first.rater_name + ", ")
    assert re.fullmatch(r"\d\d:\d\d", second.rater_name.removeprefix(first.rater_name + ", "))
    first.refresh_from_db()
    assert first.rater_name.startswith("Study of ") and "," not in first.rater_name


@pytest.mark.parametrize(
    ("rater_name", "problem"),
    [
        ("acme-neural trial", "'acme-neural trial' names 'acme-neural', which raters may not see"),
        ("Boost_Title check", "'Boost_Title check' names 'boost_title', which raters may not see"),
        ("run 1 against run 2", "'run 1 against run 2' names a run by its number, which raters may not see"),
    ],
)
def test_a_typed_name_that_names_a_system_or_a_run_is_refused_in_words(
    golden_set: GoldenSet, rita: User, alice: User, rater_name: str, problem: str
) -> None:
    run_a, run_b = _runs(golden_set)
    client = logged_in(rita)
    form = study_form(run_a=run_a.pk, run_b=run_b.pk, raters=[alice.pk], rater_name=rater_name)

    page = client.post("/sets/help-center/studies/new/", form)

    assert page.status_code == 400 and f"name raters see: {problem}" in page.content.decode().replace(
        "&#x27;", "'"
    )
    assert not SxsStudy.objects.exists()
    with pytest.raises(StudyError) as refused:
        study_create(
            spec=StudySpec(
                run_a=run_a, run_b=run_b, raters=[alice], answers_per_query=1, rater_name=rater_name
            ),
            by=rita,
        )
    assert refused.value.problems == [f"name raters see: {problem}"]


def test_the_form_and_the_api_take_the_name_and_the_study_page_shows_it(
    golden_set: GoldenSet, rita: User, alice: User, token_for: Any
) -> None:
    run_a, run_b = _runs(golden_set)
    client = logged_in(rita)
    made = client.post(
        "/sets/help-center/studies/new/",
        study_form(run_a=run_a.pk, run_b=run_b.pk, raters=[alice.pk], rater_name="Checkout wording"),
    )
    study = SxsStudy.objects.get()
    assert made.status_code == 302 and study.rater_name == "Checkout wording"
    assert 'id="study-rater-name">Checkout wording<' in client.get(made["Location"]).content.decode()

    token = token_for(rita, "studies:write")
    body = {"run_a": run_a.pk, "run_b": run_b.pk, "raters": ["alice"], "answers_per_query": 1}
    created = Client().post(
        "/api/v1/studies/", json.dumps({**body, "rater_name": "Billing round"}), **bearer(token),
        content_type="application/json",
    )  # fmt: skip
    assert created.status_code == 201 and created.json()["rater_name"] == "Billing round"
    refused = Client().post(
        "/api/v1/studies/", json.dumps({**body, "rater_name": "acme-bm25 lists"}), **bearer(token),
        content_type="application/json",
    )  # fmt: skip
    assert refused.status_code == 400
    assert refused.json()["problems"] == [
        "name raters see: 'acme-bm25 lists' names 'acme-bm25', which raters may not see"
    ]


def test_on_targets_the_name_is_checked_before_any_run_starts_and_kept_for_the_study(
    django_capture_on_commit_callbacks: Any, golden_set: GoldenSet, rita: User, alice: User
) -> None:
    documents(golden_set)
    make_version(golden_set, golden_file(4))
    with (
        StubServer(default=hits_reply(["d1", "d2", "d3"])) as one,
        StubServer(default=hits_reply(["d3", "d2", "d1"])) as two,
    ):
        target_a = make_target(f"{one.url}/search", golden_set, name="acme-bm25")
        target_b = make_target(f"{two.url}/search", golden_set, name="acme-neural")
        values = {"seed": 1, "answers_per_query": 1, "rater_name": "acme-neural try"}
        with pytest.raises(StudyError) as refused:
            study_on_targets(
                golden_set=golden_set,
                target_a=target_a,
                target_b=target_b,
                raters=[alice],
                values=values,
                by=rita,
            )
        assert refused.value.problems == [
            "name raters see: 'acme-neural try' names 'acme-neural', which raters may not see"
        ]
        assert not EvaluationRun.objects.exists() and not PendingStudy.objects.exists()

        with eager_celery(), django_capture_on_commit_callbacks(execute=True):
            pending = study_on_targets(
                golden_set=golden_set, target_a=target_a, target_b=target_b, raters=[alice],
                values={**values, "rater_name": "Ranking check"}, by=rita,
            )  # fmt: skip
    pending.refresh_from_db()
    assert pending.status == PendingStudy.Status.CREATED and pending.study is not None
    assert pending.study.rater_name == "Ranking check"
    assert pending.study.name == "acme-bm25 against acme-neural"  # the title names both targets


def test_studies_made_before_the_name_are_named_by_their_day(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    """Migration 0022's data step: each older study named by its day, a second of one set and day with
    the time too (their titles were written for reviewers only)."""
    first = _study(golden_set, rita, [alice], name="Spring refresh")
    second = _study(golden_set, rita, [alice], name="Summer refresh")
    SxsStudy.objects.update(rater_name="")
    migration = importlib.import_module("evaluation.migrations.0022_study_rater_name")

    migration.name_by_day(apps, None)

    day = timezone.localtime(first.created)
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.rater_name == f"Study of {day.day} {day:%B %Y}"
    assert second.rater_name == f"{first.rater_name}, {timezone.localtime(second.created):%H:%M}"


# --- blind -----------------------------------------------------------------------------------------


def _rater_pages(client: Client, study: SxsStudy, rater: User) -> dict[str, str]:
    """Every page and answer a rater reads of the study, by what it is."""
    pages = {path: client.get(path) for path in ("/", "/sxs/", "/queue/")}
    texts = {path: response.content.decode() for path, response in pages.items()}
    for task in StudyTask.objects.filter(study=study, rater=rater):
        texts[f"task {task.token}"] = client.get(f"/sxs/{task.token}/").content.decode()
        answer = {"revision": task.revision, "preference": 1, "reasons": ["relevance"], "note": "fine"}
        saved = client.post(f"/sxs/{task.token}/answer/", json.dumps(answer), content_type="application/json")
        texts[f"answer {task.token}"] = saved.content.decode()
        undone = client.post(
            f"/sxs/{task.token}/undo/",
            json.dumps({"revision": task.revision + 1}),
            content_type="application/json",
        )
        texts[f"undo {task.token}"] = undone.content.decode()
    following = client.get("/sxs/next/", follow=True)
    texts["next"] = following.content.decode()
    return texts


def test_no_system_run_rank_label_or_position_reaches_a_rater(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    StudyInstructions.objects.create(name="default", version=1, text="Which is better?")
    study = _study(
        golden_set,
        rita,
        [alice],
        name="acme-neural with boost_title against acme-bm25",
        instructions="Which list would you rather get?",
    )
    assert str(study.instructions) == "default@2"  # the internal label of the words raters read
    run_ids = {study.run_a_id, study.run_b_id}
    client = logged_in(alice)

    for what, text in _rater_pages(client, study, alice).items():
        body = text.split("<main>", 1)[-1]
        for secret in (
            *TARGETS,
            "boost_title",
            "default@",
            study.name,
            "/runs/",
            "baseline",
            "candidate",
            "rank",
        ):
            assert secret.casefold() not in body.casefold(), (what, secret)
        for run_id in run_ids:
            assert not re.search(rf"\brun\s*#?{run_id}\b", body, re.IGNORECASE), (what, run_id)
        assert not re.search(r"\bStudy \d+\b", body), what  # never a position in a list
    assert study.rater_name.startswith("Study of ")  # the title names systems: the day instead
    listing = client.get("/sxs/").content.decode()
    task = StudyTask.objects.filter(study=study).first()
    assert task is not None
    task_page = client.get(f"/sxs/{task.token}/").content.decode()
    assert study.rater_name in listing and study.rater_name in task_page


def test_a_new_study_leaves_the_raters_names_of_the_others_as_they_were(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    client = logged_in(alice)
    older = _study(golden_set, rita, [alice], rater_name="Checkout wording")
    before = re.findall(r"<tr><td>([^<]+)</td>", client.get("/sxs/").content.decode())
    _study(golden_set, rita, [alice], rater_name="Billing round")
    after = re.findall(r"<tr><td>([^<]+)</td>", client.get("/sxs/").content.decode())
    assert before == [older.rater_name] and after == ["Billing round", "Checkout wording"]
