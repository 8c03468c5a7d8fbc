"""A side-by-side study on two targets searched now (docs/sxs.md, "Creating a study"): the two runs are
started through `run_create` (so every check of the Start-a-run path holds: the target is set up for the
set, its secrets are granted to it, its params are sound), and a `PendingStudy` holds them with the
study's options until both have finished. Then the study is made by `study_create`, exactly as from two
finished runs (the same selection, the identical-lists rule, the sides drawn, the errored queries left out
and named); a run that failed or was cancelled fails the pending study, with the reason in words.

Resolving is idempotent: the pending row is locked and resolved once (a finalize delivered twice, or a
page read beside it, finds it resolved and does nothing), so no study and no task is made twice. It is
resolved where a run finishes (`evaluation.runs.services.finalize`, after its commit) and again whenever its
page, its set's study list or the API reads it, which also catches a run cancelled or failed outside
finalize.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation.runs.models import EvaluationRun, SearchTarget
from evaluation.runs.services.runs import RunError, run_create
from evaluation.studies.models import PendingStudy
from evaluation.studies.services.studies import (
    StudyError,
    StudySpec,
    compared_systems,
    option_problems,
    rater_name_problems,
    study_create,
)
from golden_io.models import GoldenVersion
from golden_io.selectors import version_latest
from labeling.models import GoldenSet
from labeling.roles import reviews

Status = EvaluationRun.Status
Waiting = PendingStudy.Status

# The study's options kept on the pending row (StudySpec's names); the raters are kept by id.
OPTIONS = (
    "name",
    "rater_name",
    "selection",
    "stratum",
    "size",
    "seed",
    "shown",
    "answers_per_query",
    "instructions_name",
    "instructions",
    "examples",
    "rule",
)


@transaction.atomic
def study_on_targets(
    *,
    golden_set: GoldenSet,
    target_a: SearchTarget,
    target_b: SearchTarget,
    raters: Sequence[Any],
    values: Mapping[str, Any],
    by: Any,
    golden_version: GoldenVersion | None = None,
    trigger: str = EvaluationRun.Trigger.WEB,
) -> PendingStudy:
    """Start a run of `golden_version` (default: the set's newest) on each target, recorded as triggered
    by `by` through `trigger`, and a pending study of them with the options `values`. Raises StudyError
    naming every reason it cannot; nothing is written and no run starts then (the runs' start is queued
    on commit)."""
    if not reviews(by, golden_set):
        raise StudyError([f"only a reviewer of {golden_set.slug} can create a study of it"])
    if golden_version is None:
        golden_version = version_latest(golden_set=golden_set)
        if golden_version is None:
            raise StudyError([f"golden set {golden_set.slug} has no version yet: freeze one first"])
    elif golden_version.golden_set_id != golden_set.pk:
        raise StudyError([f"golden version {golden_version.name} is not of golden set {golden_set.slug}"])
    if target_a.pk == target_b.pk:
        raise StudyError([f"target {target_a.name} twice: a study on targets searches two different targets"])
    # The options are checked before any run starts; they do not read the runs (unsaved stand-ins here).
    spec = StudySpec.read(EvaluationRun(), EvaluationRun(), raters, values)
    problems = option_problems(spec, golden_set)
    problems += rater_name_problems(spec.rater_name, systems=compared_systems(target_a, target_b))
    runs: list[EvaluationRun] = []
    for label, target in (("A", target_a), ("B", target_b)):
        try:
            runs.append(
                run_create(golden_version=golden_version, target=target, triggered_by=by, trigger=trigger)
            )
        except RunError as exc:
            problems += [f"target {label}: {problem}" for problem in exc.problems]
    if problems:
        raise StudyError(problems)  # the runs made above are rolled back with this transaction
    options = {name: values.get(name) for name in OPTIONS}
    options["name"] = (options["name"] or "").strip() or f"{target_a.name} against {target_b.name}"
    options["raters"] = sorted(r.pk for r in raters)
    return PendingStudy.objects.create(
        name=str(options["name"]),
        golden_set=golden_set,
        golden_version=golden_version,
        run_a=runs[0],
        run_b=runs[1],
        options=options,
        created_by=by,
    )


def _run_failure(label: str, run: EvaluationRun) -> str:
    if run.status in (Status.FAILED, Status.CANCELLED):
        why = f": {run.error_message}" if run.error_message else ""
        return f"run {label} (run {run.pk}, target {run.target.name}) {run.status}{why}"
    return ""


def pending_resolve(pending: PendingStudy) -> PendingStudy:
    """Make the study when both runs have finished, fail the pending study when either failed or was
    cancelled, else leave it waiting. Once only: the row is locked and read again, and a resolved one is
    left as it is."""
    _resolve_once(pending.pk)
    pending.refresh_from_db()
    return pending


def _resolve_once(pk: int) -> bool:
    """Resolve the pending study `pk` if it is still waiting, under its row lock; whether this call
    resolved it (made the study or failed it)."""
    with transaction.atomic():
        locked = PendingStudy.objects.select_for_update().get(pk=pk)
        if locked.status != Waiting.WAITING:
            return False
        _resolve(locked)
        return locked.status != Waiting.WAITING


def _resolve(pending: PendingStudy) -> None:
    a = EvaluationRun.objects.select_related("target", "golden_version__golden_set").get(pk=pending.run_a_id)
    b = EvaluationRun.objects.select_related("target", "golden_version__golden_set").get(pk=pending.run_b_id)
    failures = [why for why in (_run_failure("A", a), _run_failure("B", b)) if why]
    if failures:
        _fail(pending, "; ".join(failures) + ": the study needs both runs finished")
        return
    if a.status != Status.SUCCEEDED or b.status != Status.SUCCEEDED:
        return
    if pending.created_by is None:
        _fail(pending, "the reviewer who asked for the study no longer exists")
        return
    options = pending.options
    raters = list(get_user_model().objects.filter(pk__in=options.get("raters", [])).order_by("pk"))
    spec = StudySpec.read(a, b, raters, options)
    try:
        study = study_create(spec=spec, by=pending.created_by)
    except StudyError as exc:
        _fail(
            pending, "both runs finished, but the study cannot be made from them: " + "; ".join(exc.problems)
        )
        return
    pending.study, pending.status, pending.resolved = study, Waiting.CREATED, timezone.now()
    pending.save(update_fields=["study", "status", "resolved"])


def _fail(pending: PendingStudy, reason: str) -> None:
    pending.status, pending.reason, pending.resolved = Waiting.FAILED, reason, timezone.now()
    pending.save(update_fields=["status", "reason", "resolved"])


def pending_studies_resolve(*, run_id: int) -> int:
    """Resolve the waiting studies that hold run `run_id` (finalize calls this once the run's final status
    is committed). Returns how many this call resolved (another call at the same moment resolves none of
    the same)."""
    waiting = PendingStudy.objects.filter(Q(run_a_id=run_id) | Q(run_b_id=run_id), status=Waiting.WAITING)
    return sum(_resolve_once(pk) for pk in waiting.values_list("pk", flat=True))
