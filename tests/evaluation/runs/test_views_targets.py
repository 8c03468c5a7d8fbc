"""Target pages (list, detail, form with the service's validation, secrets shown as env names), trend
charts, the budgets editor, baseline history and the API tokens page."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.models import ApiToken, BudgetSet, RunSchedule, SearchTarget
from evaluation.runs.forms import TargetForm
from evaluation.runs.services import runs_nightly, schedule_set, target_create
from labeling.models import GoldenSet
from tests import factories
from tests.support.evaluation import (
    Scene,
    bearer,
    html_text,
    logged_in,
    page_text,
    section_text,
)
from tests.support.runs import make_version

pytestmark = pytest.mark.django_db


def _form(**changes: Any) -> dict[str, Any]:
    data = {
        "name": "prod-search",
        "adapter": "http_json",
        "url": "http://127.0.0.1:9/search",
        "headers": "",
        "params": "",
        "stages": '{"rewrite": false}',
        "timeout": "5",
        "concurrency": "4",
        "retries": "1",
        "solr_method": "GET",
    }
    data.update(changes)
    return data


# --- targets ----------------------------------------------------------------------------------------


def test_a_reviewer_creates_a_target_for_their_set_and_owns_it(golden_set: GoldenSet, rita: User) -> None:
    factories.grant_secrets(golden_set, "ASSAY_SECRET_SEARCH_TOKEN")
    response = logged_in(rita).post(
        "/targets/new/",
        _form(
            headers='{"Authorization": {"env": "ASSAY_SECRET_SEARCH_TOKEN"}, "X-Tenant": "acme"}',
            golden_sets=[golden_set.pk],
        ),
    )
    target = SearchTarget.objects.get(name="prod-search")
    assert response.status_code == 302 and response["Location"] == f"/targets/{target.pk}/"
    assert target.owner == rita and list(target.golden_sets.all()) == [golden_set]
    assert target.headers == {"Authorization": {"env": "ASSAY_SECRET_SEARCH_TOKEN"}, "X-Tenant": "acme"}
    assert target.stages == {"rewrite": False}


def test_the_detail_shows_secrets_as_env_names_and_the_url_without_credentials(
    golden_set: GoldenSet, rita: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_SECRET_SEARCH_TOKEN", "hunter2")
    factories.grant_secrets(golden_set, "ASSAY_SECRET_SEARCH_TOKEN")
    target = target_create(
        name="prod",
        url="https://search.example/search?tenant=acme",
        headers={"Authorization": {"env": "ASSAY_SECRET_SEARCH_TOKEN"}},
        golden_sets=[golden_set],
    )
    page = logged_in(rita).get(f"/targets/{target.pk}/")
    settings_text = section_text(page, "target-settings")
    assert "Authorization: $ASSAY_SECRET_SEARCH_TOKEN" in settings_text
    assert "https://search.example/search?tenant=%2A%2A%2A" in settings_text
    assert "hunter2" not in page.content.decode()


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"headers": '{"Authorization": "Bearer abc"}'}, "headers", "headers.Authorization"),
        ({"headers": '{"X-Tenant": '}, "headers", "headers: invalid JSON at line 1"),
        ({"stages": '{"rewrite": "yes"}'}, "stages", "stages.rewrite: expected true or false"),
        ({"url": "ftp://nowhere"}, "url", "search URL: expected http(s)://host[:port]/path, got ftp://"),
        ({"url": "https://svc:hunter2@search.example/search"}, "url", "url: credentials in the URL"),
        ({"url": "https://search.example/search?api_key=k1"}, "url", "url: query parameter api_key"),
        ({"params": '{"access_token": "k1"}'}, "params", "params.access_token: looks like a credential"),
        ({"cache_bypass_header": "no colon"}, "cache_bypass_header", "cache_bypass_header"),
        # Saved before, then refused by the HTTP client at the run's first call (the run failed).
        (
            {"cache_bypass_header": "X-Bypass: 1\r\nX-Injected: evil"},
            "cache_bypass_header",
            "cache_bypass_header: a header value cannot contain a line break",
        ),
        (
            {"headers": '{"X-Tenant": "acme\\r\\nX-Injected: evil"}'},
            "headers",
            "headers.X-Tenant: a header value cannot contain a line break",
        ),
        (
            {"headers": '{"X-Tenant": "a\\u001bb"}'},
            "headers",
            "headers.X-Tenant: a header value cannot contain the control character \\u001b",
        ),
        # A name ending in a line feed passed the name pattern (`$` matches before a final newline).
        ({"headers": '{"X-Tenant\\n": "acme"}'}, "headers", "is not a valid header name"),
        ({"generation_header": "X Gen"}, "generation_header", "generation_header: 'X Gen' is not a valid"),
        ({"concurrency": "65"}, "concurrency", "concurrency 65: must be at most 64 requests in flight"),
    ],
)
def test_the_form_shows_each_problem_at_its_field_and_stores_nothing(
    changes: dict[str, str], field: str, says: str, golden_set: GoldenSet, rita: User
) -> None:
    response = logged_in(rita).post("/targets/new/", _form(**changes))
    assert response.status_code == 422
    markup = response.content.decode()
    at_field = markup[markup.index(f'name="{field}"') :]
    assert says in page_text(response) and says.split("'")[0] in at_field[:2000]
    assert not SearchTarget.objects.filter(name="prod-search").exists()


DEEP = "[" * 100_000
HUGE = '{"size": ' + "1" * 5000 + "}"


@pytest.mark.parametrize("field", TargetForm.JSON_FIELDS)
@pytest.mark.parametrize(
    ("typed", "says"),
    [(DEEP, "nested deeper than 64 levels"), (HUGE, "a number is too long to read")],
)
def test_json_fields_beyond_what_is_read_are_worded_at_their_field(
    field: str, typed: str, says: str, golden_set: GoldenSet, rita: User
) -> None:
    # A RecursionError and a ValueError (Python's int-string digit limit) before: each a 500.
    response = logged_in(rita).post("/targets/new/", _form(adapter="elasticsearch", **{field: typed}))
    assert response.status_code == 422
    assert f"{field}: {says}" in page_text(response)
    assert not SearchTarget.objects.exists()


_NASTY = st.sampled_from(
    ["", "[" * 5000, "1" * 5000, '{"a": 1e400}', '{"a": NaN}', "\r\n", "\x00", "{", "X: "]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from(
        [
            *TargetForm.JSON_FIELDS,
            "cache_bypass_header",
            "generation_header",
            "model_id_header",
            "name",
            "url",
        ]
    ),
    text=st.tuples(_NASTY, st.text(max_size=40), _NASTY).map("".join)
    | st.sampled_from(
        ["http://127.0.0.1:" + "9" * 5000 + "/", "http://[::1", "http://１２７.０.０.１/", "http://a\r\nb/"]
    ),
)
def test_the_target_form_never_fails_on_any_text(
    field: str, text: str, golden_set: GoldenSet, rita: User
) -> None:
    """The property: whatever is typed in a field, the answer is a save or a worded 422, never a 500."""
    before = SearchTarget.objects.count()
    response = logged_in(rita).post("/targets/new/", _form(**{field: text}))
    # 400: a NUL byte, which the middleware refuses with words before any view (config/middleware.py).
    assert response.status_code in (302, 400, 422), (field, text[:80])
    if response.status_code != 302:
        assert page_text(response).strip() and SearchTarget.objects.count() == before


def test_editing_keeps_sets_the_editor_cannot_see(
    scene: Scene, other_set: GoldenSet, rita: User, ada: User
) -> None:
    target = scene.target
    target.golden_sets.add(other_set)
    # rita reviews only help-center; the target is hers to edit only as its owner.
    SearchTarget.objects.filter(pk=target.pk).update(owner=rita)
    page = logged_in(rita).get(f"/targets/{target.pk}/edit/")
    assert "developer-docs" not in page.content.decode()  # not offered
    response = logged_in(rita).post(
        f"/targets/{target.pk}/edit/",
        _form(name="staging", url=target.url, golden_sets=[scene.golden_set.pk]),
    )
    assert response.status_code == 302
    assert set(target.golden_sets.values_list("slug", flat=True)) == {"help-center", "developer-docs"}
    target.refresh_from_db()
    assert target.stages == {"rewrite": False}


def test_only_admins_owners_and_reviewers_of_every_listed_set_edit_a_target(
    scene: Scene, other_set: GoldenSet, rita: User, victor: User, ada: User
) -> None:
    target = scene.target
    target.golden_sets.add(other_set)
    assert logged_in(rita).get(f"/targets/{target.pk}/edit/").status_code == 403  # reviews one of two sets
    assert logged_in(victor).get(f"/targets/{target.pk}/edit/").status_code == 403
    assert logged_in(ada).get(f"/targets/{target.pk}/edit/").status_code == 200
    assert (
        f'name="golden_sets" value="{other_set.pk}"'
        in logged_in(ada).get(f"/targets/{target.pk}/edit/").content.decode()
    )


def test_the_target_list_shows_edit_links_only_where_allowed(scene: Scene, rita: User, ada: User) -> None:
    rita_page = logged_in(rita).get("/targets/").content.decode()
    assert f'href="/targets/{scene.target.pk}/edit/"' in rita_page  # rita reviews every set it lists
    assert "staging" in page_text(logged_in(ada).get("/targets/"))


# --- nightly schedules ------------------------------------------------------------------------------


def _schedule(golden_set: str = "help-center", **changes: Any) -> dict[str, Any]:
    data = {"golden_set": golden_set, "action": "save", "enabled": "on", "hour": "3", "minute": "15"}
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def _at_field(response: Any, field: str) -> str:
    """The schedule form's text from the field to the next field's label: its errors."""
    markup = response.content.decode()
    form = markup[markup.index('id="schedule-form"') :]
    start = form.index(f'name="{field}"')
    end = min(i for i in (form.find("<label", start), form.find("</form>", start)) if i != -1)
    return html_text(form[start:end])


@pytest.mark.parametrize("who", ["alice", "charlie", "victor"])
@pytest.mark.parametrize("action", ["save", "delete"])
def test_raters_outsiders_and_other_sets_reviewers_get_404_and_change_no_schedule(
    who: str, action: str, target: SearchTarget, golden_set: GoldenSet, request: pytest.FixtureRequest
) -> None:
    schedule_set(golden_set=golden_set, target=target, hour=1, minute=0)
    user: User = request.getfixturevalue(who)

    response = logged_in(user).post(f"/targets/{target.pk}/schedules/", _schedule(action=action, hour="5"))

    assert response.status_code == 404
    assert list(RunSchedule.objects.values_list("hour", "minute", "enabled")) == [(1, 0, True)]


def test_a_reviewer_who_sees_the_target_schedules_only_their_own_set(
    target: SearchTarget, golden_set: GoldenSet, other_set: GoldenSet, victor: User
) -> None:
    target.golden_sets.add(other_set)  # victor sees the target through developer-docs
    client = logged_in(victor)

    assert client.post(f"/targets/{target.pk}/schedules/", _schedule()).status_code == 404
    assert client.post(f"/targets/{target.pk}/schedules/", _schedule(action="delete")).status_code == 404
    assert not RunSchedule.objects.filter(golden_set=golden_set).exists()
    page = client.get(f"/targets/{target.pk}/").content.decode()
    assert 'value="help-center"' not in page  # not offered either
    saved = client.post(f"/targets/{target.pk}/schedules/", _schedule("developer-docs"))
    assert saved.status_code == 302
    assert RunSchedule.objects.get().golden_set == other_set


@pytest.mark.parametrize("who", ["rita", "ada"])
def test_the_sets_reviewer_and_an_admin_set_a_schedule(
    who: str, target: SearchTarget, golden_set: GoldenSet, request: pytest.FixtureRequest
) -> None:
    user: User = request.getfixturevalue(who)

    response = logged_in(user).post(
        f"/targets/{target.pk}/schedules/", _schedule(params="rewrite=true\nsize=20"), follow=True
    )

    schedule = RunSchedule.objects.get()
    assert (schedule.golden_set, schedule.target, schedule.created_by) == (golden_set, target, user)
    assert (schedule.enabled, schedule.hour, schedule.minute) == (True, 3, 15)
    assert schedule.params == {"rewrite": True, "size": 20}
    assert response.redirect_chain == [(f"/targets/{target.pk}/#schedules", 302)]
    assert "Nightly run of help-center on staging at 03:15 UTC saved." in page_text(response)
    row = section_text(response, "schedules")
    assert "help-center 03:15 size=20 rewrite=true never" in row  # jsonb's key order


def test_editing_and_disabling_a_schedule_change_the_same_row(
    target: SearchTarget, golden_set: GoldenSet, rita: User
) -> None:
    client = logged_in(rita)
    client.post(f"/targets/{target.pk}/schedules/", _schedule(params="rewrite=true"))
    # The edit link fills the form with the schedule.
    form = client.get(f"/targets/{target.pk}/?schedule=help-center").content.decode()
    form = form[form.index('id="schedule-form"') :]
    assert 'name="hour" value="3"' in form and 'name="minute" value="15"' in form
    assert 'id="id_params">\nrewrite=true</textarea>' in form and 'id="id_enabled" checked>' in form

    client.post(f"/targets/{target.pk}/schedules/", _schedule(hour="23", minute="59", params=""))
    schedule = RunSchedule.objects.get()
    assert (schedule.hour, schedule.minute, schedule.params, schedule.enabled) == (23, 59, {}, True)

    response = client.post(f"/targets/{target.pk}/schedules/", _schedule(enabled=None), follow=True)
    schedule.refresh_from_db()
    assert RunSchedule.objects.count() == 1 and schedule.enabled is False
    assert "saved (off)" in page_text(response)
    assert "help-center 03:15 off" in section_text(response, "schedules")


def test_deleting_a_schedule(target: SearchTarget, golden_set: GoldenSet, rita: User) -> None:
    schedule_set(golden_set=golden_set, target=target, hour=1)
    client = logged_in(rita)

    gone = client.post(f"/targets/{target.pk}/schedules/", _schedule(action="delete"), follow=True)
    again = client.post(f"/targets/{target.pk}/schedules/", _schedule(action="delete"), follow=True)

    assert not RunSchedule.objects.exists()
    assert "Nightly run of help-center on staging deleted." in page_text(gone)
    assert "help-center had no nightly run on staging." in page_text(again)


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"hour": "24"}, "hour", "hour: 24 is not 0..23 (UTC)"),
        ({"minute": "60"}, "minute", "minute: 60 is not 0..59"),
        ({"hour": "-1"}, "hour", "hour: -1 is not 0..23 (UTC)"),
        ({"hour": "soon"}, "hour", "Enter a whole number."),
        ({"params": 'access_token="k1"'}, "params", "params.access_token: looks like a credential"),
        ({"params": "rewrite"}, "params", "params line 1: expected KEY=VALUE, got 'rewrite'"),
        # A RecursionError and a ValueError (Python's digit limit) before: each a 500.
        ({"params": "k=" + "[" * 100_000}, "params", "params line 1: k: nested deeper than 64 levels"),
        ({"params": "k=" + "1" * 5000}, "params", "params line 1: k: a number is too long to read"),
        ({"golden_set": "developer-docs"}, "golden_set", "target staging is not set up for golden set"),
    ],
)
def test_the_schedule_form_shows_each_problem_at_its_field_and_stores_nothing(
    changes: dict[str, str], field: str, says: str, target: SearchTarget, other_set: GoldenSet, ada: User
) -> None:
    response = logged_in(ada).post(f"/targets/{target.pk}/schedules/", _schedule(**changes))

    assert response.status_code == 422
    assert says in _at_field(response, field)
    assert not RunSchedule.objects.exists()


def test_the_target_page_shows_why_the_last_night_did_not_start(
    target: SearchTarget, golden_set: GoldenSet, rita: User
) -> None:
    schedule_set(golden_set=golden_set, target=target, hour=1)
    runs_nightly(now=datetime(2026, 9, 1, 4, 0, tzinfo=UTC))  # no golden version yet

    row = section_text(logged_in(rita).get(f"/targets/{target.pk}/"), "schedules")
    assert (
        "help-center 01:00 target's 2026-09-01 golden set help-center has no golden version yet: "
        "nothing to run 2026-09-01 04:00 UTC" in row
    )


def test_schedule_posts_need_the_csrf_token(target: SearchTarget, golden_set: GoldenSet, rita: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(rita)

    assert client.post(f"/targets/{target.pk}/schedules/", _schedule()).status_code == 403
    assert not RunSchedule.objects.exists()
    page = client.get(f"/targets/{target.pk}/").content.decode()
    form = page[page.index('id="schedule-form"') :]
    assert 'name="csrfmiddlewaretoken"' in form[: form.index("</form>")]


# --- trend ------------------------------------------------------------------------------------------


def test_the_trend_draws_each_metric_with_readable_numbers(scene: Scene, rita: User) -> None:
    page = logged_in(rita).get(f"/targets/{scene.target.pk}/trend/?set=help-center")
    markup = page.content.decode()
    chart = markup[markup.index('id="chart-ndcg"') : markup.index('id="chart-mrr"')]
    assert scene.baseline.report is not None and scene.current.report is not None
    base = scene.baseline.report["tiers"]["core"]["ndcg"]["value"]
    current = scene.current.report["tiers"]["core"]["ndcg"]["value"]
    labels = re.findall(r'<text class="value"[^>]*>([0-9.]+)</text>', chart)
    assert labels == [f"{base:.4f}", f"{current:.4f}"]
    assert len(re.findall(r"<polyline ", chart)) == 1
    assert 'fill="#cf222e"' in chart  # the failing run's point is red
    table = section_text(page, "trend-table") if 'id="trend-table"' in markup else page_text(page)
    assert f"run {scene.current.pk} staging (rewrite=true)" in table


def test_the_trend_line_breaks_where_the_golden_version_changes(
    scene: Scene, finished: Any, rita: User, golden_set: GoldenSet
) -> None:
    newer = make_version(golden_set, name="2026-09-01")
    finished(golden_version=newer)
    finished(golden_version=newer)
    markup = logged_in(rita).get(f"/targets/{scene.target.pk}/trend/").content.decode()
    chart = markup[markup.index('id="chart-ndcg"') : markup.index('id="chart-mrr"')]
    assert len(re.findall(r"<polyline ", chart)) == 2
    assert len(re.findall(r"<circle ", chart)) == 4


def test_the_trend_of_a_set_the_target_does_not_list_is_404(
    scene: Scene, other_set: GoldenSet, ada: User
) -> None:
    assert logged_in(ada).get(f"/targets/{scene.target.pk}/trend/?set={other_set.slug}").status_code == 404


# --- budgets and baselines --------------------------------------------------------------------------


def test_the_budgets_editor_shows_the_defaults_then_saves_valid_json(
    golden_set: GoldenSet, rita: User
) -> None:
    client = logged_in(rita)
    page = client.get("/sets/help-center/budgets/")
    assert "No budgets stored: these are the defaults of docs/metrics.md, “Budgets file”" in page_text(page)
    markup = page.content.decode()
    assert 'name="b.core.ndcg.warn" value="0.01"' in markup
    assert 'name="b.core.ndcg.fail" value="0.025"' in markup
    shown = json.loads(client.get("/sets/help-center/budgets.json").content)
    assert shown["ndcg"] == {"warn": 0.01, "fail": 0.025}

    response = client.post(
        "/sets/help-center/budgets/", {"budgets": json.dumps({"ndcg_max_drop": 0.05})}, follow=True
    )
    assert "Budgets of help-center saved" in page_text(response)
    assert BudgetSet.objects.get(golden_set=golden_set).data["ndcg"]["fail"] == 0.05


def test_the_budgets_editor_lists_every_problem_of_a_budgets_file(golden_set: GoldenSet, rita: User) -> None:
    bad = '{"ndcg": {"warn": -1}, "colour": "blue"}'
    response = logged_in(rita).post("/sets/help-center/budgets/", {"budgets": bad})
    assert response.status_code == 422
    problems = section_text(response, "problems")
    assert "colour" in problems and "ndcg.warn" in problems
    syntax = logged_in(rita).post("/sets/help-center/budgets/", {"budgets": "{"})
    assert "invalid JSON at line 1 column 2" in page_text(syntax)
    assert not BudgetSet.objects.exists()


def test_resetting_budgets_stores_the_defaults(golden_set: GoldenSet, rita: User) -> None:
    logged_in(rita).post("/sets/help-center/budgets/", {"budgets": "not even json", "action": "defaults"})
    assert BudgetSet.objects.get(golden_set=golden_set).data["ndcg"] == {"warn": 0.01, "fail": 0.025}


def test_the_baseline_history_lists_every_promotion(scene: Scene, rita: User) -> None:
    text = section_text(logged_in(rita).get("/sets/help-center/baselines/"), "baselines")
    assert f"staging run {scene.baseline.pk} staging 2026-08-01 rita" in text and "the first good run" in text


# --- tokens -----------------------------------------------------------------------------------------


def test_a_new_token_is_shown_once_and_works_until_revoked(rita: User, golden_set: GoldenSet) -> None:
    client = logged_in(rita)
    created = client.post("/tokens/", {"name": "CI", "scopes": ["read", "runs:write"]})
    raw = re.search(r'<p class="token" id="token-value">(assay_[^<]+)</p>', created.content.decode())
    assert raw is not None
    token = ApiToken.objects.get(user=rita)
    assert token.scopes == ["read", "runs:write"]
    listing = client.get("/tokens/").content.decode()
    assert raw[1] not in listing and f"assay_{token.prefix}_…" in listing
    assert Client().get("/api/v1/runs/", **bearer(raw[1])).status_code == 200
    client.post(f"/tokens/{token.pk}/revoke/")
    assert Client().get("/api/v1/runs/", **bearer(raw[1])).status_code == 401


def test_the_tokens_page_is_for_reviewers_and_admins_only(alice: User, charlie: User, rita: User) -> None:
    assert logged_in(alice).get("/tokens/").status_code == 404
    assert logged_in(charlie).get("/tokens/").status_code == 404
    response = logged_in(rita).post("/tokens/", {"name": "", "scopes": []})
    assert response.status_code == 422 and not ApiToken.objects.exists()


def test_a_user_cannot_revoke_another_users_token(rita: User, victor: User) -> None:
    from evaluation.runs.tokens import api_token_create

    token, _ = api_token_create(user=victor, name="victor's", scopes=["read"])
    assert logged_in(rita).post(f"/tokens/{token.pk}/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked is None


def test_the_target_list_and_detail_hide_targets_of_sets_the_user_cannot_see(
    target: SearchTarget, other_target: SearchTarget, rita: User, victor: User
) -> None:
    listed = page_text(logged_in(rita).get("/targets/"))
    assert target.name in listed and other_target.name not in listed
    assert logged_in(rita).get(f"/targets/{other_target.pk}/").status_code == 404
    theirs = page_text(logged_in(victor).get("/targets/"))
    assert other_target.name in theirs and target.name not in theirs


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://169.254.169.254/latest/meta-data/", "host 169.254.169.254 is a link-local address"),
        ("http://10.0.0.5/search", "host 10.0.0.5 is a private address"),
        ("http://localhost:9200/search", "host localhost is a loopback address"),
        ("http://[::ffff:127.0.0.1]/search", "host ::ffff:127.0.0.1 is a loopback address"),
        # The forms an attacker saved before the host was read as the HTTP stack reads it.
        (
            "http://１２７.０.０.１:8968/techo",
            "host １２７.０.０.１ (read as 127.0.0.1) is a loopback address",
        ),
        ("http://127。0。0。1:8968/", "host 127。0。0。1 (read as 127.0.0.1) is a loopback address"),
        (
            "http://①⑥⑨.②⑤④.①⑥⑨.②⑤④/latest/meta-data/",
            "(read as 169.254.169.254) is a link-local address",
        ),
    ],
)
def test_a_target_on_a_private_address_is_refused_unless_the_operator_allows_it(
    monkeypatch: pytest.MonkeyPatch, golden_set: GoldenSet, rita: User, url: str, says: str
) -> None:
    monkeypatch.setenv("ASSAY_TARGET_ALLOW_PRIVATE", "false")
    response = logged_in(rita).post("/targets/new/", _form(url=url, golden_sets=[golden_set.pk]))
    assert response.status_code == 422 and says in page_text(response)
    assert "ASSAY_TARGET_ALLOW_PRIVATE=true" in page_text(response)
    assert not SearchTarget.objects.filter(name="prod-search").exists()
    monkeypatch.setenv("ASSAY_TARGET_ALLOW_PRIVATE", "true")
    assert (
        logged_in(rita).post("/targets/new/", _form(url=url, golden_sets=[golden_set.pk])).status_code == 302
    )
