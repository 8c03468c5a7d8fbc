"""Baselines: who may approve one, promotion with a rationale, the rebaseline workflow through the
golden set's git export (docs/runs.md, "Baselines, budgets, rebaseline"), and gating a run again against
its baseline re-scored on the run's golden version ("A new golden version: re-scoring the baseline")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from assay.drift import Budgets, compare, render_markdown
from assay.storable import text_problem
from evaluation.runs.enqueue import run_notify_on_commit
from evaluation.runs.hooks import baseline_problems, baseline_promoted_send
from evaluation.runs.models import Baseline, BaselineRescore, EvaluationRun
from evaluation.runs.selectors import baseline_get, budgets_get
from evaluation.runs.services.finalize import run_gate
from evaluation.runs.services.rescore import baseline_rescore_get_or_create
from evaluation.runs.services.runs import RunError
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from labeling.roles import reviews

Status = EvaluationRun.Status


class BaselineError(RunError):
    """A run that cannot become a baseline, or a promotion this user may not make."""


def _promotion_problems(run: EvaluationRun, by: Any, rationale: str, *, lock: bool = False) -> list[str]:
    problems = []
    golden_set = run.golden_version.golden_set
    if not reviews(by, golden_set):
        problems.append(f"only a reviewer of {golden_set.slug} can approve a baseline")
    unstorable = text_problem(rationale, free_text=True)
    if not rationale.strip():
        problems.append("rationale: say why this run becomes the baseline")
    elif unstorable:
        problems.append(f"rationale: {unstorable}")
    if run.status != Status.SUCCEEDED or run.report is None:
        problems.append(f"{run.label} is {run.status}: only a finished run with a report can be a baseline")
    elif run.errors:
        problems.append(
            f"{run.label} has {run.errors} errored queries: a baseline must have seen every answer "
            "(rerun it when the engine is healthy)"
        )
    # What the capabilities built on runs refuse (a set's "a passed study first" setting, docs/sxs.md);
    # with `lock`, what they read stays as read until the promotion commits.
    problems += baseline_problems(run, lock=lock)
    return problems


@transaction.atomic
def baseline_promote(
    *, run: EvaluationRun, by: Any, rationale: str, git: Mapping[str, Any] | None = None
) -> Baseline:
    """Make `run` the baseline of its (golden set, target), recording who approved it and why. The
    previous baseline stays as history (`previous`). Raises BaselineError naming every reason it cannot,
    among them a promotion that would change nothing: the run is the baseline in force already (through
    git, `rebaseline_write`, it may be promoted again: that writes its artifact to the export). When the
    set requires a passed study, the passed studies the promotion rests on are closed by it, their
    verdict frozen as read here (docs/sxs.md, "Closing a study")."""
    run = EvaluationRun.objects.select_related("golden_version__golden_set", "target").get(pk=run.pk)
    problems = _promotion_problems(run, by, rationale, lock=True)
    golden_set = GoldenSet.objects.select_for_update(no_key=True).get(pk=run.golden_version.golden_set_id)
    previous = baseline_get(golden_set=golden_set, target=run.target)
    if previous is not None and previous.run_id == run.pk and not git:
        problems.append(
            f"{run.label} is already the baseline of {golden_set.slug} (approved by "
            f"{previous.approved_by.get_username()} on {_iso(previous.approved_at)}): nothing to promote",
        )
    if problems:
        raise BaselineError(problems)
    git = git or {}
    baseline = Baseline.objects.create(
        golden_set=golden_set,
        target=run.target,
        run=run,
        approved_by=by,
        rationale=rationale.strip(),
        previous=previous,
        git_branch=git.get("branch", ""),
        git_commit=git.get("commit", ""),
        git_message=git.get("message", ""),
        git_pushed=bool(git.get("pushed", False)),
        git_push_error=git.get("push_error", ""),
    )
    baseline_promoted_send(baseline=baseline, by=by)  # the studies it rested on are closed with it
    return baseline


def relevance_notes(
    *, run: EvaluationRun, previous: Baseline | None, by: Any, rationale: str, budgets: Budgets
) -> str:
    """RELEVANCE_NOTES.md for a rebaseline: who approved what and why, the before/after tables (the gate
    of the new run against the baseline it replaces, as a rebaseline), and the durable keys that did not
    resolve (docs/runs.md, "Rebaseline workflow": id resolution failures as explicit as metric drops)."""
    assert run.report is not None
    version = run.golden_version
    lines = [
        f"# Relevance rebaseline: {version.golden_set.slug} golden@{version.name} on {run.target.name}",
        "",
        f"- New baseline: run {run.pk} (finished {_iso(run.finished_at)}), golden `{version.name}` "
        f"(sha256 `{version.sha256[:12]}`)",
        f"- Replaces: {_previous_text(previous)}",
        f"- Approved by: {by.get_username()} on {_iso(timezone.now())}",
        f"- Engine parameters: `{_compact(run.effective_params)}`",
        "",
        "## Rationale",
        "",
        rationale.strip(),
        "",
        "## Before / after",
        "",
    ]
    if previous is None or previous.run.report is None:
        lines += ["No earlier baseline: nothing to compare with.", ""]
    else:
        gate = compare(run.report, previous.run.report, budgets, rebaseline=True)
        lines += [
            render_markdown(gate).replace("### Relevance gate", "### Gate against the old baseline"),
            "",
        ]
    keys = run.report.get("keys", {})
    unresolved = keys.get("unresolved", [])
    lines += ["## Durable keys that did not resolve", ""]
    if not unresolved:
        lines += ["None: every judged document's key resolved to a live id.", ""]
    else:
        lines += ["| query | key | old doc id | grade | scored | why |", "|---|---|---|---:|---|---|"]
        for u in unresolved:
            lines.append(
                f"| {u['query_id']} | {u['key'] or '-'} | {u['doc_id']} | {u['grade']} | "
                f"{'yes' if u['kept'] else 'no'} | {u['detail']} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _iso(when: datetime | None) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if when else "-"


def _previous_text(previous: Baseline | None) -> str:
    if previous is None:
        return "nothing (first baseline)"
    return (
        f"{previous.run.label}, golden `{previous.run.golden_version.name}`, approved by "
        f"{previous.approved_by.get_username()} on {_iso(previous.approved_at)}"
    )


def _compact(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


def _canonical(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)


def rebaseline_branch(version: GoldenVersion) -> str:
    return f"rebaseline/golden@{version.name}"


def rebaseline_write(*, run: EvaluationRun, by: Any, rationale: str) -> Baseline:
    """The rebaseline workflow: write `baseline/relevance.json` (the run's artifact) and
    `RELEVANCE_NOTES.md` on the branch `rebaseline/golden@<version>` (started from the version's tag, else
    the export branch) of the golden set's git export, push it when a remote is set, then record the run
    as the baseline with who approved it and the commit. Nothing is recorded when the git write fails;
    a failed push keeps the local commit and is recorded on the baseline. Raises BaselineError."""
    from assay.artifacts import dump_artifact
    from assay.git_export import Author, git_write
    from assay.git_remote import Remote
    from assay.git_repo import GitExportError
    from golden_io.models import GitExportConfig

    run = EvaluationRun.objects.select_related("golden_version__golden_set", "target").get(pk=run.pk)
    problems = _promotion_problems(run, by, rationale)
    golden_set = run.golden_version.golden_set
    config = GitExportConfig.objects.filter(golden_set=golden_set).first()
    if config is None:
        problems.append(f"golden set {golden_set.slug} has no git export configured")
    if problems:
        raise BaselineError(problems)
    assert config is not None and run.report is not None
    previous = baseline_get(golden_set=golden_set, target=run.target)
    notes = relevance_notes(
        run=run, previous=previous, by=by, rationale=rationale, budgets=budgets_get(golden_set=golden_set)
    )
    version = run.golden_version
    branch = rebaseline_branch(version)
    message = (
        f"Rebaseline {golden_set.slug} on {run.target.name} to golden@{version.name} (run {run.pk})"
        f"\n\n{rationale.strip()}\n\nApproved-by: {by.get_username()}"
    )
    files = {
        "baseline/relevance.json": dump_artifact(run.report).encode(),
        "RELEVANCE_NOTES.md": notes.encode(),
    }
    remote = (
        Remote(config.remote_url, config.username_env, config.password_env) if config.remote_url else None
    )
    try:
        written = git_write(
            repository_path=config.repository_path,
            branch=branch,
            files=files,
            message=message,
            author=Author(by.get_full_name() or by.get_username(), by.email or ""),
            remote=remote,
            start_from=[f"refs/tags/{version.tag}", f"refs/heads/{config.branch}"],
        )
    except (GitExportError, OSError) as exc:
        raise BaselineError([f"git export to {config.repository_path}: {exc}"]) from exc
    return baseline_promote(
        run=run,
        by=by,
        rationale=rationale,
        git={
            "branch": branch,
            "commit": written.commit,
            "message": message,
            "pushed": written.pushed,
            "push_error": written.push_error or "",
        },
    )


@dataclass(frozen=True, slots=True)
class Regated:
    """What "re-score and gate again" did: the run as gated now, its baseline's re-score and whether it
    was made now (else the one made before was used), and the verdict before."""

    run: EvaluationRun
    rescore: BaselineRescore
    made: bool
    verdict_before: str


@transaction.atomic
def run_regate_rescored(*, run: EvaluationRun, by: Any) -> Regated:
    """The run page's "Re-score the baseline on version X and gate again": the baseline `run` was gated
    against, re-scored on the run's golden version (made now, or the one made before), and the run gated
    against it again. Who did it and when go in the gate (`regated`). Only a reviewer of the set (or an
    admin), of a finished run whose baseline is on another version. Raises BaselineError (or
    BaselineRescoreError: the lists cannot be re-scored), also when the run is already gated exactly so
    (a second click, another tab): nothing is written then, and the problem says when and by whom."""
    from assay.rescore import rescored_at

    # of=("self",): the baseline join is nullable, and PostgreSQL locks no row of an outer join.
    run = (
        EvaluationRun.objects.select_for_update(of=("self",))
        .select_related("golden_version__golden_set", "baseline__run__golden_version")
        .get(pk=run.pk)
    )
    golden_set = run.golden_version.golden_set
    problems = []
    if not reviews(by, golden_set):
        problems.append(f"only a reviewer of {golden_set.slug} can re-score its baseline")
    if run.status != Status.SUCCEEDED or run.report is None:
        problems.append(f"{run.label} is {run.status}: only a finished run with a report is gated")
    elif run.baseline is None:
        problems.append(f"{run.label} was gated without a baseline: there is no baseline to re-score")
    elif run.baseline.run.golden_version_id == run.golden_version_id:
        problems.append(f"the baseline is already on version {run.golden_version.name}: nothing to re-score")
    if problems:
        raise BaselineError(problems)
    assert run.baseline is not None and run.report is not None
    made = not BaselineRescore.objects.filter(
        source_run=run.baseline.run, golden_version=run.golden_version
    ).exists()
    rescore = baseline_rescore_get_or_create(
        baseline_run=run.baseline.run, golden_version=run.golden_version, by=by
    )
    verdict, gate = run_gate(
        report=run.report,
        baseline=run.baseline,
        budgets=budgets_get(golden_set=golden_set),
        rebaseline=run.rebaseline,
        rescore=rescore,
    )
    before = dict(run.gate or {})
    regated = before.pop("regated", None)
    same = _canonical(before) == _canonical(gate)  # the stored gate went through JSON once
    if regated and run.baseline_rescore_id == rescore.pk and same and run.verdict == verdict:
        when = _iso(datetime.fromisoformat(regated["at"]))
        raise BaselineError(
            [
                f"{run.label} is already gated against the baseline re-scored on version "
                f"{run.golden_version.name} (by {regated['by']} at {when}), with the same budgets: "
                f"gating again would change nothing (verdict {verdict})"
            ]
        )
    verdict_before = run.verdict
    gate["regated"] = {"by": by.get_username(), "at": rescored_at(timezone.now())}
    run.gate, run.verdict, run.baseline_rescore = gate, verdict, rescore
    run.save(update_fields=["gate", "verdict", "baseline_rescore"])
    run_notify_on_commit(run.pk)  # a run first told of here (a new fail or warn) is told once (docs/runs.md)
    return Regated(run, rescore, made, verdict_before)
