"""Every page of the app with real content, for the browser tests that visit them all (no test here).

`site` builds one populated help-center set on top of tests/support/evaluation.py's `scene` (a promoted
baseline run and a failing run on a stub engine): alice's open assignment, a query alice and bob
disagree on by two grades (in the review queue, adjudicable), a frozen grade bob overturns alone (a
proposal), a calibration round both graded, two machine judges (one qualified), a second golden
version to diff, a nightly schedule, an API token, a finished experiment (a 2 x 2 grid), and ada, an admin
with Django's admin site.
`PAGES` names every page a person opens (its path resolved from the site through the URL conf) and
`ROLE_PAGES` which of them each role opens.

A test module takes `site` with `from tests.browser.site import *` (`__all__`), and the fixtures it
stands on come from tests/conftest.py's `pytest_plugins`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from evaluation.models import Experiment
from evaluation.runs.services.schedules import schedule_set
from evaluation.runs.tokens import api_token_create
from labeling import services
from labeling.models import Assignment, CalibrationRound, GoldenSet, Judge, Query
from tests import factories
from tests.support.disputes import dual_graded
from tests.support.evaluation import Scene
from tests.support.experiments import finished_experiment
from tests.support.judge_labels import make_judge, qualify
from tests.support.runs import golden_file, make_version

__all__ = ["site_fixture"]

# The user each role signs in as (tests/conftest.py's cast, and ada); "anonymous" signs in as no one.
USERS = {"rater": "alice", "reviewer": "rita", "admin": "ada"}


@dataclass
class Site:
    scene: Scene
    assignment: Assignment
    disputed: Query
    calibration: CalibrationRound
    next_version: str
    judge: Judge
    experiment: Experiment  # finished, a 2 x 2 grid: its heat map

    @property
    def golden_set(self) -> GoldenSet:
        return self.scene.golden_set


@pytest.fixture(name="site")
def site_fixture(scene: Scene, alice: User, bob: User, rita: User) -> Site:
    golden_set = scene.golden_set
    factories.UserFactory.create(username="ada", groups=["admins"], is_staff=True, is_superuser=True)
    assignment = factories.AssignmentFactory.create(
        query=factories.pooled_query(golden_set, 4, text="refund policy for annual plan"), rater=alice
    )
    disputed, _ = dual_graded(
        golden_set, (alice, [3, 2, 1, 0]), (bob, [1, 2, 1, 0]), external_id="q-0471", text="money back"
    )
    _overturned(golden_set, bob)
    calibration = services.calibration_round_start(
        golden_set=golden_set,
        name="spring",
        queries=[factories.pooled_query(golden_set, 3, text=f"cancel plan {i}") for i in range(2)],
        raters=[alice, bob],
        by=rita,
    )
    for i, work in enumerate(calibration.assignments.order_by("id")):
        _graded(work, [3, 2 - i % 2, 0])
    next_version = make_version(golden_set, golden_file(8, version="2026-09-01")).name
    schedule_set(golden_set=golden_set, target=scene.target, hour=3)
    api_token_create(user=rita, name="CI gate", scopes=["read"])
    judge = make_judge(golden_set, "grader-1")
    qualify(judge, rita)
    make_judge(golden_set, "grader-2")  # a second judge, for the compare page
    experiment = finished_experiment(scene.version, scene.target, rita)
    return Site(scene, assignment, disputed, calibration, next_version, judge, experiment)


def _overturned(golden_set: GoldenSet, rater: User) -> None:
    """A query whose frozen grade 3 the rater overturns to 0 alone and marks done: a proposal to review."""
    query = factories.pooled_query(golden_set, 2, text="cancel annual plan")
    first = query.candidates.order_by("best_rank")[0]
    factories.FrozenLabelFactory.create(query=query, document=first.document, grade=3)
    _graded(factories.AssignmentFactory.create(query=query, rater=rater), [0, 1])


def _graded(assignment: Assignment, grades: list[int]) -> None:
    """The assignment's pool graded in rank order, with a note, and marked done, as the grading page does."""
    candidates, rater = assignment.query.candidates.order_by("best_rank"), assignment.rater
    for candidate, grade in zip(candidates, grades, strict=True):
        services.judgment_submit(
            assignment_id=assignment.pk, rater=rater, candidate_id=candidate.pk, grade=grade, note="old"
        )
    services.assignment_done(assignment_id=assignment.pk, rater=rater)


Where = Callable[[Site], str]


def _compare(site: Site) -> str:
    return urlencode({"a": site.scene.baseline.pk, "b": site.scene.current.pk})


def _versions(site: Site) -> str:
    return urlencode({"old": site.scene.version.name, "new": site.next_version})


def _loser(site: Site) -> str:
    gate = site.scene.current.gate or {}
    return str(gate["top_losers"][0]["id"])


def _slug(site: Site) -> str:
    return site.golden_set.slug


def _at(name: str, *args: Callable[[Site], object], query: Callable[[Site], str] | None = None) -> Where:
    """The page named `name` in the URL conf, its arguments and query string drawn from the site."""

    def path(site: Site) -> str:
        url = reverse(name, args=[arg(site) for arg in args])
        return f"{url}?{query(site)}" if query else url

    return path


# Every page a person opens, by what people call it.
PAGES: dict[str, Where] = {
    "login": _at("login"),
    "home": _at("home"),
    "queue": _at("labeling:queue"),
    "grading": _at("labeling:grade", lambda s: s.assignment.pk),
    "grading help": _at("labeling:grade", lambda s: s.assignment.pk),
    "grading, can't judge": _at("labeling:grade", lambda s: s.assignment.pk),
    "set list": _at("labeling:set_list"),
    "set detail": _at("labeling:set_detail", _slug),
    "labels summary": _at("labeling:labels_summary", _slug),
    "query review": _at("labeling:query_review", _slug, lambda s: s.disputed.pk),
    "import": _at("labeling:import", _slug),
    "agreement": _at("labeling:agreement", _slug),
    "review queue": _at("labeling:disputes", _slug),
    "proposals": _at("labeling:proposals", _slug),
    "adjudication": _at("labeling:adjudicate", _slug, lambda s: s.disputed.pk),
    "calibration rounds": _at("labeling:calibration_list", _slug),
    "calibration round": _at("labeling:calibration_round", _slug, lambda s: s.calibration.pk),
    "judges": _at("labeling:judge_list", _slug),
    "new judge": _at("labeling:judge_new", _slug),
    "judge detail": _at("labeling:judge_detail", _slug, lambda s: s.judge.pk),
    "judge qualification": _at("labeling:judge_qualification", _slug, lambda s: s.judge.pk),
    "judge compare": _at("labeling:judge_compare", _slug),
    "golden versions": _at("golden_io:set_list"),
    "version list": _at("golden_io:version_list", _slug),
    "version detail": _at("golden_io:version_detail", _slug, lambda s: s.scene.version.name),
    "version diff": _at("golden_io:diff", _slug, query=_versions),
    "working diff": _at("golden_io:diff", _slug),
    "freeze": _at("golden_io:freeze", _slug),
    "git export": _at("golden_io:export_config", _slug),
    "runs": _at("evaluation:run_list"),
    "new run": _at("evaluation:run_new"),
    "run report": _at("evaluation:run_detail", lambda s: s.scene.current.pk),
    "baseline report": _at("evaluation:run_detail", lambda s: s.scene.baseline.pk),
    "compare picker": _at("evaluation:run_compare", query=_compare),
    "side by side": _at("evaluation:run_compare", query=lambda s: f"{_compare(s)}&query={_loser(s)}"),
    "targets": _at("evaluation:target_list"),
    "new target": _at("evaluation:target_new"),
    "target detail": _at("evaluation:target_detail", lambda s: s.scene.target.pk),
    "target edit": _at("evaluation:target_edit", lambda s: s.scene.target.pk),
    "trend": _at("evaluation:target_trend", lambda s: s.scene.target.pk, query=lambda s: f"set={_slug(s)}"),
    "budgets": _at("evaluation:budgets", _slug),
    "baselines": _at("evaluation:baselines", _slug),
    "API tokens": _at("evaluation:tokens"),
    "experiments": _at("evaluation:experiment_list"),
    "new experiment": _at("evaluation:experiment_new"),
    "experiment": _at("evaluation:experiment_detail", lambda s: s.experiment.pk),
    "Django admin": _at("admin:index"),
    "admin golden sets": _at("admin:labeling_goldenset_changelist"),
    "admin golden set": _at("admin:labeling_goldenset_change", lambda s: s.golden_set.pk),
    "not found (404)": lambda s: "/no-such-page/",
    "doc": _at("doc_page", lambda s: "metrics"),
    "API docs": _at("api-docs"),  # Swagger UI, as it loads (tests/browser/test_api_docs.py opens it further)
}
# Left out: the schema and downloads, which are not pages.
# Pages that are a state of another: the key that opens it once the page has loaded.
KEYS = {"grading help": "?", "grading, can't judge": "x"}
# Pages their script draws after they load (Swagger UI, from the schema it fetches): what shows once drawn.
DRAWN = {"API docs": ".swagger-ui .opblock"}
RATERS = ("queue", "grading", *KEYS)
ADMINS = ("Django admin", "admin golden sets", "admin golden set")

# The pages of each role; a refused page shows the error page (a rater asking for a reviewer's page is
# told 404, a reviewer asking for the rater's queue 403).
ROLE_PAGES: dict[str, list[str]] = {
    "anonymous": ["login"],
    "rater": ["home", *RATERS, "runs", "doc", "API docs"],
    "reviewer": [*(name for name in PAGES if name not in ("login", *RATERS, *ADMINS)), "queue"],
    "admin": ["home", *ADMINS, "API docs"],
}
