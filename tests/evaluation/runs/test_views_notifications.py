"""Notifications on the pages: the target form's webhook variable (refused outside ASSAY_SECRET_, never
echoed when it is not a name), the target page naming it, and the run page's deliveries, shown to those
who may see the run and to nobody else."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from evaluation.models import Notification, SearchTarget
from evaluation.runs.services import notification_deliver, notifications_prepare, target_update
from labeling.models import GoldenSet
from tests import factories
from tests.support.evaluation import (
    Scene,
    logged_in,
    page_text,
    section_text,
)

pytestmark = pytest.mark.django_db


def _form(**changes: Any) -> dict[str, Any]:
    data = {
        "name": "prod-search",
        "adapter": "http_json",
        "url": "http://127.0.0.1:9/search",
        "timeout": "5",
        "concurrency": "4",
        "retries": "1",
        "solr_method": "GET",
    }
    data.update(changes)
    return data


def _at_field(response: Any, field: str) -> str:
    markup = response.content.decode()
    return markup[markup.index(f'name="{field}"') :][:2000]


# ----------------------------------------------------------------------------------------- the target


def test_a_webhook_variable_outside_the_secret_prefix_is_refused_on_the_form(rita: User) -> None:
    response = logged_in(rita).post("/targets/new/", _form(webhook_env="SLACK_WEBHOOK_URL"))

    assert response.status_code == 422
    says = "webhook_env: SLACK_WEBHOOK_URL does not start with ASSAY_SECRET_"
    assert says in page_text(response) and "does not start with ASSAY_SECRET_" in _at_field(
        response, "webhook_env"
    )
    assert not SearchTarget.objects.filter(name="prod-search").exists()


def test_a_pasted_webhook_url_is_refused_without_being_shown_back(rita: User) -> None:
    pasted = "https://hooks.slack.example/services/T000/B000/s3cr3t"

    response = logged_in(rita).post("/targets/new/", _form(webhook_env=pasted))

    assert response.status_code == 422
    assert "not an environment variable name" in _at_field(response, "webhook_env")
    # The form keeps what was typed in its input, as every form does; the error does not repeat it.
    errors = response.context["form"].errors["webhook_env"]
    assert errors and not any("s3cr3t" in e or "hooks.slack" in e for e in errors)
    assert not SearchTarget.objects.exists()


def test_a_webhook_variable_is_saved_shown_on_the_target_page_and_kept_by_the_edit_form(
    rita: User, golden_set: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_SECRET_SLACK_RELEVANCE", "https://hooks.slack.example/services/T0/B0/s3cr3t")
    factories.grant_secrets(golden_set, "ASSAY_SECRET_SLACK_RELEVANCE")
    client = logged_in(rita)

    response = client.post(
        "/targets/new/", _form(webhook_env=" ASSAY_SECRET_SLACK_RELEVANCE ", golden_sets=[golden_set.pk])
    )

    target = SearchTarget.objects.get(name="prod-search")
    assert response.status_code == 302 and target.webhook_env == "ASSAY_SECRET_SLACK_RELEVANCE"
    page = client.get(f"/targets/{target.pk}/")
    assert "the webhook whose URL is in $ASSAY_SECRET_SLACK_RELEVANCE" in section_text(
        page, "target-settings"
    )
    assert "s3cr3t" not in page.content.decode()
    edit = client.get(f"/targets/{target.pk}/edit/")
    assert 'value="ASSAY_SECRET_SLACK_RELEVANCE"' in _at_field(edit, "webhook_env")
    # Emptying the field removes the webhook.
    client.post(f"/targets/{target.pk}/edit/", _form(webhook_env=""))
    target.refresh_from_db()
    assert target.webhook_env == ""


# ----------------------------------------------------------------------------------------- the run page


@pytest.fixture
def told(scene: Scene, monkeypatch: pytest.MonkeyPatch) -> Scene:
    """The scene's failing run told by email (when it finalized) and, once the target names a webhook
    whose variable this worker lacks, a failed webhook delivery."""
    monkeypatch.delenv("ASSAY_SECRET_TEST_WEBHOOK", raising=False)
    factories.grant_secrets(scene.target.golden_sets.get(), "ASSAY_SECRET_TEST_WEBHOOK")
    target_update(target=scene.target, webhook_env="ASSAY_SECRET_TEST_WEBHOOK")
    [webhook_id] = notifications_prepare(run_id=scene.current.pk)
    assert notification_deliver(notification_id=webhook_id, attempt=1) == "failed"
    return scene


def test_the_run_page_lists_its_deliveries_to_a_reviewer_of_the_set(told: Scene, rita: User) -> None:
    page = logged_in(rita).get(f"/runs/{told.current.pk}/")

    assert page.status_code == 200
    card = section_text(page, "notifications")
    assert "email rita@example.org sent 1" in card
    assert (
        "webhook $ASSAY_SECRET_TEST_WEBHOOK failed 1 — "
        "webhook: environment variable ASSAY_SECRET_TEST_WEBHOOK is not set on this worker"
    ) in card
    assert {n.channel for n in Notification.objects.filter(run=told.current)} == {"email", "webhook"}


def test_an_admin_sees_the_deliveries_too(told: Scene, ada: User) -> None:
    page = logged_in(ada).get(f"/runs/{told.current.pk}/")

    assert "rita@example.org" in section_text(page, "notifications")


@pytest.mark.parametrize("who", ["alice", "charlie", "victor"])
def test_raters_outsiders_and_reviewers_of_other_sets_see_no_delivery(
    who: str, told: Scene, alice: User, charlie: User, victor: User
) -> None:
    user = {"alice": alice, "charlie": charlie, "victor": victor}[who]

    page = logged_in(user).get(f"/runs/{told.current.pk}/")

    assert page.status_code == 404
    assert "rita@example.org" not in page.content.decode()


def test_a_run_nobody_was_told_of_has_no_notifications_card(told: Scene, rita: User) -> None:
    page = logged_in(rita).get(f"/runs/{told.baseline.pk}/")  # verdict none: not told

    assert page.status_code == 200 and 'id="notifications"' not in page.content.decode()
