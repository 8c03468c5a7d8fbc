"""The one rule for who reviews a golden set (labeling.roles): an admin, or the reviewer role AND the set's
reviewers list, both read at every request.

Three users are on the set's reviewers list without the role: charlie (no group at all), alice (a rater)
and dora, a reviewer whose group was removed after she made an API token, started the failing run and
became the owner of the set's target. Against every evaluation page and action (walked from the
URLconf) and every API operation (walked from the published OpenAPI schema), so a route added later is
covered without touching this file, each gets a 404 (the API: a 404 or 403, or an empty list) and
nothing in the database changes. rita, the set's reviewer, still gets through everywhere. The labeling
and golden_io pages of the set, which read the same rule, answer the three 404 too. That the admin and
`create_golden_set` refuse to put such a user on a list: tests/labeling/test_admin.py and
test_commands.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from drf_spectacular.generators import SchemaGenerator

from evaluation.experiments.services.adopt import experiment_adopt
from evaluation.experiments.services.experiments import experiment_create
from evaluation.models import (
    ApiToken,
    EvaluationRun,
    Experiment,
    ExperimentAdoption,
    PendingStudy,
    SearchTarget,
    SxsStudy,
)
from evaluation.runs.services import run_create
from evaluation.runs.tokens import api_token_create
from evaluation.studies.services import StudySpec, study_create
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from labeling.roles import reviewed_sets, reviewer_emails, reviews
from tests import factories
from tests.support.evaluation import (
    ALL_SCOPES,
    Scene,
    bearer,
    logged_in,
    target_form,
)
from tests.support.experiments import finished_experiment, tuned_answer
from tests.support.runs import golden_file, make_version
from tests.support.stub_server import StubServer

pytestmark = pytest.mark.django_db

# Who is on the set's list without the reviewer role.
WITHOUT_THE_ROLE = ["no group", "rater", "demoted reviewer"]


@dataclass
class World:
    scene: Scene
    queued: EvaluationRun  # a run still queued: what a cancel would change
    users: dict[str, User]
    tokens: dict[str, str]  # the raw API token of each user
    dora_token: ApiToken
    experiment: Experiment  # a finished experiment (docs/experiments.md, "In the app")
    queued_experiment: Experiment  # one still queued: what a cancel would change
    study: SxsStudy  # a side-by-side study of the scene's two runs
    pending: PendingStudy  # a study on two targets, waiting for its runs (one of them the queued run)
    adoption: ExperimentAdoption  # the experiment's winner in use on the target: what a revert would undo

    @property
    def golden_set(self) -> GoldenSet:
        return self.scene.golden_set

    @property
    def target(self) -> SearchTarget:
        return self.scene.target

    @property
    def version(self) -> GoldenVersion:
        return self.scene.version


@pytest.fixture(name="world")
def world_fixture(scene: Scene, stub: StubServer, rita: User, alice: User, charlie: User) -> World:
    dora = factories.UserFactory.create(username="dora", groups=["reviewers"])
    golden_set = scene.golden_set
    golden_set.reviewers.add(dora, alice, charlie)
    # While a reviewer, dora made a token, owned the target and started the failing run.
    dora_token, dora_raw = api_token_create(user=dora, name="ci", scopes=ALL_SCOPES)
    SearchTarget.objects.filter(pk=scene.target.pk).update(owner=dora)
    EvaluationRun.objects.filter(pk=scene.current.pk).update(triggered_by=dora)
    study = study_create(
        spec=StudySpec(
            run_a=scene.baseline, run_b=scene.current, raters=[alice], seed=1, answers_per_query=1
        ),
        by=rita,
    )
    queued = run_create(golden_version=scene.version, target=scene.target, triggered_by=dora)
    pending = PendingStudy.objects.create(
        name="on targets",
        golden_set=golden_set,
        golden_version=scene.version,
        run_a=scene.baseline,
        run_b=queued,
        options={"raters": [alice.pk], "seed": 1, "answers_per_query": 1},
        created_by=rita,
    )
    # Documents and a query the run's unjudged results name, so queueing them would add to the pool.
    factories.QueryFactory.create(golden_set=golden_set, external_id="q-1", text="query 1")
    factories.DocumentFactory.create(golden_set=golden_set, doc_id="d3")
    assert reviews(User.objects.get(pk=dora.pk), golden_set)
    dora.groups.clear()  # the demotion: she stays on the set's list
    tokens = {
        "no group": api_token_create(user=charlie, name="t", scopes=ALL_SCOPES)[1],
        "rater": api_token_create(user=alice, name="t", scopes=ALL_SCOPES)[1],
        "demoted reviewer": dora_raw,
        "reviewer": api_token_create(user=rita, name="t", scopes=ALL_SCOPES)[1],
    }
    users = {"no group": charlie, "rater": alice, "demoted reviewer": dora, "reviewer": rita}
    # An experiment with a winner (one configuration better on 18 held-out queries, of a version of its
    # own), and a newer version to re-score it on.
    stub.default = tuned_answer
    searched = make_version(golden_set, golden_file(60, version="2026-08-02"))
    experiment = finished_experiment(searched, scene.target, rita, grid={"configs": [{"w": 3}]})
    assert experiment.result is not None and experiment.result["winner"] is not None
    make_version(golden_set, golden_file(60, version="2026-08-03"))
    queued_experiment = experiment_create(
        golden_version=scene.version, target=scene.target, grid={"configs": [{"w": 1}]}, created_by=rita
    )
    # In use: the experiment's Use-this-configuration refuses while it stands (the reviewer's walk reverts
    # it first on the API, whose paths come in alphabetical order; the pages' adopt is refused in words).
    adoption = experiment_adopt(experiment=experiment, by=rita, rationale="the best held out")
    return World(
        scene, queued, users, tokens, dora_token, experiment, queued_experiment, study, pending, adoption
    )


# --- the database, all of it that these apps hold ------------------------------------------------------


def _snapshot() -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every model (and many-to-many table) of labeling, golden_io and evaluation; a token's
    `last_used` is left out (authenticating a request writes it, and it grants nothing)."""
    rows = {}
    for label in ("labeling", "golden_io", "evaluation"):
        for model in apps.get_app_config(label).get_models(include_auto_created=True):
            fields = [
                f.attname
                for f in model._meta.concrete_fields
                if not (model is ApiToken and f.name == "last_used")
            ]
            rows[model._meta.label] = list(model._default_manager.order_by("pk").values_list(*fields))
    rows["auth.User_groups"] = list(User.groups.through.objects.order_by("pk").values_list())
    return rows


def _changes(before: dict[str, list[tuple[Any, ...]]]) -> list[str]:
    after = _snapshot()
    return [label for label in before if before[label] != after[label]]


# --- the evaluation pages, from the URLconf ------------------------------------------------------------


def _namespace(name: str) -> Iterator[URLPattern]:
    for entry in get_resolver().url_patterns:
        if isinstance(entry, URLResolver) and entry.namespace == name:
            for pattern in entry.url_patterns:
                assert isinstance(pattern, URLPattern)
                yield pattern


def _page_kwargs(name: str, params: list[str], w: World) -> dict[str, Any]:
    """The objects a route names. A new parameter fails here, asking to be named."""
    values: dict[str, Any] = {}
    for param in params:
        if param == "run_id":
            # Cancelling would change the queued run, promoting the clean baseline run; every other page
            # shows the failing run.
            run = {"run_cancel": w.queued, "run_promote": w.scene.baseline}.get(name, w.scene.current)
            values[param] = run.pk
        elif param == "experiment_id":
            experiment = w.queued_experiment if name == "experiment_cancel" else w.experiment
            values[param] = experiment.pk
        elif param == "adoption_id":
            values[param] = w.adoption.pk
        elif param == "slot":  # an experiment's configuration, 1 the grid's first
            values[param] = 1
        elif param == "slug":
            values[param] = w.golden_set.slug
        elif param == "pk" and name.startswith("token"):
            values[param] = w.dora_token.pk
        elif param == "pk" and name.startswith("study_pending"):
            values[param] = w.pending.pk
        elif param == "pk" and name.startswith("study"):
            values[param] = w.study.pk
        elif param == "pk":
            values[param] = w.target.pk
        else:
            raise AssertionError(f"evaluation:{name}: say which object its parameter {param!r} names")
    return values


def _study_body(w: World, *, form: bool = False) -> dict[str, Any]:
    """A side-by-side study of the scene's two runs, as the form or the API posts it."""
    body: dict[str, Any] = {"run_a": w.scene.baseline.pk, "run_b": w.scene.current.pk, "answers_per_query": 1}
    if not form:
        return {**body, "raters": ["alice"]}
    form_only = {"selection": "all", "shown": 5, "instructions_name": "default", "instructions": "Which?"}
    rule = {"min_lower": -0.25, "min_queries": 20}
    return {**body, **form_only, **rule, "raters": [w.users["rater"].pk]}


def _target_form(w: World, **changes: str) -> dict[str, Any]:
    values = {"name": "prod-search", "url": "http://127.0.0.1:9/elsewhere", **changes}
    return target_form(w.golden_set, **values)


# What a POST to each page would change if it were let through (anything else posts nothing).
PAGE_POSTS: dict[str, Callable[[World], dict[str, Any]]] = {
    "run_new": lambda w: {"golden_version": w.version.pk, "target": w.target.pk, "params": ""},
    "run_promote": lambda w: {"rationale": "looks right to me"},
    "target_new": lambda w: _target_form(w),
    "target_edit": lambda w: _target_form(w, name=w.target.name),
    "target_schedule": lambda w: {
        "golden_set": w.golden_set.slug,
        "hour": "3",
        "minute": "0",
        "enabled": "on",
    },
    "budgets": lambda w: {"action": "defaults"},
    "tokens": lambda w: {"name": "mine", "scopes": ["read"]},
    "experiment_new": lambda w: {
        "golden_version": w.version.pk,
        "target": w.target.pk,
        "grid": '{"configs": [{"w": 1}]}',
        "metric": "ndcg",
        "split": "0.7",
        "top": "3",
        "seed": "0",
    },
    "experiment_adopt": lambda w: {"rationale": "the best held out"},
    "adoption_revert": lambda w: {"reason": "slower"},
    "study_new": lambda w: _study_body(w, form=True),
    "study_close": lambda w: {"why": "read"},
    "study_reopen": lambda w: {"why": "more raters"},
}
PAGE_QUERIES: dict[str, Callable[[World], str]] = {
    "run_compare": lambda w: f"?a={w.scene.baseline.pk}&b={w.scene.current.pk}",
    "target_trend": lambda w: f"?set={w.golden_set.slug}",
    # The evidence pages show one query: the first the failing run answered (in the study and the experiment)
    **{
        name: (lambda w: f"?query={w.scene.current.report['per_query'][0]['id']}")
        for name in ("run_query_evidence", "study_query_evidence", "experiment_query_evidence")
    },
}


def _pages(w: World) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, url, post body) of every route of the evaluation app."""
    pages = []
    for pattern in _namespace("evaluation"):
        name = str(pattern.name)
        url = reverse(f"evaluation:{name}", kwargs=_page_kwargs(name, list(pattern.pattern.converters), w))
        url += PAGE_QUERIES.get(name, lambda w: "")(w)
        pages.append((name, url, PAGE_POSTS.get(name, lambda w: {})(w)))
    return pages


def test_the_walk_finds_every_evaluation_page(world: World) -> None:
    names = {name for name, _, _ in _pages(world)}
    assert {"run_list", "run_detail", "run_report_download", "run_promote", "target_edit", "tokens"} <= names
    assert len(names) == len(list(_namespace("evaluation")))


def _send(client: Client, method: str, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, body) if method == "post" else client.get(url)


@pytest.mark.parametrize("who", WITHOUT_THE_ROLE)
def test_no_evaluation_page_or_action_opens_to_a_listed_user_without_the_role(who: str, world: World) -> None:
    client, rita = logged_in(world.users[who]), logged_in(world.users["reviewer"])
    before = _snapshot()
    wrong = []
    for name, url, body in _pages(world):
        for method in ("get", "post"):
            status = _send(client, method, url, body).status_code
            # A method the page does not serve is a 405 to everyone, the set's reviewer too.
            if status == 405 and _send(rita, method, url, body).status_code == 405:
                continue
            if status != 404:
                wrong.append(f"{method.upper()} {url} ({name}): {status}")
    assert wrong == [], f"{who} got past the rule"
    assert _changes(before) == []
    assert EvaluationRun.objects.get(pk=world.queued.pk).status == EvaluationRun.Status.QUEUED


def test_the_sets_reviewer_still_gets_every_evaluation_page_and_action(world: World) -> None:
    rita = logged_in(world.users["reviewer"])
    wrong = []
    for name, url, _ in _pages(world):
        status = rita.get(url).status_code
        if status not in (200, 405):
            wrong.append(f"GET {url} ({name}): {status}")
    for name, url, body in _pages(world):
        if name == "token_revoke":
            continue  # dora's token, not rita's: a 404 to anyone else is the point of it
        status = rita.post(url, body).status_code
        if status not in (200, 302, 303, 405):
            wrong.append(f"POST {url} ({name}): {status}")
    assert wrong == []
    assert EvaluationRun.objects.get(pk=world.queued.pk).status == EvaluationRun.Status.CANCELLED
    assert SearchTarget.objects.get(pk=world.target.pk).url == "http://127.0.0.1:9/elsewhere"


# --- the API, from its published schema ----------------------------------------------------------------


def _operations() -> list[tuple[str, str]]:
    """(method, path template) of every operation the OpenAPI schema publishes."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        (method, path)
        for path, item in schema["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    ]


def _api_url(method: str, template: str, w: World) -> str:
    def fill(match: re.Match[str]) -> str:
        param = match.group(1)
        if param == "slug":
            return w.golden_set.slug
        if param == "name":
            return w.version.name
        if param == "fmt":
            return "csv" if template.startswith("/api/v1/studies/") else "json"
        if param == "id" and template.startswith("/api/v1/studies/pending/"):
            return str(w.pending.pk)
        if param == "id" and template.startswith("/api/v1/studies/"):
            return str(w.study.pk)
        if param == "id" and template.startswith("/api/v1/runs/"):
            return str(w.queued.pk if template.endswith("/cancel/") else w.scene.current.pk)
        if param == "id" and template.startswith("/api/v1/targets/"):
            return str(w.target.pk)
        if param == "adoption_id":
            return str(w.adoption.pk)
        if param == "id" and template.startswith("/api/v1/experiments/"):
            return str((w.queued_experiment if template.endswith("/cancel/") else w.experiment).pk)
        raise AssertionError(f"{method.upper()} {template}: say which object {{{param}}} names")

    return re.sub(r"\{(\w+)\}", fill, template)


API_BODIES: dict[str, Callable[[World], dict[str, Any]]] = {
    "/api/v1/runs/": lambda w: {"golden_set": w.golden_set.slug, "target": w.target.name},
    "/api/v1/experiments/": lambda w: {
        "golden_set": w.golden_set.slug,
        "target": w.target.name,
        "grid": {"configs": [{"w": 1}]},
    },
    "/api/v1/experiments/{id}/use/": lambda w: {"rationale": "the best held out"},
    "/api/v1/experiments/{id}/adoptions/{adoption_id}/revert/": lambda w: {"reason": "slower"},
    "/api/v1/experiments/{id}/gaps/": lambda w: {"to": "raters"},
    "/api/v1/studies/": _study_body,
    "/api/v1/studies/{id}/reopen/": lambda w: {"why": "more raters"},
}
# The POSTs that create something answer 201; the rest 200.
CREATED = ("/api/v1/runs/", "/api/v1/experiments/", "/api/v1/experiments/{id}/use/",
           "/api/v1/experiments/{id}/rescore/", "/api/v1/studies/")  # fmt: skip


def _api_call(token: str, method: str, template: str, w: World) -> Any:
    url = _api_url(method, template, w)
    if method == "get":
        return Client().get(url, **bearer(token))
    body = json.dumps(API_BODIES.get(template, lambda w: {})(w))
    return Client().generic(method.upper(), url, body, content_type="application/json", **bearer(token))


def test_the_walk_finds_every_api_operation() -> None:
    operations = set(_operations())
    assert {("get", "/api/v1/runs/"), ("post", "/api/v1/runs/"), ("post", "/api/v1/runs/{id}/cancel/")} <= (
        operations
    )
    assert ("get", "/api/v1/runs/{id}/report/") in operations and len(operations) >= 12


@pytest.mark.parametrize("who", WITHOUT_THE_ROLE)
def test_no_api_operation_opens_to_a_listed_users_token_without_the_role(who: str, world: World) -> None:
    before = _snapshot()
    wrong = []
    for method, template in _operations():
        response = _api_call(world.tokens[who], method, template, world)
        if response.status_code == 200 and method == "get" and response["Content-Type"] != "application/json":
            wrong.append(f"GET {template}: a download ({response['Content-Type']})")
        elif response.status_code == 200 and method == "get" and "results" in response.json():
            if response.json()["results"] != [] or response.json()["count"] != 0:
                wrong.append(f"GET {template}: lists {response.json()['results']}")
        elif response.status_code not in ((404,) if method == "get" else (403, 404)):
            wrong.append(f"{method.upper()} {template}: {response.status_code} {response.content[:200]!r}")
    assert wrong == [], f"{who}'s token got past the rule"
    assert _changes(before) == []


def test_the_sets_reviewers_token_still_answers_every_api_operation(world: World) -> None:
    wrong = []
    for method, template in _operations():
        response = _api_call(world.tokens["reviewer"], method, template, world)
        if response.status_code != {"get": 200}.get(method, 201 if template in CREATED else 200):
            wrong.append(f"{method.upper()} {template}: {response.status_code}")
        elif (
            method == "get"
            and response["Content-Type"] == "application/json"
            and "results" in response.json()
        ):
            assert response.json()["count"] > 0, template
    assert wrong == []


def test_a_demoted_reviewers_token_works_again_when_the_role_comes_back(world: World) -> None:
    """Both halves are read at every request: nothing is cached across them."""
    token, dora = world.tokens["demoted reviewer"], world.users["demoted reviewer"]
    url = f"/api/v1/runs/{world.scene.current.pk}/report/"
    assert Client().get(url, **bearer(token)).status_code == 404
    dora.groups.add(Group.objects.get(name="reviewers"))
    assert Client().get(url, **bearer(token)).status_code == 200
    world.golden_set.reviewers.remove(dora)  # the role without the list: nothing again
    assert Client().get(url, **bearer(token)).status_code == 404


# --- labeling's and golden_io's pages of the set read the same rule ------------------------------------


def _set_pages(w: World) -> list[str]:
    """Every labeling and golden_io route that names only the set (and a version)."""
    urls = []
    for namespace in ("labeling", "golden_io"):
        for pattern in _namespace(namespace):
            params = list(pattern.pattern.converters)
            if "slug" not in params or set(params) - {"slug", "name"}:
                continue
            kwargs = {"slug": w.golden_set.slug, **({"name": w.version.name} if "name" in params else {})}
            urls.append(reverse(f"{namespace}:{pattern.name}", kwargs=kwargs))
    return urls


@pytest.mark.parametrize("who", WITHOUT_THE_ROLE)
def test_labeling_and_golden_io_pages_of_the_set_are_404_without_the_role(who: str, world: World) -> None:
    client = logged_in(world.users[who])
    urls = _set_pages(world)
    assert len(urls) > 20
    wrong = [f"{url}: {status}" for url in urls if (status := client.get(url).status_code) not in (404, 405)]
    assert wrong == []
    assert reviewed_sets(world.users[who]).count() == 0
    page = logged_in(world.users["reviewer"]).get(
        reverse("labeling:set_detail", args=[world.golden_set.slug])
    )
    assert page.status_code == 200


def test_the_sets_mail_reaches_only_those_on_the_list_who_review_it(
    golden_set: GoldenSet, rita: User, alice: User, charlie: User
) -> None:
    """A failing verdict and a suspended judge are mailed to `reviewer_emails`: a name on the list without
    the role is told nothing, as it is shown nothing."""
    ada = factories.UserFactory.create(username="ada", email="ada@example.org", groups=["admins"])
    dora = factories.UserFactory.create(username="dora", email="dora@example.org", groups=["reviewers"])
    golden_set.reviewers.add(alice, charlie, ada, dora)
    assert reviewer_emails(golden_set) == ["ada@example.org", "dora@example.org", "rita@example.org"]
    dora.groups.clear()
    assert reviewer_emails(golden_set) == ["ada@example.org", "rita@example.org"]
