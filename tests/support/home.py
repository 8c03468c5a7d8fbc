"""A reviewer's home with something in each list (docs/runs.md, "What waits for you"), written straight to
the database: in the help-center set a study waiting for answers (1 of 3 answered), one fully answered,
a study waiting for its runs and one that failed, experiments finished an hour and three days ago and
one still running, runs failed two and ten days ago; in another set (developer-docs) one of each kind,
which only its own reviewer and admins may see."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from evaluation.models import EvaluationRun, Experiment, PendingStudy, StudyTask, SxsStudy
from evaluation.studies.services import StudySpec, study_create
from labeling.models import GoldenSet
from tests.support.studies import two_runs

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


@dataclass
class Home:
    waiting: SxsStudy  # 1 of 3 answers
    answered: SxsStudy  # every answer in
    pending: PendingStudy  # waiting for two queued runs
    pending_failed: PendingStudy
    finished_lately: Experiment  # an hour ago
    finished_before: Experiment  # three days ago
    running: Experiment
    failed_lately: EvaluationRun  # two days ago
    failed_long_ago: EvaluationRun  # ten days ago
    elsewhere: dict[str, object]  # of the other set: "study", "pending", "experiment", "run"


def answer(study: SxsStudy, count: int) -> None:
    """Answer the study's first `count` tasks (in token order)."""
    for task in StudyTask.objects.filter(study=study).order_by("token")[:count]:
        StudyTask.objects.filter(pk=task.pk).update(answered_at=timezone.now(), preference=1, revision=1)


def study_of(golden_set: GoldenSet, by: User, rater: User, name: str) -> SxsStudy:
    run_a, run_b = two_runs(golden_set, 3)
    spec = StudySpec(run_a=run_a, run_b=run_b, raters=[rater], seed=1, answers_per_query=1, name=name)
    return study_create(spec=spec, by=by)


def pending_study(study: SxsStudy, name: str, status: str = PendingStudy.Status.WAITING) -> PendingStudy:
    runs = [
        EvaluationRun.objects.create(golden_version=study.golden_version, target=study.run_a.target)
        for _ in range(2)
    ]
    return PendingStudy.objects.create(
        name=name,
        golden_set=study.golden_set,
        golden_version=study.golden_version,
        run_a=runs[0],
        run_b=runs[1],
        status=status,
        reason="run B (run 9, target broken) failed" if status == PendingStudy.Status.FAILED else "",
        options={"raters": [], "seed": 1, "answers_per_query": 1},
        created_by=study.created_by,
    )


def experiment_of(study: SxsStudy, status: str, ago: timedelta | None) -> Experiment:
    final = status in Experiment.FINAL
    return Experiment.objects.create(
        golden_version=study.golden_version,
        target=study.run_a.target,
        grid={"configs": [{"w": 1}]},
        configs=[{"w": 1}],
        status=status,
        total=4,
        done=4 if final else 1,
        finished_at=timezone.now() - ago if ago is not None else None,
        created_by=study.created_by,
    )


def failed_run_at(study: SxsStudy, ago: timedelta, message: str) -> EvaluationRun:
    return EvaluationRun.objects.create(
        golden_version=study.golden_version,
        target=study.run_a.target,
        params={"rewrite": True},
        effective_params={"rewrite": True},  # as run_create records it
        status=EvaluationRun.Status.FAILED,
        finished_at=timezone.now() - ago,
        error_message=message,
    )


def home_world(golden_set: GoldenSet, other_set: GoldenSet, rita: User, victor: User, alice: User) -> Home:
    other_set.raters.add(alice)
    waiting = study_of(golden_set, rita, alice, "ranker v2 against the baseline")
    answer(waiting, 1)
    answered = study_of(golden_set, rita, alice, "synonyms on")
    answer(answered, 3)
    elsewhere_study = study_of(other_set, victor, alice, "docs ranker")
    return Home(
        waiting=waiting,
        answered=answered,
        pending=pending_study(waiting, "msm1 on targets"),
        pending_failed=pending_study(waiting, "broken on targets", PendingStudy.Status.FAILED),
        finished_lately=experiment_of(waiting, Experiment.Status.SUCCEEDED, HOUR),
        finished_before=experiment_of(waiting, Experiment.Status.FAILED, 3 * DAY),
        running=experiment_of(waiting, Experiment.Status.RUNNING, None),
        failed_lately=failed_run_at(waiting, 2 * DAY, "every one of the 3 queries errored: HTTP 500"),
        failed_long_ago=failed_run_at(waiting, 10 * DAY, "connection refused"),
        elsewhere={
            "study": elsewhere_study,
            "pending": pending_study(elsewhere_study, "docs on targets"),
            "experiment": experiment_of(elsewhere_study, Experiment.Status.SUCCEEDED, HOUR),
            "run": failed_run_at(elsewhere_study, DAY, "timed out"),
        },
    )
