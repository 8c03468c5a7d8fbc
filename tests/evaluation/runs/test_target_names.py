"""A target's name is unique among the targets of each golden set it lists, not site-wide
(evaluation.runs.services.target_name_problems): creating a target named like one of a set the reviewer does
not review answers as a free name does, so it tells nothing of that target; within a set the name is
what CI starts runs by, so there it is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.models import EvaluationRun, SearchTarget
from evaluation.runs import access
from labeling.models import GoldenSet
from tests.support.evaluation import (
    bearer,
    logged_in,
    page_text,
    target_form,
)
from tests.support.runs import make_target

pytestmark = pytest.mark.django_db


def test_a_name_only_another_teams_set_uses_is_answered_as_a_free_name(
    other_target: SearchTarget, golden_set: GoldenSet, rita: User
) -> None:
    # victor's `docs-search` is on developer-docs, which rita does not review.
    taken = logged_in(rita).post("/targets/new/", target_form(golden_set))
    free = logged_in(rita).post("/targets/new/", target_form(golden_set, name="free-name"))
    assert (taken.status_code, free.status_code) == (302, 302)
    assert SearchTarget.objects.filter(name="docs-search").count() == 2
    assert [t.golden_sets.get().slug for t in access.targets_for(rita).filter(name="docs-search")] == [
        "help-center"
    ]


def test_within_a_set_a_taken_name_is_refused_naming_the_set(
    target: SearchTarget, golden_set: GoldenSet, rita: User
) -> None:
    response = logged_in(rita).post("/targets/new/", target_form(golden_set, name=target.name))
    assert response.status_code == 422
    assert f"name: golden set help-center has a target named '{target.name}' already" in page_text(response)
    assert SearchTarget.objects.filter(name=target.name).count() == 1


def test_a_target_on_a_set_its_editor_does_not_review_keeps_its_name(
    target: SearchTarget, other_set: GoldenSet, golden_set: GoldenSet, rita: User, ada: User
) -> None:
    target.golden_sets.add(other_set)
    SearchTarget.objects.filter(pk=target.pk).update(owner=rita)
    # A free name and a name developer-docs holds get the same refusal: nothing is told of that set.
    make_target("http://127.0.0.1:9/x", other_set, name="taken-there")
    answers = []
    for name in ("free-name", "taken-there"):
        response = logged_in(rita).post(f"/targets/{target.pk}/edit/", target_form(golden_set, name=name))
        answers.append((response.status_code, page_text(response).count("1 golden set you do not review")))
    assert answers == [(422, 2), (422, 2)]  # in the summary at the top and beside the name
    target.refresh_from_db()
    assert target.name == "staging"
    # Its other settings still change; an admin may rename it.
    kept = logged_in(rita).post(f"/targets/{target.pk}/edit/", target_form(golden_set, name="staging"))
    assert kept.status_code == 302
    renamed = logged_in(ada).post(
        f"/targets/{target.pk}/edit/",
        target_form(golden_set, name="free-name", golden_sets=[golden_set.pk, other_set.pk]),
    )
    assert renamed.status_code == 302
    target.refresh_from_db()
    assert target.name == "free-name"


def test_a_run_started_by_name_takes_the_sets_own_target(
    version: Any, target: SearchTarget, other_set: GoldenSet, golden_set: GoldenSet, ada: User, token_for: Any
) -> None:
    twin = make_target(target.url, other_set, name=target.name)  # the same name on another set
    body = json.dumps({"golden_set": golden_set.slug, "target": target.name})
    client = Client(raise_request_exception=False)
    response = client.post(
        "/api/v1/runs/", body, content_type="application/json", **bearer(token_for(ada, "runs:write"))
    )
    assert response.status_code == 201, response.content
    assert EvaluationRun.objects.get().target_id == target.pk != twin.pk


def test_the_admin_form_holds_the_same_rule(target: SearchTarget, golden_set: GoldenSet) -> None:
    root = User.objects.create_superuser("root", "root@example.org", "pw")
    form = {
        "name": target.name,
        "adapter": "http_json",
        "url": "http://127.0.0.1:9/other",
        "headers": "{}",
        "params": "{}",
        "stages": "{}",
        "timeout": "5",
        "concurrency": "4",
        "retries": "0",
        "solr_method": "GET",
        "golden_sets": [golden_set.pk],
    }
    response = logged_in(root).post("/admin/evaluation/searchtarget/add/", form)
    assert response.status_code == 200
    assert f"name: golden set help-center has a target named &#x27;{target.name}&#x27; already" in (
        response.content.decode()
    )
    assert SearchTarget.objects.count() == 1
