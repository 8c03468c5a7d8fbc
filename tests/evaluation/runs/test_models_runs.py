"""Single-row behaviour and the database's own guarantees for runs and targets."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from evaluation.admin import RunScheduleForm, SearchTargetForm
from evaluation.models import EvaluationRun, QueryRunResult, RunSchedule, SearchTarget
from labeling.models import GoldenSet
from tests import factories
from tests.support.runs import make_version

pytestmark = pytest.mark.django_db


@pytest.fixture
def target() -> SearchTarget:
    return SearchTarget.objects.create(name="staging", url="http://127.0.0.1:9/search")


@pytest.fixture
def run(golden_set: GoldenSet, target: SearchTarget) -> EvaluationRun:
    return EvaluationRun.objects.create(golden_version=make_version(golden_set), target=target, total=8)


def test_the_database_keeps_one_result_per_query(run: EvaluationRun) -> None:
    QueryRunResult.objects.create(run=run, query_id="q-1", ids=["d1"])

    with pytest.raises(IntegrityError), transaction.atomic():
        QueryRunResult.objects.create(run=run, query_id="q-1", ids=["d2"])
    # What a redelivered chunk does: the insert is ignored, the first result stands.
    QueryRunResult.objects.bulk_create(
        [QueryRunResult(run=run, query_id="q-1", ids=["d3"])], ignore_conflicts=True
    )
    assert list(QueryRunResult.objects.filter(run=run).values_list("ids", flat=True)) == [["d1"]]


def test_progress_cannot_pass_the_total(run: EvaluationRun) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        EvaluationRun.objects.filter(pk=run.pk).update(done=9)


def test_percent_and_who_triggered(run: EvaluationRun, rita: User) -> None:
    run.done = 2
    assert run.percent == 25.0 and run.is_active
    assert run.triggered_by_label == "web"
    run.triggered_by, run.trigger = rita, EvaluationRun.Trigger.CI
    assert run.triggered_by_label == "rita (ci)"
    run.trigger = EvaluationRun.Trigger.DEMO  # `make run`'s story names its command, not the web page
    assert run.triggered_by_label == "rita (manage.py demo_runs)"
    run.total, run.status = 0, EvaluationRun.Status.SUCCEEDED
    assert run.percent == 100.0 and not run.is_active


def test_the_database_refuses_an_unknown_adapter_and_a_bad_schedule_time(
    target: SearchTarget, golden_set: GoldenSet
) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        SearchTarget.objects.create(name="x", url="http://127.0.0.1:9/", adapter="lucene")
    with pytest.raises(IntegrityError), transaction.atomic():
        RunSchedule.objects.create(golden_set=golden_set, target=target, hour=24)


def test_the_admin_form_validates_a_target_like_the_service(golden_set: GoldenSet) -> None:
    data = {
        "name": "prod",
        "adapter": "http_json",
        "url": "http://127.0.0.1:9/search",
        "headers": '{"Authorization": "Bearer abc"}',
        "params": "{}",
        "stages": "{}",
        "timeout": 10,
        "concurrency": 8,
        "retries": 3,
        "solr_method": "GET",
        "es_template": "null",
    }

    form = SearchTargetForm(data=data)

    assert not form.is_valid()
    assert "headers.Authorization: looks like a credential" in str(form.errors)
    keyed = {
        **data,
        "headers": '{"Authorization": {"env": "ASSAY_SECRET_TOKEN"}}',
        "golden_sets": [golden_set.pk],
    }
    # A secret the target's set was not granted is refused, in the service's words (naming variable and set).
    ungranted = SearchTargetForm(data=keyed)
    assert not ungranted.is_valid()
    assert "ASSAY_SECRET_TOKEN is not granted to golden set help-center" in str(ungranted.errors)
    factories.grant_secrets(golden_set, "ASSAY_SECRET_TOKEN", "ASSAY_SECRET_SLACK_HOOK")
    assert SearchTargetForm(data=keyed).is_valid()
    # The webhook variable is held to the service's rules too: only an ASSAY_SECRET_ name, granted.
    good = {**data, "headers": "{}", "golden_sets": [golden_set.pk]}
    refused = SearchTargetForm(data={**good, "webhook_env": "DJANGO_SECRET_KEY"})
    assert not refused.is_valid() and "webhook_env:" in str(refused.errors)
    assert SearchTargetForm(data={**good, "webhook_env": "ASSAY_SECRET_SLACK_HOOK"}).is_valid()


def test_the_admin_lists_notifications_read_only() -> None:
    from django.contrib import admin
    from django.test import RequestFactory

    from evaluation.models import Notification

    model_admin = admin.site._registry[Notification]
    request = RequestFactory().get("/admin/")
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


def test_the_admin_form_validates_a_schedule_like_the_service(
    target: SearchTarget, golden_set: GoldenSet
) -> None:
    data = {
        "golden_set": golden_set.pk,
        "target": target.pk,
        "enabled": True,
        "hour": 3,
        "minute": 30,
        "params": '{"api_key": "k1"}',
    }

    form = RunScheduleForm(data=data)

    assert not form.is_valid()
    errors = str(form.errors)
    assert "params.api_key: looks like a credential" in errors
    assert f"target staging is not set up for golden set {golden_set.slug}" in errors
    target.golden_sets.add(golden_set)
    assert RunScheduleForm(data={**data, "params": '{"rewrite": true}'}).is_valid()
