"""Closing and reopening a side-by-side study, and what a promotion to baseline asks of a study
(docs/sxs.md, "Closing a study" and "The verdict on the run pages, and before a baseline").

A close reads the verdict from the answers as they stand and freezes it, with the time: from then on no
answer or undo is taken (`evaluation.studies.services.studies.study_answer` refuses with 409 `closed`) and the
analysis is not made again. Reopening is an explicit act with a reason. Both are recorded as
`StudyEvent` rows (who, when, why, the verdict as it stood). A promotion of a run to baseline under the
set's "a passed study before a baseline" setting closes the passed studies it rested on, inside the
promotion's transaction, so their verdict cannot move after the baseline was set on it.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from assay.storable import text_problem
from evaluation.runs.models import Baseline, EvaluationRun
from evaluation.studies.models import StudyEvent, StudySetting, StudyTask, SxsStudy
from evaluation.studies.services.analysis import study_analysis
from evaluation.studies.services.studies import StudyError
from labeling.roles import reviews

WHY_MAX = 2000


class StudyStateError(StudyError):
    """A close of a closed study or a reopening of an open one: nothing changed (the API's 409)."""


def _when(moment: Any) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def _held(studies: QuerySet[SxsStudy]) -> list[SxsStudy]:
    """The studies locked, and every task of theirs: an answer or undo holds its task's lock until it
    commits (`studies._locked_task`), so one in flight is in the verdict read after this, and one after it
    waits for the commit and then finds the study closed."""
    held = list(studies.select_for_update().order_by("pk"))
    list(StudyTask.objects.select_for_update().filter(study__in=held).order_by("pk").values_list("pk"))
    return held


def _why_problems(why: str, *, required: bool) -> list[str]:
    problem = text_problem(why, WHY_MAX, free_text=True)
    if problem:
        return [f"why: {problem}"]
    if required and not why.strip():
        return ["why: say why the study opens again (it is recorded with your name)"]
    return []


def _record_close(study: SxsStudy, *, by: Any, why: str, baseline: Baseline | None = None) -> StudyEvent:
    """Close a held (locked) open study: its verdict read now and frozen with this time."""
    verdict = study_analysis(study)["verdict"]["result"]
    now = timezone.now()
    SxsStudy.objects.filter(pk=study.pk).update(closed_at=now)
    study.closed_at = now
    return StudyEvent.objects.create(
        study=study,
        kind=StudyEvent.Kind.CLOSED,
        by=by,
        at=now,
        why=why.strip(),
        verdict=verdict,
        baseline=baseline,
    )


@transaction.atomic
def study_close(*, study: SxsStudy, by: Any, why: str = "") -> SxsStudy:
    """Close `study`: its verdict read from the answers as they stand and frozen with the time, no answer
    or undo taken after. Only a reviewer of its set; `why` is optional. Raises StudyError in words (a
    StudyStateError when it is closed already); nothing changes then."""
    problems = _why_problems(why, required=False)
    if not reviews(by, study.golden_set):
        problems.insert(0, f"only a reviewer of {study.golden_set.slug} can close its studies")
    if problems:
        raise StudyError(problems)
    (held,) = _held(SxsStudy.objects.filter(pk=study.pk))
    if held.closed_at is not None:
        raise StudyStateError(
            [f"study {held.pk} is closed already (since {_when(held.closed_at)}): nothing changed"]
        )
    _record_close(held, by=by, why=why)
    return held


@transaction.atomic
def study_reopen(*, study: SxsStudy, by: Any, why: str) -> SxsStudy:
    """Reopen a closed `study`: answers and undos are taken again and its verdict follows them (made
    again when next read). An explicit act: only a reviewer of its set, with a reason, recorded. Raises
    StudyError in words (a StudyStateError when it is open); nothing changes then."""
    problems = _why_problems(why, required=True)
    if not reviews(by, study.golden_set):
        problems.insert(0, f"only a reviewer of {study.golden_set.slug} can reopen its studies")
    if problems:
        raise StudyError(problems)
    held = SxsStudy.objects.select_for_update().get(pk=study.pk)
    if held.closed_at is None:
        raise StudyStateError([f"study {held.pk} is open: there is nothing to reopen"])
    SxsStudy.objects.filter(pk=held.pk).update(closed_at=None)
    held.closed_at = None
    StudyEvent.objects.create(
        study=held, kind=StudyEvent.Kind.REOPENED, by=by, why=why.strip(), verdict=held.verdict
    )
    return held


# ------------------------------------------------------------------------------- before a baseline


def _passed_studies(run: EvaluationRun, *, lock: bool) -> tuple[list[str], list[SxsStudy]]:
    """Under the set's setting, why `run` may not become the baseline (or nothing) and the passed studies
    it may rest on (or none: the setting is off). Locked with their tasks when `lock` (inside the
    promotion's transaction): no answer moves their verdicts until it commits."""
    setting = StudySetting.objects.filter(golden_set_id=run.golden_version.golden_set_id).first()
    if setting is None or not setting.require_passed_study:
        return [], []
    studies = SxsStudy.objects.filter(run_b=run).order_by("pk")
    verdicts = {s: study_analysis(s)["verdict"]["result"] for s in (_held(studies) if lock else studies)}
    passed = [s for s, verdict in verdicts.items() if verdict == SxsStudy.Verdict.PASS]
    if passed:
        return [], passed
    if verdicts:
        listed = ", ".join(f"study {s.pk}: {verdict}" for s, verdict in verdicts.items())
        which = f"none of {run.label}'s studies as the candidate passed ({listed})"
    else:
        which = f"{run.label} is the candidate of none (create one from its page)"
    problem = (
        f"golden set {run.golden_version.golden_set.slug} requires a passed side-by-side study before a run "
        f"becomes the baseline, and {which}"
    )
    return [problem], []


def baseline_study_problems(run: EvaluationRun, *, lock: bool = False) -> list[str]:
    """Why `run` may not become the baseline under its set's study setting: when the set requires a
    passed study, the run must be run B (the candidate) of a study whose verdict, made from the answers
    as they stand (or frozen when it closed), is pass (an inconclusive one never counts). With `lock`
    (inside a promotion's transaction) the studies and their tasks stay locked until it commits."""
    return _passed_studies(run, lock=lock)[0]


def baseline_studies_close(*, baseline: Baseline, by: Any) -> list[SxsStudy]:
    """Close the passed studies the promotion to `baseline` rested on (the set requires one), those
    still open, recording the baseline: their verdict stays the one the promotion read. Called inside
    the promotion's transaction, after `baseline_study_problems(run, lock=True)`."""
    run = baseline.run
    _, passed = _passed_studies(run, lock=True)
    why = (
        f"{run.label} became the baseline of {baseline.golden_set.slug} on this "
        "study's pass (the set requires a passed study before a baseline)"
    )
    closed = [s for s in passed if s.closed_at is None]
    for study in closed:
        _record_close(study, by=by, why=why, baseline=baseline)
    return closed
