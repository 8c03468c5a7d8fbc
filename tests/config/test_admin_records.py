"""The record models of golden_io and evaluation are read-only in the admin through the one mixin,
`labeling.admin_records.ReadOnlyAdmin` (labeling's own are held by tests/labeling/test_admin.py): a
superuser may view them and add, change or delete none, and the add page answers 403."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.db.models import Model
from django.test import Client, RequestFactory

from evaluation.models import Baseline, BaselineRescore, EvaluationRun, Notification, QueryRunResult
from golden_io.models import GitExport, GoldenVersion
from labeling.admin_records import ReadOnlyAdmin
from tests import factories

pytestmark = pytest.mark.django_db

RECORDS: set[type[Model]] = {
    GoldenVersion,
    GitExport,
    EvaluationRun,
    QueryRunResult,
    Baseline,
    BaselineRescore,
    Notification,
}


@pytest.fixture
def root() -> User:
    return factories.UserFactory.create(username="root", is_staff=True, is_superuser=True)


def test_the_record_admins_of_golden_io_and_evaluation_are_read_only_for_superusers(root: User) -> None:
    request = RequestFactory().get("/admin/")
    request.user = root
    read_only = {
        model
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label in ("golden_io", "evaluation") and isinstance(model_admin, ReadOnlyAdmin)
    }
    assert read_only == RECORDS
    for model in RECORDS:
        model_admin = admin.site._registry[model]
        assert model_admin.has_view_permission(request), model
        assert not model_admin.has_add_permission(request), model
        assert not model_admin.has_change_permission(request), model
        assert not model_admin.has_delete_permission(request), model


def test_an_add_page_of_a_record_answers_403(root: User, client: Client) -> None:
    client.force_login(root)
    for model in RECORDS:
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/add/"
        assert client.get(url).status_code == 403, url
