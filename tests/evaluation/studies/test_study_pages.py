"""The study pages over HTTP: the rater's page is blind (swapping which run is A and which is B changes the
lists' own content and nothing else of any response), answers from a second tab or after submit are
refused in words, and who may open what (404 for everyone else)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from evaluation.models import EvaluationRun, StudyTask, SxsStudy
from evaluation.studies.services import StudySpec, study_create
from labeling.models import GoldenSet
from tests import factories
from tests.conftest import PASSWORD
from tests.support.studies import study_form, two_runs

pytestmark = pytest.mark.django_db


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _study(
    run_a: EvaluationRun, run_b: EvaluationRun, raters: list[User], by: User, **kwargs: Any
) -> SxsStudy:
    kwargs.setdefault("seed", 3)
    kwargs.setdefault("answers_per_query", len(raters))
    return study_create(spec=StudySpec(run_a=run_a, run_b=run_b, raters=raters, **kwargs), by=by)


CSRF = re.compile(r'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]+(")')


def _blinded(html: str, token: str) -> str:
    """The page without what differs by construction: the two lists' cards (the sides' own content), the
    task's token (random) and the CSRF token (masked anew for every response)."""
    html = html.replace(token, "TOKEN")
    html = CSRF.sub(r"\1CSRF\2", html)
    lists, _answer = html.split('<div class="sxs-lists">', 1)[1].split('<div class="card sxs-answer', 1)
    assert "Left list" in lists and "Right list" in lists
    return html.replace(lists, "LISTS")


def _headers(response: Any) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k not in ("Content-Length",)}


def test_swapping_runs_a_and_b_changes_only_the_lists(golden_set: GoldenSet, rita: User, alice: User) -> None:
    run_x, run_y = two_runs(golden_set, 6)
    # The two studies differ in their runs' places only: raters read one name for both.
    straight = _study(run_x, run_y, [alice], rita, name="x against y", rater_name="Help-center lists")
    swapped = _study(run_y, run_x, [alice], rita, name="y against x", rater_name="Help-center lists")
    client = _client(alice)

    for item in straight.queries.all():
        first = StudyTask.objects.get(study=straight, item=item)
        second = StudyTask.objects.get(study=swapped, item__query_id=item.query_id)
        one, two = client.get(f"/sxs/{first.token}/"), client.get(f"/sxs/{second.token}/")
        assert one.status_code == two.status_code == 200
        assert _headers(one) == _headers(two)
        assert _blinded(one.content.decode(), first.token) == _blinded(two.content.decode(), second.token)
        # The lists did change places with the runs: the sides' content is all that moved.
        assert one.content != two.content
        answer = {"revision": 0, "preference": 2, "reasons": ["relevance"], "junk_left": True, "note": "x"}
        saved = [
            client.post(f"/sxs/{t.token}/answer/", json.dumps(answer), content_type="application/json")
            for t in (first, second)
        ]
        assert saved[0].content == saved[1].content and _headers(saved[0]) == _headers(saved[1])
        again = [
            client.post(f"/sxs/{t.token}/answer/", json.dumps(answer), content_type="application/json")
            for t in (first, second)
        ]
        assert again[0].status_code == again[1].status_code == 409 and again[0].content == again[1].content


def test_the_rater_s_page_names_no_run_system_study_or_metric(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    run_a, run_b = two_runs(golden_set, 2)
    study = _study(run_a, run_b, [alice], rita, name="rewriter on against the demo baseline")
    task = StudyTask.objects.filter(study=study).first()
    assert task is not None

    html = _client(alice).get(f"/sxs/{task.token}/").content.decode()

    assert "query 1" in html or "query 2" in html
    for secret in (
        "engine",
        "rewrite",
        "baseline",
        "candidate",
        "ndcg",
        "nDCG",
        study.name,
        f"/runs/{run_b.pk}/",
    ):
        assert secret not in html, secret
    assert "docs.example.org" in html and "T d1" in html  # the cards: titles as returned, the URL's host


def test_answers_from_a_second_tab_or_after_submit_are_refused_in_words(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    run_a, run_b = two_runs(golden_set, 2)
    task = StudyTask.objects.filter(study=_study(run_a, run_b, [alice], rita)).first()
    assert task is not None
    client = _client(alice)
    url = f"/sxs/{task.token}/answer/"

    first = client.post(url, json.dumps({"revision": 0, "preference": -2}), content_type="application/json")
    second_tab = client.post(
        url, json.dumps({"revision": 0, "preference": 3}), content_type="application/json"
    )
    after = client.post(url, json.dumps({"revision": 1, "preference": 3}), content_type="application/json")

    assert first.status_code == 200 and first.json()["revision"] == 1
    assert second_tab.status_code == 409 and second_tab.json()["error"] == "stale"
    assert (
        "another tab" in second_tab.json()["message"] and "nothing was saved" in second_tab.json()["message"]
    )
    assert after.status_code == 409 and after.json()["message"].startswith(
        "You have answered this query already"
    )
    undo = client.post(
        f"/sxs/{task.token}/undo/", json.dumps({"revision": 1}), content_type="application/json"
    )
    assert (
        undo.status_code == 200
        and undo.json() | {"revision": 2} == undo.json()
        and not undo.json()["answered"]
    )
    task.refresh_from_db()
    assert task.preference is None


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{", "the body must be JSON"),
        (json.dumps({"revision": 0, "preference": 4}).encode(), "preference: a whole number from -3"),
        (json.dumps({"revision": 0, "preference": 1, "reasons": ["price"]}).encode(), "reasons: a list of"),
        (json.dumps({"preference": 1}).encode(), "revision: the whole number the page was drawn with"),
        (json.dumps({"revision": 0, "preference": 1, "junk_left": "yes"}).encode(), "junk_left, junk_right"),
    ],
)
def test_bad_answers_are_refused_in_words(
    golden_set: GoldenSet, rita: User, alice: User, body: bytes, words: str
) -> None:
    run_a, run_b = two_runs(golden_set, 2)
    task = StudyTask.objects.filter(study=_study(run_a, run_b, [alice], rita)).first()
    assert task is not None

    response = _client(alice).post(f"/sxs/{task.token}/answer/", body, content_type="application/json")

    assert response.status_code == 400 and words in response.json()["message"]


def test_a_rater_not_assigned_and_a_reviewer_of_another_set_get_404(
    golden_set: GoldenSet, rita: User, alice: User, bob: User, charlie: User
) -> None:
    run_a, run_b = two_runs(golden_set, 2)
    study = _study(run_a, run_b, [alice], rita)
    task = StudyTask.objects.filter(study=study).first()
    assert task is not None
    otto = User.objects.create_user("otto", password=PASSWORD)
    otto.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    factories.GoldenSetFactory.create(slug="other", reviewers=[otto])

    for user in (bob, charlie, otto, rita):
        client = _client(user)
        assert client.get(f"/sxs/{task.token}/").status_code == 404
        body = json.dumps({"revision": 0, "preference": 1})
        assert (
            client.post(f"/sxs/{task.token}/answer/", body, content_type="application/json").status_code
            == 404
        )
        assert (
            client.post(f"/sxs/{task.token}/undo/", body, content_type="application/json").status_code == 404
        )
    for user in (alice, bob, charlie, otto):
        client = _client(user)
        for url in (
            f"/studies/{study.pk}/",
            f"/studies/{study.pk}/answers.csv",
            f"/studies/{study.pk}/answers.jsonl",
            "/sets/help-center/studies/",
            "/sets/help-center/studies/new/",
        ):
            assert client.get(url).status_code == 404, (user, url)
    assert _client(rita).get(f"/studies/{study.pk}/").status_code == 200
    task.refresh_from_db()
    assert task.answered_at is None


def test_the_home_page_and_the_queue_lead_raters_to_their_study_tasks(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    run_a, run_b = two_runs(golden_set, 3)
    _study(run_a, run_b, [alice], rita)
    client = _client(alice)

    home = client.get("/").content.decode()
    assert "3 side-by-side queries to answer" in home
    assert "side-by-side" not in _client(bob).get("/").content.decode()
    assert reverse("sxs:study_tasks") in client.get("/queue/").content.decode()
    first = client.get("/sxs/next/")
    assert first.status_code == 302 and first["Location"].startswith("/sxs/")
    listing = client.get("/sxs/").content.decode()
    study = SxsStudy.objects.get()
    assert study.rater_name.startswith("Study of ")  # its title names its runs: raters read the day instead
    assert "0/3" in listing and study.rater_name in listing and "Study 1" not in listing
    assert f"run {run_a.pk}" not in listing.split("<main>")[1]


def test_the_form_creates_a_study_and_refuses_in_words(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    run_a, run_b = two_runs(golden_set, 4)
    client = _client(rita)
    form = study_form(run_a=run_a.pk, run_b=run_b.pk, raters=[alice.pk], critical_junk_fails="on")

    same = client.post("/sets/help-center/studies/new/", {**form, "run_b": run_a.pk})
    assert (
        same.status_code == 400
        and "against itself: a study compares two different runs" in same.content.decode()
    )
    made = client.post("/sets/help-center/studies/new/", form)
    study = SxsStudy.objects.get()
    assert made.status_code == 302 and made["Location"] == f"/studies/{study.pk}/"
    assert study.instructions.text == "Which list would you rather get?" and study.rule["min_queries"] == 20
    page = client.get(made["Location"]).content.decode()
    assert '<span class="badge warn">inconclusive</span>' in page and f"run {run_b.pk}" in page
    assert "0 of 4 asked queries have all 1 answers" in page


def test_the_form_says_how_wide_the_interval_will_likely_be_and_warns_when_it_cannot_decide(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    client = _client(rita)
    form_page = client.get("/sets/help-center/studies/new/").content.decode()
    # No size typed: the rule's minimum (20), the default spread (the set has no study yet).
    assert (
        "At 20 queries the 95% interval of the mean preference will likely be about ±0.55 (a spread of 1.25"
        " per query, the default: no earlier study of this set has two or more answered queries)"
    ) in form_page
    assert "(the rule's minimum of queries: type a size to see yours)" in form_page
    assert (
        "even a candidate as good as the baseline would likely stay inconclusive at 20 queries" in form_page
    )
    # The line follows the size and the rule as they are typed (htmx asks this fragment).
    url = reverse("evaluation:study_new_expectation", args=["help-center"])
    big = client.get(url, {"size": "400", "min_lower": "-0.25"}).content.decode()
    assert "At 400 queries" in big and "±0.12" in big and 'id="study-expectation-warning"' not in big
    strict = client.get(url, {"size": "400", "min_lower": "0"}).content.decode()
    assert "The rule&#x27;s bound is 0.00: a candidate as good as the baseline never passes" in strict
    # Anything not yet a size or a rule is read as none (never a 500).
    for junk in ({"size": "-3", "min_lower": "x"}, {"size": "1e9", "min_lower": "nan"}, {"min_queries": "0"}):
        odd = client.get(url, junk)
        assert odd.status_code == 200 and "At 20 queries" in odd.content.decode()
    assert _client(alice).get(url).status_code == 404  # a rater does not see the set's study pages

    # Made: the message says it again for the queries actually asked, with the warning.
    run_a, run_b = two_runs(golden_set, 4)
    made = client.post(
        "/sets/help-center/studies/new/",
        study_form(run_a=run_a.pk, run_b=run_b.pk, raters=[alice.pk], size=3, selection="sample"),
        follow=True,
    )
    text = made.content.decode()
    made_study = SxsStudy.objects.get()
    assert f"Study {made_study.pk} created: 3 answers to collect. At 3 queries the 95% interval" in text
    assert (
        '<li class="warning">±1.41 is wider than the 0.25 between the rule&#x27;s bound (-0.25) and 0: even'
        in text
    )


def test_answers_download_with_sides_undone_the_seed_and_formula_safe_cells(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    run_a, run_b = two_runs(golden_set, 2)
    study = _study(run_a, run_b, [alice], rita, seed=11)
    client = _client(alice)
    tasks = list(StudyTask.objects.filter(study=study).select_related("item"))
    for task in tasks:
        body = {"revision": 0, "preference": 3, "note": '=HYPERLINK("http://x")', "junk_left": True}
        client.post(f"/sxs/{task.token}/answer/", json.dumps(body), content_type="application/json")

    reviewer = _client(rita)
    text = reviewer.get(f"/studies/{study.pk}/answers.csv").content.decode()
    rows = [
        json.loads(line)
        for line in reviewer.get(f"/studies/{study.pk}/answers.jsonl").content.decode().splitlines()
    ]

    assert "'=HYPERLINK" in text and "\n=" not in text and ",=" not in text
    assert len(rows) == 2 and {row["seed"] for row in rows} == {11}
    for row, task in zip(rows, sorted(tasks, key=lambda t: t.item.query_id), strict=True):
        # Right much better as shown: the candidate's when it was on the right.
        assert row["preference"] == (-3 if task.candidate_left else 3)
        assert row["junk_candidate"] is task.candidate_left and row["rater"] == "alice"


@pytest.mark.parametrize("token", ["ABCDEF0123456789", "0123456789abcdeg", "x" * 300, "..%2F"])
def test_a_token_of_another_shape_is_not_found(golden_set: GoldenSet, alice: User, token: str) -> None:
    client = _client(alice)
    assert client.get(f"/sxs/{token}/").status_code == 404
    body = json.dumps({"revision": 0, "preference": 1})
    assert client.post(f"/sxs/{token}/answer/", body, content_type="application/json").status_code == 404
    assert client.get(f"/sxs/next/?after={token}&study=99999999999999").status_code == 302
