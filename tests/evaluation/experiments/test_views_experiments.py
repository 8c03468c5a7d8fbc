"""The experiment pages (docs/experiments.md, "In the app"): a reviewer starts one from the form and
reads its page (the configurations x metrics table, sortable; the heat map of a two-parameter grid and
the line of a one-parameter grid; the held-out confirmation; the winner's strata), refusals worded as
`assay sweep`'s, cancel, **Use this configuration** (the target's params, the record, the full run), and
who sees none of it (404). Eager Celery, loopback stub engine."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from assay.overlap import overlap
from evaluation.experiments.services.experiments import experiment_create
from evaluation.models import EvaluationRun, Experiment, ExperimentAdoption, ExperimentResult, SearchTarget
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.evaluation import html_text, logged_in, victor_fixture  # noqa: F401
from tests.support.experiments import finished_experiment, tuned_answer
from tests.support.runs import eager_celery, golden_file, make_target, make_version, stub_fixture  # noqa: F401
from tests.support.stub_server import StubServer

pytestmark = pytest.mark.django_db

GRID2 = {"params": {"title_weight": [1, 3], "min_should_match": [1, 2, 3]}}
Make = Callable[..., Experiment]


@pytest.fixture
def version(golden_set: GoldenSet) -> GoldenVersion:
    return make_version(golden_set, golden_file(30))


@pytest.fixture
def target(stub: StubServer, golden_set: GoldenSet) -> SearchTarget:
    stub.default = tuned_answer
    return make_target(f"{stub.url}/search", golden_set, params={"rewrite": True})


@pytest.fixture
def make(
    version: GoldenVersion, target: SearchTarget, rita: User, django_capture_on_commit_callbacks: Any
) -> Make:
    def run(grid: Any = GRID2, **options: Any) -> Experiment:
        with eager_celery(), django_capture_on_commit_callbacks(execute=True):
            experiment = experiment_create(
                golden_version=version, target=target, grid=grid, created_by=rita, **options
            )
        experiment.refresh_from_db()
        assert experiment.status == Experiment.Status.SUCCEEDED, experiment.error_message
        return experiment

    return run


def test_a_reviewer_starts_an_experiment_from_the_form_and_reads_its_page(
    rita: User, version: GoldenVersion, target: SearchTarget, django_capture_on_commit_callbacks: Any
) -> None:
    client = logged_in(rita)
    assert client.get("/experiments/new/").status_code == 200
    # The target page's "Sweep its parameters" opens the form with the target chosen.
    assert f"/experiments/new/?target={target.pk}" in client.get(f"/targets/{target.pk}/").content.decode()
    chosen = client.get(f"/experiments/new/?target={target.pk}").content.decode()
    assert f'<option value="{target.pk}" selected>' in chosen
    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/experiments/new/",
            {"golden_version": version.pk, "target": target.pk, "grid": '{"params": {"title_weight": [1, 3], '
             '"min_should_match": [1, 2, 3]}}', "metric": "ndcg", "split": 0.7, "top": 3, "seed": 0},
        )  # fmt: skip
    experiment = Experiment.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/experiments/{experiment.pk}/"
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    text = html_text(page)
    assert "2 x 3 = 6 configurations" in text
    assert 'id="sweep-heat"' in page and 'id="sweep-line"' not in page
    assert "Held-out confirmation" in text and "The winner's strata" in text
    assert 'id="config-table"' in page and page.count('data-rank="') == 6
    assert "Use this configuration" in text
    # The table sorts by a column (rank by default); an unknown sort is the default.
    assert client.get(f"/experiments/{experiment.pk}/?sort=-ndcg").status_code == 200
    assert client.get(f"/experiments/{experiment.pk}/?sort=nonsense").status_code == 200
    assert "Experiments" in html_text(client.get("/experiments/").content.decode())


def test_a_one_parameter_grid_draws_a_line(rita: User, make: Make) -> None:
    experiment = make({"params": {"title_weight": [1, 3, 6]}})
    page = logged_in(rita).get(f"/experiments/{experiment.pk}/").content.decode()
    assert 'id="sweep-line"' in page and 'id="sweep-heat"' not in page


@pytest.mark.parametrize(
    ("grid", "words"),
    [
        ("{oops", "grid: not JSON: invalid JSON at line 1 column 2"),
        ('{"params": {"a": [' + ",".join(["1"] * 30) + '], "b": [' + ",".join(["1"] * 20) + "]}}",
         "grid: 600 configurations (30 x 20); at most 500 in one sweep"),
        ('{"params": {"title_weight": []}}', 'grid: "params.title_weight": an empty list of values'),
        ('{"configs": [{"size": 3}]}', "grid: configuration 1 {size=3}:"),
    ],
)  # fmt: skip
def test_bad_grids_are_refused_on_the_form_with_the_words_of_assay_sweep(
    rita: User, version: GoldenVersion, target: SearchTarget, grid: str, words: str
) -> None:
    response = logged_in(rita).post(
        "/experiments/new/",
        {"golden_version": version.pk, "target": target.pk, "grid": grid, "metric": "ndcg", "split": 0.7,
         "top": 3, "seed": 0},
    )  # fmt: skip
    assert response.status_code == 422
    assert words in html_text(response.content.decode())
    assert not Experiment.objects.exists()


def test_use_this_configuration_saves_the_winner_on_the_target_and_starts_a_run(
    rita: User, make: Make, target: SearchTarget, django_capture_on_commit_callbacks: Any
) -> None:
    experiment = make()
    assert experiment.result is not None
    winner = experiment.result["winner"]["grid"]
    client = logged_in(rita)

    refused = client.post(f"/experiments/{experiment.pk}/use/", {"rationale": "  "}, follow=True)
    assert "Not used: rationale: say why this configuration should be used" in html_text(
        refused.content.decode()
    )
    assert not ExperimentAdoption.objects.exists() and not EvaluationRun.objects.exists()

    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(f"/experiments/{experiment.pk}/use/", {"rationale": "held out +0.05"})
    adoption = ExperimentAdoption.objects.get()
    assert adoption.run is not None
    assert response.status_code == 302 and response["Location"] == f"/runs/{adoption.run.pk}/"
    target.refresh_from_db()
    assert target.params == {"rewrite": True, **winner}
    assert (adoption.params_before, adoption.params_after) == ({"rewrite": True}, {"rewrite": True, **winner})
    assert (adoption.adopted_by, adoption.rationale) == (rita, "held out +0.05")
    assert adoption.run.triggered_by == rita and adoption.run.effective_params == {"rewrite": True, **winner}
    page = html_text(client.get(f"/experiments/{experiment.pk}/").content.decode())
    assert adoption.run.label in page and "held out +0.05" in page


def test_cancel_from_the_page(rita: User, version: GoldenVersion, target: SearchTarget) -> None:
    experiment = experiment_create(golden_version=version, target=target, grid=GRID2, created_by=rita)
    response = logged_in(rita).post(f"/experiments/{experiment.pk}/cancel/")
    assert response.status_code == 302
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.CANCELLED


def test_who_is_not_a_reviewer_of_the_set_sees_nothing(
    make: Make, alice: User, charlie: User, victor: User, target: SearchTarget
) -> None:
    experiment = make()
    for user in (alice, charlie, victor):
        client = logged_in(user)
        for url in ("", "progress/"):
            assert client.get(f"/experiments/{experiment.pk}/{url}").status_code == 404, (user, url)
        for url in ("cancel/", "use/"):
            assert client.post(f"/experiments/{experiment.pk}/{url}", {"rationale": "x"}).status_code == 404
        assert f"#{experiment.pk}" not in client.get("/experiments/").content.decode()
    assert logged_in(alice).get("/experiments/new/").status_code == 404
    target.refresh_from_db()
    assert target.params == {"rewrite": True} and not ExperimentAdoption.objects.exists()


def test_a_stage_toggle_the_winner_sets_stays_a_stage_toggle(
    rita: User, golden_set: GoldenSet, stub: StubServer, version: GoldenVersion
) -> None:
    stub.default = tuned_answer
    target = make_target(
        f"{stub.url}/search", golden_set, name="staged", params={"k1": 2}, stages={"rewrite": False}
    )
    experiment = finished_experiment(version, target, rita, grid={"configs": [{"rewrite": True, "k1": 3}]})
    with_rationale = {"rationale": "the rewriter helps"}
    assert logged_in(rita).post(f"/experiments/{experiment.pk}/use/", with_rationale).status_code == 302
    target.refresh_from_db()
    assert (target.params, target.stages) == ({"k1": 3}, {"rewrite": True})
    adoption = ExperimentAdoption.objects.get()
    assert adoption.params_before == {"k1": 2, "rewrite": False}
    assert adoption.params_after == {"k1": 3, "rewrite": True}


def test_a_seed_or_top_out_of_range_is_a_worded_refusal(
    rita: User, version: GoldenVersion, target: SearchTarget
) -> None:
    form = {
        "golden_version": version.pk,
        "target": target.pk,
        "grid": '{"configs": [{"w": 1}]}',
        "metric": "ndcg",
        "split": 0.7,
    }
    client = logged_in(rita)
    for extra, words in (({"top": 3, "seed": 10**12}, "seed"), ({"top": 10**12, "seed": 0}, "top")):
        response = client.post("/experiments/new/", {**form, **extra})
        assert response.status_code == 422, words
        assert "Ensure this value is" in html_text(response.content.decode())
    assert not Experiment.objects.exists()


def test_each_configuration_shows_its_overlap_with_the_baseline(rita: User, make: Make) -> None:
    """docs/metrics.md, "Overlap": the configurations table (tuning queries) and the held-out confirmation,
    each configuration's lists against the baseline's, the formula and p stated."""
    experiment = make()
    result = experiment.result
    assert result is not None
    # the stored figures are those of the stored answers: every tuning query both answered, query by query
    answers: dict[int, dict[str, list[str]]] = {}
    for slot, qid, ids in ExperimentResult.objects.filter(
        experiment=experiment, query_id__in=experiment.split["tuning"], error__isnull=True
    ).values_list("slot", "query_id", "ids"):
        answers.setdefault(slot, {})[qid] = ids
    for place, config in enumerate(result["configs"], start=1):
        found = config["tuning"]["overlap"]
        each = [overlap(answers[0][q], answers[place][q], k=result["k"]) for q in sorted(answers[place])]
        assert found["n"] == len(each) and found["identical"] == sum(o.identical for o in each)
        assert found["rbo"]["mean"] == pytest.approx(sum(o.rbo for o in each) / len(each))
        assert found["jaccard"]["mean"] == pytest.approx(sum(o.jaccard for o in each) / len(each))

    client = logged_in(rita)
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    first = result["configs"][0]
    row = page.split(f'data-rank="{first["rank"]}"', 1)[1].split("</tr>", 1)[0]
    assert f'data-overlap="rbo" title="95% intervals: Jaccard@{result["k"]} [' in row
    assert f"{first['tuning']['overlap']['rbo']['mean']:.4f}" in html_text(row.split('data-overlap="rbo"')[1])
    text = html_text(page)
    assert "p = 0.9 putting 86% of its weight on the first 10 places" in text
    assert 'href="/docs/metrics/#overlap"' in page
    confirmed = [c for c in result["configs"] if c["holdout"] is not None]
    assert page.count("data-confirmed=") == len(confirmed)
    held = confirmed[0]["holdout"]["overlap"]
    assert f"{held['rbo']['mean']:.4f} [{held['rbo']['low']:.4f}, {held['rbo']['high']:.4f}]" in text
    # sorted by RBO, least first
    ranks = [
        int(r)
        for r in re.findall(
            r'data-rank="(\d+)"', client.get(f"/experiments/{experiment.pk}/?sort=rbo").content.decode()
        )
    ]
    by_rbo = sorted(
        result["configs"], key=lambda c: (c["tuning"]["overlap"]["rbo"]["mean"], result["configs"].index(c))
    )
    assert ranks == [c["rank"] for c in by_rbo]
