"""Baselines (promotion, history, who may), budgets per golden set, and the rebaseline workflow writing a
branch through the git export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from dulwich.objects import Commit, Tag
from dulwich.refs import Ref
from dulwich.repo import Repo

from assay.drift import BudgetsError, load_budgets
from assay.git_export import Author, git_write
from assay.git_repo import read_file
from evaluation.models import Baseline, BudgetSet, EvaluationRun, SearchTarget
from evaluation.runs.selectors import baseline_get, baseline_list, budgets_get
from evaluation.runs.services import (
    BaselineError,
    baseline_promote,
    budgets_set,
    rebaseline_write,
    run_create,
)
from golden_io.models import GitExportConfig, GoldenVersion
from labeling.models import GoldenSet
from tests.support.runs import (
    eager_celery,
    golden_file,
    make_version,
)
from tests.support.stub_server import Reply, StubServer, hits_reply

pytestmark = pytest.mark.django_db


# ----------------------------------------------------------------------------------------- budgets


def test_a_set_without_budgets_gets_the_metrics_md_defaults(golden_set: GoldenSet) -> None:
    budgets = budgets_get(golden_set=golden_set)

    assert budgets == load_budgets(None)
    assert (budgets.core["ndcg"].warn, budgets.core["ndcg"].fail) == (0.01, 0.025)
    assert (budgets.shadow_empty_rate.warn, budgets.shadow_empty_rate.fail) == (0.005, 0.015)


def test_budgets_are_stored_normalized_with_stratum_and_shadow_overrides(
    golden_set: GoldenSet, rita: User
) -> None:
    budgets_set(
        golden_set=golden_set,
        data={
            "ndcg_max_drop": 0.03,
            "strata": {"billing": {"ndcg": {"warn": 0.005, "fail": 0.01}}},
            "shadow": {"empty_rate": {"warn": None, "fail": 0.05}},
        },
        by=rita,
    )

    budgets = budgets_get(golden_set=golden_set)
    assert budgets.core["ndcg"].fail == 0.03 and budgets.core["ndcg"].warn == 0.01
    assert budgets.strata["billing"]["ndcg"].fail == 0.01
    assert budgets.strata["billing"]["mrr"] == budgets.core["mrr"]  # not overridden: the set's own
    assert (budgets.shadow_empty_rate.warn, budgets.shadow_empty_rate.fail) == (None, 0.05)
    row = BudgetSet.objects.get(golden_set=golden_set)
    assert row.data["ndcg"] == {"warn": 0.01, "fail": 0.03} and row.updated_by == rita


def test_bad_budgets_name_every_problem_and_change_nothing(golden_set: GoldenSet, rita: User) -> None:
    budgets_set(golden_set=golden_set, data={"ndcg": {"fail": 0.05}}, by=rita)

    with pytest.raises(BudgetsError) as error:
        budgets_set(golden_set=golden_set, data={"ndgc": {"fail": 0.1}, "mrr": {"fail": -1}}, by=rita)

    assert error.value.problems == [
        "ndgc: unknown key (did you mean 'ndcg'?); expected one of ndcg, mrr, precision_at_k, empty_rate, "
        "lt3_rate, ndcg_max_drop, mrr_max_drop, precision_max_drop, empty_rate_max_rise, weighted, "
        "max_error_rate, critical_rank, shadow, strata, traffic_bands, failure_modes",
        "mrr.fail: -1 is not a positive finite number (use null to turn it off)",
    ]
    assert budgets_get(golden_set=golden_set).core["ndcg"].fail == 0.05


# ----------------------------------------------------------------------------------------- baselines


def test_a_reviewer_promotes_a_run_and_the_history_is_kept(
    finished: Any, rita: User, golden_set: GoldenSet
) -> None:
    first, second = finished(), finished()

    one = baseline_promote(run=first, by=rita, rationale="launch floor")
    two = baseline_promote(run=second, by=rita, rationale="  index rebuilt  ")

    assert baseline_get(golden_set=golden_set, target=first.target) == two
    assert two.previous == one and two.rationale == "index rebuilt" and two.approved_by == rita
    assert list(baseline_list(golden_set=golden_set)) == [two, one]


def test_only_a_reviewer_of_the_set_may_promote(finished: Any, alice: User, charlie: User) -> None:
    run = finished()

    for user in (alice, charlie):
        with pytest.raises(BaselineError, match="only a reviewer of help-center can approve a baseline"):
            baseline_promote(run=run, by=user, rationale="mine")
    assert not Baseline.objects.exists()


def test_a_run_with_errors_or_unfinished_cannot_be_a_baseline(
    finished: Any, stub: StubServer, rita: User, version: GoldenVersion, target: SearchTarget
) -> None:
    stub.on("query 4", Reply(status=500, text="down"))
    errored = finished()
    queued = run_create(golden_version=version, target=target, triggered_by=rita)

    with pytest.raises(BaselineError) as error:
        baseline_promote(run=errored, by=rita, rationale="")
    assert error.value.problems == [
        "rationale: say why this run becomes the baseline",
        f"{errored.label} has 1 errored queries: a baseline must have seen every answer "
        "(rerun it when the engine is healthy)",
    ]
    with pytest.raises(BaselineError, match="is queued: only a finished run with a report"):
        baseline_promote(run=queued, by=rita, rationale="x")


def test_a_new_golden_version_is_refused_against_the_old_baseline_unless_rebaselining(
    finished: Any,
    rita: User,
    golden_set: GoldenSet,
    target: SearchTarget,
    django_capture_on_commit_callbacks: Any,
) -> None:
    baseline_promote(run=finished(), by=rita, rationale="floor")
    newer = make_version(golden_set, golden_file(version="2026-09-01"))

    runs = []
    for rebaseline in (False, True):
        with eager_celery(), django_capture_on_commit_callbacks(execute=True):
            run = run_create(golden_version=newer, target=target, triggered_by=rita, rebaseline=rebaseline)
        run.refresh_from_db()
        runs.append(run)

    refused, accepted = runs
    assert refused.verdict == EvaluationRun.Verdict.FAIL
    assert refused.gate is not None and [f["kind"] for f in refused.gate["failures"]] == ["refusal"]
    assert accepted.verdict == EvaluationRun.Verdict.PASS
    assert accepted.gate is not None and accepted.gate["rebaseline"] is True


# ----------------------------------------------------------------------------------------- rebaseline


@pytest.fixture
def export(tmp_path: Path, golden_set: GoldenSet, version: GoldenVersion) -> GitExportConfig:
    """A golden set exported to a local repository: the version's file committed and tagged."""
    config = GitExportConfig.objects.create(
        golden_set=golden_set,
        repository_path=str(tmp_path / "relevance"),
        branch="main",
        file_path="golden.json",
    )
    git_write(
        repository_path=config.repository_path,
        branch="main",
        files={"golden.json": version.content_bytes},
        message="golden@2026-08-01",
        author=Author("Rita", "rita@example.org"),
        tag=version.tag,
    )
    return config


def test_rebaseline_writes_the_artifact_and_notes_on_a_branch_from_the_version_tag(
    finished: Any, stub: StubServer, rita: User, export: GitExportConfig, golden_set: GoldenSet
) -> None:
    old = finished()
    baseline_promote(run=old, by=rita, rationale="launch floor")
    stub.on("query 1", hits_reply(["d2", "d1", "d3"]))
    new = finished()

    baseline = rebaseline_write(
        run=new, by=rita, rationale="Synonym pack v2 shipped; billing reviewed by hand."
    )

    assert baseline.git_branch == "rebaseline/golden@2026-08-01"
    assert baseline.approved_by == rita and baseline.run == new and baseline.previous is not None
    assert baseline_get(golden_set=golden_set, target=new.target) == baseline
    path = export.repository_path
    artifact = read_file(path, baseline.git_branch, "baseline/relevance.json")
    assert artifact is not None and json.loads(artifact) == new.report
    notes = (read_file(path, baseline.git_branch, "RELEVANCE_NOTES.md") or b"").decode()
    assert "Synonym pack v2 shipped; billing reviewed by hand." in notes
    assert "Approved by: rita" in notes
    assert f"Replaces: run {old.pk}" in notes
    assert "| nDCG@k |" in notes and "(rebaseline)" in notes  # the before/after table
    assert "| q-1 |" in notes  # the top loser, with its rank changes
    assert "None: every judged document's key resolved" in notes
    with Repo(path) as repo:
        commit = repo[baseline.git_commit.encode()]
        tagged = repo[repo.refs[Ref(b"refs/tags/golden@2026-08-01")]]
        assert isinstance(commit, Commit) and isinstance(tagged, Tag)
        assert commit.parents == [tagged.object[1]]  # the PR branch starts at the golden version's commit
        assert b"Approved-by: rita" in commit.message
    assert read_file(path, "main", "RELEVANCE_NOTES.md") is None  # main itself is untouched


def test_rebaseline_without_a_git_export_records_nothing(finished: Any, rita: User) -> None:
    run = finished()

    with pytest.raises(BaselineError, match="golden set help-center has no git export configured"):
        rebaseline_write(run=run, by=rita, rationale="x")
    assert not Baseline.objects.exists()


def test_rebaseline_refused_by_git_records_nothing(
    finished: Any, rita: User, export: GitExportConfig, tmp_path: Path
) -> None:
    run = finished()
    (tmp_path / "a-file").write_text("not a directory")
    GitExportConfig.objects.filter(pk=export.pk).update(repository_path=str(tmp_path / "a-file" / "repo"))

    with pytest.raises(BaselineError, match="git export to"):
        rebaseline_write(run=run, by=rita, rationale="x")
    assert not Baseline.objects.exists()
