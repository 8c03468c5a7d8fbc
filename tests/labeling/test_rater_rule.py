"""The one rule for who rates a golden set (labeling.roles): the rater role AND the set's raters list, both
read at every request, by every rater page and endpoint and by the services that save.

Four raters hold grading work (an assignment with a grade saved) and side-by-side work (study tasks, one
answered) on the set; then alice is taken off the set's raters list, bob out of the raters group (he keeps
another group) and carol out of every group. Against every rater route, walked from the URLconf (the
views of labeling.views.raters and evaluation.studies.rater_views, so a route added there later is covered
without touching this file) plus the home page: each route naming a task or assignment answers 404 to
the three, lists answer with nothing of the set, and nothing in the database changes: their saved work
stays, attributed to them. dan, still on the list, is served everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from evaluation.models import HomeSeen, StudyTask, SxsStudy
from evaluation.studies.services import StudySpec, study_create
from labeling.models import Assignment, Candidate, GoldenSet, Judgment
from labeling.roles import RATERS, rates
from tests import factories
from tests.support.studies import two_runs

pytestmark = pytest.mark.django_db

RATER_VIEWS = ("labeling.views.raters", "evaluation.studies.rater_views")
REMOVALS = ["off the list", "out of the raters group", "no group at all"]


@dataclass
class Work:
    assignment: Assignment
    candidate: Candidate
    open_task: StudyTask
    answered_task: StudyTask


@dataclass
class World:
    golden_set: GoldenSet
    study: SxsStudy
    users: dict[str, User]  # by removal, and "listed" (dan, still a rater of the set)
    work: dict[str, Work]


def _rater(name: str) -> User:
    return factories.UserFactory.create(username=name, groups=[RATERS])


@pytest.fixture(name="world")
def world_fixture(golden_set: GoldenSet, rita: User) -> World:
    names = {"off the list": "alice2", "out of the raters group": "bob2", "no group at all": "carol"}
    users = {removal: _rater(name) for removal, name in names.items()} | {"listed": _rater("dan")}
    golden_set.raters.add(*users.values())
    run_a, run_b = two_runs(golden_set, 4)
    raters = list(users.values())
    study = study_create(
        spec=StudySpec(run_a=run_a, run_b=run_b, raters=raters, seed=5, answers_per_query=len(raters)),
        by=rita,
    )
    work = {}
    for who, user in users.items():
        query = factories.pooled_query(golden_set, 2)
        assignment = factories.AssignmentFactory.create(query=query, rater=user)
        candidate = query.candidates.order_by("pk").first()
        assert candidate is not None
        factories.grade(assignment, candidate.document, 1)
        tasks = list(StudyTask.objects.filter(study=study, rater=user).order_by("pk"))
        answer = {"revision": 0, "preference": 1, "reasons": []}
        client = _client(user)
        saved = client.post(
            f"/sxs/{tasks[0].token}/answer/", json.dumps(answer), content_type="application/json"
        )
        assert saved.status_code == 200
        tasks[0].refresh_from_db()
        work[who] = Work(assignment, candidate, tasks[1], tasks[0])
    # The three removals.
    golden_set.raters.remove(users["off the list"])
    bob = users["out of the raters group"]
    bob.groups.remove(Group.objects.get(name=RATERS))
    bob.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    users["no group at all"].groups.clear()
    return World(golden_set, study, users, work)


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _rater_routes() -> Iterator[tuple[str, URLPattern]]:
    def walk(entries: list[Any], namespace: str) -> Iterator[tuple[str, URLPattern]]:
        for entry in entries:
            if isinstance(entry, URLResolver):
                yield from walk(entry.url_patterns, entry.namespace or namespace)
            elif getattr(entry.callback, "__module__", "") in RATER_VIEWS:
                yield f"{namespace}:{entry.name}", entry

    return walk(get_resolver().url_patterns, "")


def _calls(w: World, who: str) -> list[tuple[str, str, str, dict[str, Any], bool]]:
    """(route, method, url, JSON body, whether it names an object) for every rater route, naming `who`'s
    own work. A new parameter fails here, asking to be named."""
    work = w.work[who]
    calls = []
    for name, pattern in _rater_routes():
        params = list(pattern.pattern.regex.groupindex)
        kwargs: dict[str, Any] = {}
        body: dict[str, Any] = {}
        for param in params:
            if param == "pk":
                kwargs[param] = work.assignment.pk
                body = {"candidate": factories.token(work.assignment, work.candidate), "grade": 2}
            elif param == "token":
                undo = name.endswith("undo")
                task = work.answered_task if undo else work.open_task
                kwargs[param] = task.token
                body = {"revision": task.revision, "preference": -1, "reasons": []}
            else:
                raise AssertionError(f"name the object {name} takes as {param}")
        url = reverse(name, kwargs=kwargs)
        calls += [(name, "get", url, {}, bool(params)), (name, "post", url, body, bool(params))]
    return calls


def _send(client: Client, method: str, url: str, body: dict[str, Any]) -> Any:
    if method == "post":
        return client.post(url, json.dumps(body), content_type="application/json")
    return client.get(url)


def _snapshot() -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every model of labeling and evaluation, but the home page's visits (bob, a reviewer,
    records one by opening it: it grants nothing)."""
    rows = {}
    for label in ("labeling", "evaluation"):
        for model in apps.get_app_config(label).get_models(include_auto_created=True):
            if model is HomeSeen:
                continue
            fields = [f.attname for f in model._meta.concrete_fields]
            rows[model._meta.label] = list(model._default_manager.order_by("pk").values_list(*fields))
    return rows


def test_the_walk_finds_every_rater_route() -> None:
    names = {name for name, _ in _rater_routes()}
    assert {"labeling:queue", "labeling:grade", "labeling:grades", "labeling:done"} <= names
    assert {"sxs:study_tasks", "sxs:study_next", "sxs:study_task", "sxs:study_task_answer"} <= names
    assert "sxs:study_task_undo" in names


@pytest.mark.parametrize("who", REMOVALS)
def test_a_removed_rater_keeps_nothing_open(who: str, world: World) -> None:
    user = world.users[who]
    assert not rates(user, world.golden_set)
    client, dan = _client(user), _client(world.users["listed"])
    before = _snapshot()
    shown = [world.golden_set.name, world.work[who].assignment.query.text, world.work[who].open_task.token]
    wrong = []
    for name, method, url, body, named in _calls(world, who):
        response = _send(client, method, url, body)
        status = response.status_code
        if status == 405 and _send(dan, method, url, body).status_code == 405:
            continue  # a method the route does not serve, to anyone
        if named and status != 404:
            wrong.append(f"{method.upper()} {url} ({name}): {status}")
        elif not named:
            text = response.content.decode() + response.get("Location", "")
            if status not in (200, 302, 303, 403) or any(s in text for s in shown):
                wrong.append(f"{method.upper()} {url} ({name}): {status}, shows the set's work")
    home = client.get("/").content.decode()
    assert not any(s in home for s in shown), "the home page still offers the set's work"
    assert wrong == [], f"a rater {who} got past the rule"
    assert [label for label in before if before[label] != _snapshot()[label]] == []
    # Their answered work stays, attributed to them.
    assert Judgment.objects.filter(assignment__rater=user).count() == 1
    answered = StudyTask.objects.get(pk=world.work[who].answered_task.pk)
    assert answered.rater_id == user.pk and answered.answered_at is not None


def test_a_rater_still_on_the_list_is_served_everywhere(world: World) -> None:
    dan = _client(world.users["listed"])
    work = world.work["listed"]
    wrong = []
    for name, method, url, body, _ in _calls(world, "listed"):
        status = _send(dan, method, url, body).status_code
        if status not in (200, 302, 303, 405, 409, 422):
            wrong.append(f"{method.upper()} {url} ({name}): {status}")
    assert wrong == []
    assert Judgment.objects.get(assignment=work.assignment, document=work.candidate.document).grade == 2
    assert StudyTask.objects.get(pk=work.open_task.pk).preference == -1
    assert StudyTask.objects.get(pk=work.answered_task.pk).answered_at is None  # undone
    assert world.golden_set.name in dan.get("/sxs/").content.decode()


def test_a_rater_put_back_on_the_list_is_served_again(world: World) -> None:
    alice = world.users["off the list"]
    world.golden_set.raters.add(alice)
    work = world.work["off the list"]
    assert _client(alice).get(f"/assignments/{work.assignment.pk}/").status_code == 200
    assert _client(alice).get(f"/sxs/{work.open_task.token}/").status_code == 200


def test_the_study_page_says_whose_answers_came_from_raters_no_longer_on_the_set(
    world: World, rita: User
) -> None:
    page = _client(rita).get(reverse("evaluation:study_detail", args=[world.study.pk])).content.decode()
    rows = {
        who: next(row for row in page.split("<tr>") if row.startswith(f"<td>{user.username}"))
        for who, user in world.users.items()
    }
    for who in REMOVALS:
        assert "no longer rates this set" in rows[who] and "1 / " in rows[who]
    assert "no longer rates this set" not in rows["listed"]
