"""A study on two targets resolved by two finalizes (or a finalize and a page read) at the same moment, on
the real database, each in its own thread, connection and transaction: one study, one set of tasks."""

from __future__ import annotations

import functools

import pytest
from django.contrib.auth.models import User

from evaluation.models import PendingStudy, StudyTask, SxsStudy
from evaluation.studies.services import pending_studies_resolve
from labeling.models import GoldenSet
from tests.support.studies import two_runs
from tests.support.threads import race

pytestmark = pytest.mark.django_db(transaction=True)


def test_resolving_at_once_makes_one_study_and_no_duplicate_task(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    run_a, run_b = two_runs(golden_set, 6)
    pending = PendingStudy.objects.create(
        golden_set=golden_set,
        golden_version=run_a.golden_version,
        run_a=run_a,
        run_b=run_b,
        options={"raters": [alice.pk, bob.pk], "seed": 5, "answers_per_query": 2},
        created_by=rita,
    )

    results = race(
        [functools.partial(pending_studies_resolve, run_id=run.pk) for run in (run_a, run_b, run_b, run_a)]
    )

    assert sorted(results) == [0, 0, 0, 1]  # type: ignore[type-var]
    pending.refresh_from_db()
    assert pending.status == PendingStudy.Status.CREATED
    assert list(SxsStudy.objects.values_list("pk", flat=True)) == [pending.study_id]
    assert StudyTask.objects.count() == 12
