"""One vocabulary across the pages (assay.display through the `display` filters): a stage toggle reads the
same on the targets list and the target page, the report shows params as typed with each override named
once and a finding's scope once, and a dispute's grades read lowest first on the agreement page and in
the review queue alike, whoever graded first."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from evaluation.models import EvaluationRun, SearchTarget
from evaluation.runs.services import budgets_set, run_finalize_process
from labeling.models import GoldenSet
from tests.support.disputes import dual_graded
from tests.support.evaluation import (
    Scene,
    logged_in,
    page_text,
    section_text,
)
from tests.support.runs import make_target
from tests.support.stub_server import StubServer

pytestmark = pytest.mark.django_db


@pytest.fixture(name="target")
def staged_target_fixture(stub: StubServer, golden_set: GoldenSet) -> SearchTarget:
    """The scene's target, with a stage toggle the scene's current run flips (rewrite=true)."""
    return make_target(f"{stub.url}/search", golden_set, stages={"rewrite": False}, params={"mode": "x"})


def test_a_stage_toggle_reads_the_same_on_the_targets_list_and_the_target_page(
    target: SearchTarget, rita: User
) -> None:
    client = logged_in(rita)
    listed = section_text(client.get("/targets/"), "targets")
    detail = page_text(client.get(f"/targets/{target.pk}/"))
    assert "rewrite=false" in listed and "rewrite=off" not in listed
    assert "Stage toggles rewrite=false" in detail


def test_the_report_names_params_as_typed_and_each_override_once(scene: Scene, rita: User) -> None:
    text = page_text(logged_in(rita).get(f"/runs/{scene.current.pk}/"))
    assert 'params mode="x" rewrite=true · this run overrides rewrite (target: false)' in text
    assert "(overrides" not in text
    assert 'Sent params mode="x" rewrite=true' in text
    assert "{'" not in text and "True" not in text


def test_a_findings_scope_is_shown_once(scene: Scene, rita: User) -> None:
    budgets_set(golden_set=scene.golden_set, data={"strata": {"billing": {}, "docs": {}}}, by=rita)
    EvaluationRun.objects.filter(pk=scene.current.pk).update(status="running")
    run_finalize_process(run_id=scene.current.pk)  # gated again, now with the billing stratum's budgets
    verdict = section_text(logged_in(rita).get(f"/runs/{scene.current.pk}/"), "verdict-card")
    assert re.search(r"budget · stratum billing: nDCG@k drop \d\.\d{4} >= fail budget", verdict)
    assert "stratum billing: stratum billing" not in verdict
    assert "core: core" not in verdict


def test_a_disputes_grades_read_lowest_first_on_the_agreement_page_and_in_the_review_queue(
    golden_set: GoldenSet, alice: User, bob: User, rita: User
) -> None:
    """alice (the first rater) grades the first document 3, bob 1: "1 vs 3" on both pages, no "3 vs 1"."""
    _, candidates = dual_graded(golden_set, (alice, [3, 1, 2]), (bob, [1, 1, 2]), external_id="q-7")
    doc = candidates[0].document.doc_id
    client = logged_in(rita)
    agreement = page_text(client.get(f"/sets/{golden_set.slug}/agreement/"))
    queue = page_text(client.get(f"/sets/{golden_set.slug}/disputes/"))
    assert f"{doc} (1 vs 3)" in agreement  # the hard disagreements column
    assert f"hard disagreement and relevance flip on {doc}: 1 vs 3" in agreement  # the disputed queries
    assert f"hard disagreement and relevance flip on {doc}: 1 vs 3" in queue
    assert "two grades disagree (1 vs 3)" in queue
    assert "3 vs 1" not in agreement + queue and "3/1" not in agreement
