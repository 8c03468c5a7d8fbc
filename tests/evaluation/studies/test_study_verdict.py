"""A study's verdict: the study page says pass, fail or inconclusive (docs/sxs.md, "Verdict"), both runs'
pages, the set's list and the API show it as the answers stand, a study stored by the older rule reads
with the new words, and a set may require a passed study before a run becomes the baseline (off by
default), which an inconclusive study never is."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.test import Client

from evaluation.models import EvaluationRun, StudyTask, SxsStudy
from evaluation.runs.services import BaselineError, baseline_promote
from evaluation.studies.services import study_setting_set
from labeling.models import GoldenSet
from tests.support.evaluation import TokenFor, bearer, token_for_fixture  # noqa: F401  (fixture by name)
from tests.support.studies import answered_study, two_runs

pytestmark = pytest.mark.django_db


def _page(user: User, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_study_page_and_both_run_pages_say_pass(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    study = answered_study(golden_set, rita, [alice, bob], candidate=2)

    page = _page(rita, f"/studies/{study.pk}/")
    assert '<span class="badge pass">pass</span>' in page and "Offline against people" in page
    for run in (study.run_a, study.run_b):
        run_page = _page(rita, f"/runs/{run.pk}/")
        assert f"Study {study.pk}" in run_page and '<span class="badge pass">pass</span>' in run_page


def test_a_study_preferring_the_baseline_fails_and_one_without_answers_says_so(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    failing = answered_study(golden_set, rita, [alice], candidate=-3)
    assert '<span class="badge fail">fail</span>' in _page(rita, f"/studies/{failing.pk}/")

    StudyTask.objects.filter(study=failing).update(answered_at=None, preference=None, revision=2)
    page = _page(rita, f"/studies/{failing.pk}/")
    assert '<span class="badge warn">inconclusive</span>' in page
    assert "4 more fully answered queries would reach the rule&#x27;s minimum of 4" in page
    failing.refresh_from_db()
    assert failing.verdict == "inconclusive"


STRADDLING = [3, -3, 2, -2, 1, -1]  # the mean 0, widely spread: the interval reaches below -0.25 and above 0


def test_a_study_that_cannot_tell_is_inconclusive_everywhere_with_how_many_more_queries(
    golden_set: GoldenSet, rita: User, alice: User, token_for: TokenFor
) -> None:
    study = answered_study(golden_set, rita, [alice], candidate=STRADDLING)
    badge = '<span class="badge warn">inconclusive</span>'

    page = _page(rita, f"/studies/{study.pk}/")
    assert badge in page and "neither non-inferiority nor a loss is shown" in page
    study.refresh_from_db()
    assert study.analysis is not None
    more = study.analysis["verdict"]["more"]
    assert more["toward"] == "pass" and more["total"] > 6 and more["queries"] == more["total"] - 6
    assert (
        f"about {more['queries']} more fully answered queries ({more['total']} in all, at this mean and"
        " spread) would likely decide it toward pass; the study asks 6, so a larger study is needed"
    ) in page
    for run in (study.run_a, study.run_b):
        run_page = _page(rita, f"/runs/{run.pk}/")
        assert f"Study {study.pk}" in run_page and badge in run_page
    listing = _page(rita, "/sets/help-center/studies/")
    assert badge in listing
    token = token_for(rita, "read")
    api = Client().get("/api/v1/studies/?golden_set=help-center", **bearer(token)).json()
    assert [s["verdict"] for s in api["results"]] == ["inconclusive"]


def test_an_inconclusive_study_never_counts_as_passed_before_a_baseline(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    run_a, run_b = two_runs(golden_set, 6)
    study_setting_set(golden_set=golden_set, require_passed_study=True, by=rita)
    inconclusive = answered_study(golden_set, rita, [alice], candidate=STRADDLING, runs=(run_a, run_b))
    failed = answered_study(golden_set, rita, [alice], candidate=-3, runs=(run_a, run_b))

    with pytest.raises(BaselineError) as error:
        baseline_promote(run=run_b, by=rita, rationale="people could not tell")
    assert error.value.problems == [
        "golden set help-center requires a passed side-by-side study before a run becomes the baseline, and "
        f"none of run {run_b.pk} engine's studies as the candidate passed (study {inconclusive.pk}: "
        f"inconclusive, study {failed.pk}: fail)"
    ]


def test_a_study_stored_by_the_older_rule_reads_with_the_new_words(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    study = answered_study(golden_set, rita, [alice], candidate=STRADDLING)
    _page(rita, f"/studies/{study.pk}/")
    study.refresh_from_db()
    assert study.analysis is not None and study.analysed_key.startswith("v2:")
    # As the older rule stored it: "fail" (its lower bound is below -0.25), under a key without a version.
    old = {**study.analysis, "verdict": {"result": "fail", "why": ["..."], "rule": study.rule}}
    SxsStudy.objects.filter(pk=study.pk).update(
        analysis=old, analysed_key=study.analysed_key.removeprefix("v2:"), verdict="fail"
    )
    listing = _page(rita, "/sets/help-center/studies/")  # the list reads it again
    assert '<span class="badge warn">inconclusive</span>' in listing and "badge fail" not in listing
    study.refresh_from_db()
    assert study.verdict == "inconclusive" and study.analysis["verdict"]["more"]["toward"] == "pass"

    # The migration renames the word the older rule used for too few answers.
    SxsStudy.objects.filter(pk=study.pk).update(verdict="not_enough")
    migration = importlib.import_module("evaluation.migrations.0016_study_three_outcomes")
    migration.rename("not_enough", "inconclusive")(apps, None)
    assert SxsStudy.objects.get(pk=study.pk).verdict == "inconclusive"


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
        f"run {run_b.pk} engine is the candidate of none (create one from its page)"
    ]

    passed = answered_study(golden_set, rita, [alice, bob], candidate=3, runs=(run_a, run_b))
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
