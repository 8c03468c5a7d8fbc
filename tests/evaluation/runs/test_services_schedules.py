"""Nightly schedules: why a due schedule did not start its run is kept on the schedule (set by
runs_nightly, cleared when a run starts, shown in the admin) and the day stays claimed; deleting one.
Eager Celery, loopback stub engine."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User

from evaluation.models import EvaluationRun, RunSchedule, SearchTarget
from evaluation.runs import services
from evaluation.runs.services import runs_nightly, schedule_delete, schedule_set
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.evaluation import logged_in
from tests.support.runs import (
    eager_celery,
    make_target,
    make_version,
)

pytestmark = pytest.mark.django_db


def _at(hour: int, minute: int = 0, day: int = 1) -> datetime:
    return datetime(2026, 9, day, hour, minute, tzinfo=UTC)


def _nightly(now: datetime, capture: Any) -> list[EvaluationRun]:
    with eager_celery(), capture(execute=True):
        return runs_nightly(now=now)


def test_a_night_without_a_golden_version_is_recorded_and_the_next_run_clears_it(
    golden_set: GoldenSet, target: SearchTarget, django_capture_on_commit_callbacks: Any
) -> None:
    schedule = schedule_set(golden_set=golden_set, target=target, hour=1)

    assert _nightly(_at(4), django_capture_on_commit_callbacks) == []
    schedule.refresh_from_db()
    assert schedule.last_error == "golden set help-center has no golden version yet: nothing to run"
    assert (schedule.last_error_at, schedule.last_run_on) == (_at(4), _at(4).date())

    make_version(golden_set)
    assert _nightly(_at(4, day=2), django_capture_on_commit_callbacks) != []
    schedule.refresh_from_db()
    assert (schedule.last_error, schedule.last_error_at, schedule.last_run_on) == (
        "",
        None,
        _at(4, day=2).date(),
    )
    assert EvaluationRun.objects.get().status == EvaluationRun.Status.SUCCEEDED


def test_a_refused_run_keeps_run_creates_reason_and_the_day_stays_claimed(
    golden_set: GoldenSet,
    target: SearchTarget,
    version: GoldenVersion,
    django_capture_on_commit_callbacks: Any,
) -> None:
    schedule = schedule_set(golden_set=golden_set, target=target, hour=1)
    target.golden_sets.remove(golden_set)  # after the schedule was set: run_create refuses

    assert _nightly(_at(4), django_capture_on_commit_callbacks) == []
    schedule.refresh_from_db()
    assert schedule.last_error == (
        "run not created: target staging is not set up for golden set help-center "
        "(add the set to the target first)"
    )
    assert (schedule.last_error_at, schedule.last_run_on) == (_at(4), _at(4).date())

    # At most one attempt a day: later the same day nothing is tried, the first reason stays.
    target.golden_sets.add(golden_set)
    assert _nightly(_at(23), django_capture_on_commit_callbacks) == []
    schedule.refresh_from_db()
    assert schedule.last_error_at == _at(4) and not EvaluationRun.objects.exists()

    (run,) = _nightly(_at(4, day=2), django_capture_on_commit_callbacks)
    schedule.refresh_from_db()
    assert (schedule.last_error, schedule.last_error_at) == ("", None)
    assert run.schedule == schedule


def test_params_that_went_bad_name_the_param(
    golden_set: GoldenSet,
    target: SearchTarget,
    version: GoldenVersion,
    django_capture_on_commit_callbacks: Any,
) -> None:
    schedule = schedule_set(golden_set=golden_set, target=target, hour=1)
    # Stored behind the service's back (an old row, a raw update): run_create still refuses it.
    RunSchedule.objects.filter(pk=schedule.pk).update(params={"api_key": "k1"})

    assert _nightly(_at(4), django_capture_on_commit_callbacks) == []
    schedule.refresh_from_db()
    assert schedule.last_error.startswith("run not created: params.api_key: looks like a credential")
    assert not EvaluationRun.objects.exists()


def test_one_schedules_unexpected_error_is_recorded_and_the_others_still_run(
    golden_set: GoldenSet,
    target: SearchTarget,
    version: GoldenVersion,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    other = make_target(target.url, golden_set, name="canary")
    broken = schedule_set(golden_set=golden_set, target=target, hour=1)
    fine = schedule_set(golden_set=golden_set, target=other, hour=1)
    real = services.run_create

    def run_create(**kwargs: Any) -> EvaluationRun:
        if kwargs["target"] == target:
            raise RuntimeError("a bug in one schedule's path")
        return real(**kwargs)

    # A stand-in for a bug: nothing else fails so (the schedules module's run_create is the one it calls).
    monkeypatch.setattr(services.schedules, "run_create", run_create)
    (run,) = _nightly(_at(4), django_capture_on_commit_callbacks)

    assert run.schedule == fine
    broken.refresh_from_db()
    assert broken.last_error == "run not created: RuntimeError: a bug in one schedule's path"
    assert broken.last_run_on == _at(4).date()


def test_deleting_a_schedule_keeps_its_runs(
    golden_set: GoldenSet,
    target: SearchTarget,
    version: GoldenVersion,
    django_capture_on_commit_callbacks: Any,
) -> None:
    schedule_set(golden_set=golden_set, target=target, hour=1)
    (run,) = _nightly(_at(4), django_capture_on_commit_callbacks)

    assert schedule_delete(golden_set=golden_set, target=target) is True
    assert schedule_delete(golden_set=golden_set, target=target) is False
    run.refresh_from_db()
    assert not RunSchedule.objects.exists() and run.schedule is None


def test_the_admin_shows_why_the_last_night_did_not_start(
    golden_set: GoldenSet, target: SearchTarget, ada: User, django_capture_on_commit_callbacks: Any
) -> None:
    schedule = schedule_set(golden_set=golden_set, target=target, hour=1)
    _nightly(_at(4), django_capture_on_commit_callbacks)
    ada.is_staff = ada.is_superuser = True
    ada.save()
    client = logged_in(ada)

    listing = client.get("/admin/evaluation/runschedule/").content.decode()
    change = client.get(f"/admin/evaluation/runschedule/{schedule.pk}/change/").content.decode()

    assert '<td class="field-last_error_at nowrap">Sept. 1, 2026, 4 a.m.</td>' in listing
    assert "golden set help-center has no golden version yet: nothing to run" in change
    assert 'name="last_error"' not in change  # written by runs_nightly, not edited
