"""A study's verdict: the study page says pass, fail or not enough answers, both runs' pages show it, and a
set may require a passed study before a run becomes the baseline (off by default)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.models import EvaluationRun, StudyTask, SxsStudy
from evaluation.services import BaselineError, baseline_promote
from evaluation.services.studies import Answer, StudySpec, study_answer, study_create, study_setting_set
from labeling.models import GoldenSet
from tests.support.studies import two_runs

pytestmark = pytest.mark.django_db


def _answered_study(
    golden_set: GoldenSet,
    rita: User,
    raters: list[User],
    *,
    candidate: int,
    runs: tuple[EvaluationRun, EvaluationRun] | None = None,
) -> SxsStudy:
    """A study of 6 queries, every rater answering every query `candidate` in the candidate's favour."""
    run_a, run_b = runs or two_runs(golden_set, 6)
    study = study_create(
        spec=StudySpec(
            run_a=run_a,
            run_b=run_b,
            raters=raters,
            seed=5,
            answers_per_query=len(raters),
            rule={"min_lower": -0.25, "min_queries": 4, "critical_junk_fails": True},
        ),
        by=rita,
    )
    for task in StudyTask.objects.filter(study=study).select_related("rater"):
        shown = -candidate if task.candidate_left else candidate  # as the rater saw it
        study_answer(token=task.token, rater=task.rater, revision=0, answer=Answer(preference=shown))
    return study


def _page(user: User, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_study_page_and_both_run_pages_say_pass(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    study = _answered_study(golden_set, rita, [alice, bob], candidate=2)

    page = _page(rita, f"/studies/{study.pk}/")
    assert '<span class="badge pass">pass</span>' in page and "Offline against people" in page
    for run in (study.run_a, study.run_b):
        run_page = _page(rita, f"/runs/{run.pk}/")
        assert f"Study {study.pk}" in run_page and '<span class="badge pass">pass</span>' in run_page


def test_a_study_preferring_the_baseline_fails_and_one_without_answers_says_so(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    failing = _answered_study(golden_set, rita, [alice], candidate=-3)
    assert '<span class="badge fail">fail</span>' in _page(rita, f"/studies/{failing.pk}/")

    StudyTask.objects.filter(study=failing).update(answered_at=None, preference=None, revision=2)
    page = _page(rita, f"/studies/{failing.pk}/")
    assert "not enough answers" in page
    failing.refresh_from_db()
    assert failing.verdict == "not_enough"


def test_a_set_may_require_a_passed_study_before_a_baseline(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    run_a, run_b = two_runs(golden_set, 6)
    # Off by default: any finished run without errors may be promoted.
    baseline_promote(run=run_a, by=rita, rationale="first")
    study_setting_set(golden_set=golden_set, require_passed_study=True, by=rita)

    with pytest.raises(BaselineError) as error:
        baseline_promote(run=run_b, by=rita, rationale="better")
    assert error.value.problems == [
        "golden set help-center requires a passed side-by-side study before a run becomes the baseline, and "
        f"run {run_b.pk} is the candidate of none (create one from its page)"
    ]

    passed = _answered_study(golden_set, rita, [alice, bob], candidate=3, runs=(run_a, run_b))
    baseline_promote(run=passed.run_b, by=rita, rationale="people prefer it")
    assert EvaluationRun.objects.get(pk=passed.run_b.pk).baselines.exists()


def test_the_setting_is_changed_on_the_studies_page_by_a_reviewer(golden_set: GoldenSet, rita: User) -> None:
    client = Client()
    client.force_login(rita)

    client.post("/sets/help-center/studies/setting/", {"require_passed_study": "on"})
    assert golden_set.study_setting.require_passed_study
    page = _page(rita, "/sets/help-center/studies/")
    assert 'id="require-passed-study" checked' in page
    client.post("/sets/help-center/studies/setting/", {})
    golden_set.refresh_from_db()
    assert not golden_set.study_setting.require_passed_study
