"""Every form page posted with mistakes says what is wrong where the eye is (labeling/templatetags/
form_errors.py): one summary at the top (a heading with the count, the page's focus target), each entry a
link to an element of the page that is the field to fix or holds it; each field with an error marked
invalid and described by its error, shown beside it. And the side-by-side study form offers what the set
has: its strata, its raters (every one ticked to begin with)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling.models import GoldenSet, Query
from tests import factories
from tests.support.evaluation import Scene
from tests.support.forms import Summary, error_summary, read_page
from tests.support.studies import two_runs

Post = Callable[[Scene], tuple[str, dict[str, Any]]]


def _slug(scene: Scene) -> str:
    return scene.golden_set.slug


# Every form page, and a post with at least one mistake in it.
FORMS: dict[str, Post] = {
    "new run": lambda s: (reverse("evaluation:run_new"), {"params": "no equals sign"}),
    "new target": lambda s: (reverse("evaluation:target_new"), {"name": "", "timeout": "soon"}),
    "nightly schedule": lambda s: (
        reverse("evaluation:target_schedule", args=[s.target.pk]),
        {"golden_set": _slug(s), "hour": "late", "minute": "0"},
    ),
    "API token": lambda s: (reverse("evaluation:tokens"), {"name": ""}),
    "new experiment": lambda s: (reverse("evaluation:experiment_new"), {"grid": "", "split": "half"}),
    "new study": lambda s: (reverse("evaluation:study_new", args=[_slug(s)]), {"selection": "all"}),
    "budgets": lambda s: (
        reverse("evaluation:budgets", args=[_slug(s)]),
        {"action": "save", "b.core.ndcg.warn": "lots", "critical_rank": "first"},
    ),
    "freeze": lambda s: (reverse("golden_io:freeze", args=[_slug(s)]), {"name": "a b"}),
    "git export": lambda s: (reverse("golden_io:export_config", args=[_slug(s)]), {"branch": "main"}),
    "import documents": lambda s: (reverse("labeling:import_upload", args=[_slug(s), "documents"]), {}),
    "import golden file": lambda s: (reverse("golden_io:golden_import", args=[_slug(s)]), {"mode": "x"}),
    "import query log": lambda s: (
        reverse("labeling:import_upload", args=[_slug(s), "query-log"]),
        {"cap": "0", "seed": "s"},
    ),
    "import run file": lambda s: (reverse("labeling:import_upload", args=[_slug(s), "run"]), {"depth": "0"}),
    "calibration round": lambda s: (
        reverse("labeling:calibration_list", args=[_slug(s)]),
        {"name": "", "raters": ["alice"]},
    ),
    "agreement thresholds": lambda s: (
        reverse("labeling:thresholds", args=[_slug(s)]),
        {"hard_diff": "0", "min_exact": "1.5", "reliable_min": "0.8", "tentative_min": "0.9"},
    ),
    "new judge": lambda s: (
        reverse("labeling:judge_new", args=[_slug(s)]),
        {"name": "j", "base_url": "", "temperature": "hot", "action": "save"},
    ),
}


Ids = dict[str, tuple[str, dict[str, str]]]


def _described(ids: Ids, error_id: str) -> dict[str, str]:
    """The attributes of the field an error is beside: the element it describes (an input, marked
    invalid, or the fieldset of a list of boxes)."""
    holders = [attrs for _, attrs in ids.values() if error_id in attrs.get("aria-describedby", "").split()]
    assert len(holders) == 1, (error_id, holders)
    tag = ids[holders[0]["id"]][0]
    assert tag == "fieldset" or holders[0].get("aria-invalid") == "true", holders[0]
    return holders[0]


def _check(response: Any) -> Summary:
    summary = error_summary(response)  # one, and every link goes to an element of the page
    _, ids = read_page(response)
    assert summary.attrs["tabindex"] == "-1"  # where static/js/forms.js moves focus as the page loads
    assert summary.attrs["aria-labelledby"] == f"{summary.id}-title"
    count = len(summary.entries)
    assert summary.heading.endswith(f"{count} problem{'s' if count > 1 else ''} to fix"), summary.heading
    assert any(anchor for _, anchor in summary.entries)
    for _, anchor in summary.entries:
        if anchor:  # a field, or the fieldset holding one
            assert ids[anchor][0] in ("input", "select", "textarea", "fieldset"), anchor
    return summary


@pytest.mark.parametrize("name", FORMS)
def test_a_form_posted_with_mistakes_lists_them_at_the_top_each_linked_to_its_field(
    name: str, light_scene: Scene, rita: User, client: Client
) -> None:
    client.force_login(rita)
    url, data = FORMS[name](light_scene)
    response = client.post(url, data)

    assert 400 <= response.status_code < 500
    summary = _check(response)
    _, ids = read_page(response)
    # Each field's error is beside it, describing it; and the summary links to every such field.
    beside = [error_id for error_id in ids if error_id.endswith("_error")]
    linked = {anchor for _, anchor in summary.entries}
    assert beside or name == "budgets", name  # the budgets grid marks its cells (tests/evaluation)
    for error_id in beside:
        attrs = _described(ids, error_id)
        assert {attrs["id"], f"{attrs['id']}_0"} & linked, error_id


def test_the_login_page_links_its_error_to_the_username(client: Client, alice: User) -> None:
    response = client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    summary = _check(response)
    assert summary.heading == "Not logged in: 1 problem to fix"
    [(text, anchor)] = summary.entries
    assert "correct username and password" in text and anchor == "id_username"


def test_a_form_shown_first_has_no_summary(light_scene: Scene, rita: User, client: Client) -> None:
    slug = _slug(light_scene)
    assert read_page(client.get(reverse("login")))[0] == []
    client.force_login(rita)
    shown_on = {  # forms posted to an address of their own, shown on another page
        "nightly schedule": reverse("evaluation:target_detail", args=[light_scene.target.pk]),
        "agreement thresholds": reverse("labeling:agreement", args=[slug]),
        **dict.fromkeys(
            [name for name in FORMS if name.startswith("import")], reverse("labeling:import", args=[slug])
        ),
    }
    for url in {shown_on.get(name) or FORMS[name](light_scene)[0] for name in FORMS}:
        page = client.get(url)
        assert page.status_code == 200, url
        assert read_page(page)[0] == [], url


def test_the_study_form_offers_the_sets_strata_and_ticks_its_raters(
    light_scene: Scene, rita: User, alice: User, bob: User, client: Client
) -> None:
    golden_set = light_scene.golden_set
    for i, stratum in enumerate(["billing", "account", "billing", ""]):
        factories.QueryFactory.create(golden_set=golden_set, external_id=f"s-{i}", stratum=stratum)
    factories.QueryFactory.create(golden_set=golden_set, stratum="legacy", status=Query.Status.RETIRED)
    factories.QueryFactory.create(stratum="elsewhere")  # another set's
    carol = factories.UserFactory.create(username="carol", groups=["raters"])  # rates no set of rita's
    client.force_login(rita)
    url = reverse("evaluation:study_new", args=[golden_set.slug])

    page = client.get(url)
    _, ids = read_page(page)
    markup = page.content.decode()
    options = markup[
        markup.index('id="id_stratum"') : markup.index("</select>", markup.index('id="id_stratum"'))
    ]
    assert _values(options) == ["", "account", "billing"]  # "every stratum", then the set's
    assert ">every stratum</option>" in options
    boxes = {a["value"]: a for t, a in ids.values() if t == "input" and a.get("name") == "raters"}
    assert set(boxes) == {str(alice.pk), str(bob.pk)} and carol.username not in markup
    assert all("checked" in box for box in boxes.values())  # the set's raters, every one ticked
    # "select all" and "none" beside the boxes, shown by static/js/forms.js (no script: no dead buttons).
    assert (
        '<span class="check-all-none" hidden><button type="button" class="link-button" data-check="all">'
        in (markup)
    )

    # A stratum the set has not is refused beside the field; one the service finds wanting too.
    refused = client.post(url, {"selection": "stratum", "stratum": "legacy"})
    assert ("Stratum: Select a valid choice. legacy is not one of the available choices.", "id_stratum") in (
        _check(refused).entries
    )


def _values(select: str) -> list[str]:
    return re.findall(r'<option value="([^"]*)"', select)


def test_a_problem_the_service_finds_goes_beside_the_field_it_names(
    golden_set: GoldenSet, rita: User, alice: User, bob: User, client: Client
) -> None:
    factories.QueryFactory.create(golden_set=golden_set, stratum="billing")
    run_a, run_b = two_runs(golden_set)
    client.force_login(rita)
    form = {
        "run_a": run_a.pk,
        "run_b": run_b.pk,
        "selection": "stratum",
        "stratum": "",
        "shown": "5",
        "raters": [alice.pk, bob.pk],
        "answers_per_query": "3",
        "instructions_name": "default",
        "instructions": "Which list answers the query better?",
        "min_lower": "0",
        "min_queries": "10",
    }
    response = client.post(reverse("evaluation:study_new", args=[golden_set.slug]), form)

    assert response.status_code == 400
    assert sorted(_check(response).entries) == [
        ("answers per query: 3 answers need as many raters; 2 chosen", "id_answers_per_query"),
        ("stratum: name the stratum whose queries to ask", "id_stratum"),
    ]
