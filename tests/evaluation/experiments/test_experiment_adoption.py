"""Adoption you can follow and undo (docs/experiments.md, "Use this configuration" and "Revert"): any
confirmed configuration that beat the baseline is offered and can be used, not only the winner; the
record holds the configuration, the target's params and stage toggles before and after, who, when and
why; the form is gone while the adoption stands; **Revert** writes the params before back exactly, is
recorded the same way and names the runs that sent the adopted ones, and a run started after it sends
the old params (read from what the loopback engine received); the experiment, its adoption, the
confirming run and a study on that run link to each other both ways; who may not adopt or revert gets
404. Eager Celery, loopback stub engine."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.experiments.services.adopt import adoption_revert, experiment_adopt
from evaluation.experiments.services.experiments import ExperimentError
from evaluation.models import EvaluationRun, Experiment, ExperimentAdoption, SearchTarget
from evaluation.runs.services import run_create, target_update
from evaluation.studies.services import StudySpec, study_create
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests import factories
from tests.support.evaluation import (  # noqa: F401
    TokenFor,
    bearer,
    html_text,
    logged_in,
    messages_text,
    token_for_fixture,
    victor_fixture,
)
from tests.support.experiments import finished_experiment, tuned_answer
from tests.support.runs import eager_celery, golden_file, make_target, make_version, stub_fixture  # noqa: F401
from tests.support.stub_server import StubServer
from tests.support.studies import documents

pytestmark = pytest.mark.django_db

# title_weight 3 and 6 answer the ideal list, 2 a better one than the baseline, 1 the baseline's own
# (tests.support.experiments.tuned_answer): with all four confirmed, three beat the baseline.
GRID = {"params": {"title_weight": [1, 2, 3, 6]}}
BEFORE: dict[str, Any] = {"params": {"mode": "x"}, "stages": {"rewrite": False}}


@pytest.fixture
def version(golden_set: GoldenSet) -> GoldenVersion:
    return make_version(golden_set, golden_file(30))


@pytest.fixture
def target(stub: StubServer, golden_set: GoldenSet) -> SearchTarget:
    stub.default = tuned_answer
    return make_target(f"{stub.url}/search", golden_set, **BEFORE)


@pytest.fixture
def experiment(version: GoldenVersion, target: SearchTarget, rita: User) -> Experiment:
    return finished_experiment(version, target, rita, grid=GRID, top=4)


def _rank_of(experiment: Experiment, title_weight: int) -> int:
    assert experiment.result is not None
    return next(
        c["rank"] for c in experiment.result["configs"] if c["grid"] == {"title_weight": title_weight}
    )


def _use(client: Client, experiment: Experiment, rank: int | None, why: str = "held out better") -> Any:
    data = {"rationale": why, **({"rank": rank} if rank is not None else {})}
    return client.post(f"/experiments/{experiment.pk}/use/", data)


def _sent(target: SearchTarget) -> dict[str, Any]:
    target.refresh_from_db()
    return {"params": target.params, "stages": target.stages}


def _hrefs(markup: str, element_id: str) -> list[str]:
    """The links inside the element with this id (an element whose tag closes at its first `</tag>`)."""
    match = re.search(rf'<(\w+)[^>]*\bid="{element_id}"[^>]*>(.*?)</\1>', markup, re.S)
    assert match is not None, element_id
    return re.findall(r'href="([^"]+)"', match.group(2))


def test_every_confirmed_configuration_that_beat_the_baseline_is_offered_and_a_second_one_can_be_used(
    rita: User, experiment: Experiment, target: SearchTarget
) -> None:
    assert experiment.result is not None
    winner = experiment.result["winner"]
    client = logged_in(rita)
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    offered = [int(r) for r in re.findall(r'<option value="(\d+)"', page)]
    beaten = [_rank_of(experiment, w) for w in (2, 3, 6)]
    assert sorted(offered) == sorted(beaten) and winner["rank"] in offered
    assert _rank_of(experiment, 1) not in offered  # confirmed, but the baseline's own list: no gain

    second = next(rank for rank in offered if rank != winner["rank"])
    grid = next(c["grid"] for c in experiment.result["configs"] if c["rank"] == second)
    response = _use(client, experiment, second)
    adoption = ExperimentAdoption.objects.get()
    assert response.status_code == 302 and adoption.rank == second and adoption.configuration == grid
    assert _sent(target) == {"params": {"mode": "x", **grid}, "stages": {"rewrite": False}}


def test_the_adoption_record_holds_the_configuration_the_params_before_and_after_who_when_and_why(
    rita: User, experiment: Experiment, target: SearchTarget, django_capture_on_commit_callbacks: Any
) -> None:
    assert experiment.result is not None
    winner = experiment.result["winner"]
    with django_capture_on_commit_callbacks(execute=False):
        _use(logged_in(rita), experiment, None, why="  +0.2 nDCG held out  ")
    adoption = ExperimentAdoption.objects.select_related("run").get()
    assert adoption.experiment == experiment and adoption.target == target
    assert (adoption.configuration, adoption.rank) == (winner["grid"], winner["rank"])
    assert adoption.params_before == {"mode": "x", "rewrite": False}
    assert adoption.params_after == {"mode": "x", "rewrite": False, **winner["grid"]}
    assert (adoption.stages_before, adoption.stages_after) == ({"rewrite": False}, {"rewrite": False})
    assert (adoption.adopted_by, adoption.rationale) == (rita, "+0.2 nDCG held out")
    assert adoption.adopted_at is not None and adoption.stands
    assert (adoption.reverted_at, adoption.reverted_by, adoption.revert_reason) == (None, None, "")
    assert adoption.run is not None and adoption.run.effective_params == adoption.params_after
    assert adoption.run.target_snapshot["params"] == {"mode": "x", **winner["grid"]}


def test_a_configuration_that_did_not_beat_the_baseline_or_was_not_confirmed_is_refused_in_words(
    rita: User, version: GoldenVersion, target: SearchTarget, experiment: Experiment
) -> None:
    flat = _rank_of(experiment, 1)
    with pytest.raises(ExperimentError) as refused:
        experiment_adopt(experiment=experiment, by=rita, rationale="why not", rank=flat)
    assert refused.value.problems == [
        f"rank {flat} (title_weight=1) did not beat the baseline on the held-out queries (a gain with p "
        "(Holm) below 0.05): nothing to use"
    ]
    two = finished_experiment(version, target, rita, grid=GRID, top=1)
    unconfirmed = next(c["rank"] for c in two.result["configs"] if c["holdout"] is None)  # type: ignore[index]
    with pytest.raises(ExperimentError) as refused:
        experiment_adopt(experiment=two, by=rita, rationale="why not", rank=unconfirmed)
    assert "was not confirmed on the held-out queries" in refused.value.problems[0]
    with pytest.raises(ExperimentError) as refused:
        experiment_adopt(experiment=two, by=rita, rationale="why not", rank=9)
    assert refused.value.problems == [f"rank 9: experiment {two.pk} ranks its configurations 1 to 4"]
    response = _use(logged_in(rita), experiment, None, why="x")
    assert response.status_code == 302
    bad = logged_in(rita).post(
        f"/experiments/{experiment.pk}/use/", {"rationale": "x", "rank": "-1"}, follow=True
    )
    assert "Not used: rank: '-1' is not a configuration's rank" in " ".join(messages_text(bad))
    assert ExperimentAdoption.objects.count() == 1 and _sent(target)["params"] != BEFORE["params"]


def test_the_form_is_gone_while_the_adoption_stands_and_back_after_the_revert(
    rita: User, experiment: Experiment, django_capture_on_commit_callbacks: Any
) -> None:
    client = logged_in(rita)
    assert 'id="adopt-form"' in client.get(f"/experiments/{experiment.pk}/").content.decode()
    with django_capture_on_commit_callbacks(execute=False):
        _use(client, experiment, None)
    adoption = ExperimentAdoption.objects.get()
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    assert 'id="adopt-form"' not in page and "Use this configuration</button>" not in page
    assert f'href="#adoption-{adoption.pk}"' in page and f'id="revert-form-{adoption.pk}"' in page
    # Another configuration of the experiment while this one stands: refused, nothing changed.
    other = next(r for r in (_rank_of(experiment, w) for w in (2, 3, 6)) if r != adoption.rank)
    refused = _use(client, experiment, other)
    assert "revert it before using another" in " ".join(messages_text(client.get(refused["Location"])))
    assert ExperimentAdoption.objects.count() == 1

    client.post(f"/experiments/{experiment.pk}/adoptions/{adoption.pk}/revert/", {"reason": "slower"})
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    assert 'id="adopt-form"' in page and f'id="revert-form-{adoption.pk}"' not in page
    assert "reverted" in html_text(page)


def test_revert_restores_the_params_before_exactly_and_a_run_after_it_sends_them(
    rita: User,
    stub: StubServer,
    experiment: Experiment,
    target: SearchTarget,
    version: GoldenVersion,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """The stage toggle the configuration sets (rewrite) flips back to false; the param it adds goes."""
    assert experiment.result is not None
    winner = experiment.result["winner"]["grid"]
    client = logged_in(rita)
    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        _use(client, experiment, None)
    adoption = ExperimentAdoption.objects.get()
    assert adoption.run is not None
    _sent(target)  # the target as the adoption left it
    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        another = run_create(golden_version=version, target=target, triggered_by=rita)  # sends them too
    response = client.post(
        f"/experiments/{experiment.pk}/adoptions/{adoption.pk}/revert/", {"reason": "  p95 latency doubled "}
    )
    assert response.status_code == 302
    assert response["Location"] == f"/experiments/{experiment.pk}/#adoption-{adoption.pk}"
    said = " ".join(messages_text(client.get(response["Location"])))
    assert f"staging sends {adoption.before_text} again (as before adoption {adoption.pk})" in said
    run, other = (EvaluationRun.objects.get(pk=pk) for pk in (adoption.run.pk, another.pk))
    assert f"Runs that sent the adopted {adoption.params_text}: {run.label}; {other.label}." in said

    assert _sent(target) == BEFORE
    adoption.refresh_from_db()
    assert (adoption.reverted_by, adoption.revert_reason) == (rita, "p95 latency doubled")
    assert adoption.reverted_at is not None and adoption.reverted_at >= adoption.adopted_at
    assert adoption.revert_runs == [adoption.run.pk, another.pk] and not adoption.stands

    seen = len(stub.requests)
    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        after = run_create(golden_version=version, target=target, triggered_by=rita)
    after.refresh_from_db()
    assert after.status == EvaluationRun.Status.SUCCEEDED, after.error_message
    bodies = [r.json for r in stub.requests[seen:] if r.path == "/search"]
    assert len(bodies) == 30
    assert all(b["mode"] == "x" and b["rewrite"] is False and not set(winner) & set(b) for b in bodies)
    assert after.effective_params == {"mode": "x", "rewrite": False}


def test_a_stage_toggle_the_configuration_flipped_is_flipped_back(
    rita: User, golden_set: GoldenSet, stub: StubServer, version: GoldenVersion
) -> None:
    stub.default = tuned_answer
    staged = make_target(
        f"{stub.url}/search", golden_set, name="staged", params={"k1": 2}, stages={"rewrite": False}
    )
    experiment = finished_experiment(version, staged, rita, grid={"configs": [{"rewrite": True, "k1": 3}]})
    adoption = experiment_adopt(experiment=experiment, by=rita, rationale="the rewriter helps")
    assert _sent(staged) == {"params": {"k1": 3}, "stages": {"rewrite": True}}
    adoption_revert(adoption=adoption, by=rita, reason="it rewrites product names")
    assert _sent(staged) == {"params": {"k1": 2}, "stages": {"rewrite": False}}


def test_revert_is_refused_in_words_and_changes_nothing(
    rita: User, version: GoldenVersion, target: SearchTarget, experiment: Experiment
) -> None:
    later_experiment = finished_experiment(version, target, rita, grid={"params": {"k1": [3]}})
    adoption = experiment_adopt(experiment=experiment, by=rita, rationale="better")
    after = _sent(target)
    with pytest.raises(ExperimentError) as refused:
        adoption_revert(adoption=adoption, by=rita, reason="  ")
    assert refused.value.problems == ["reason: say why the configuration is reverted (it is recorded)"]

    # A later adoption from another experiment on the same target: that one is undone first.
    later = experiment_adopt(experiment=later_experiment, by=rita, rationale="k1 too")
    with pytest.raises(ExperimentError) as refused:
        adoption_revert(adoption=adoption, by=rita, reason="slower")
    later.refresh_from_db()  # its params as stored (jsonb orders keys its own way)
    assert refused.value.problems == [
        f"staging has since been set by adoption {later.pk} (experiment {later_experiment.pk}, "
        f"{later.params_text}): revert that one first"
    ]
    adoption_revert(adoption=later, by=rita, reason="k1 did nothing")
    assert _sent(target) == after

    # Edited by hand since: refused, the edit kept.
    target_update(target=target, params={"mode": "y", "title_weight": 3})
    with pytest.raises(ExperimentError) as refused:
        adoption_revert(adoption=adoption, by=rita, reason="slower")
    assert refused.value.problems[0].startswith("staging was changed since this adoption: it sends mode=")
    assert _sent(target)["params"] == {"mode": "y", "title_weight": 3}

    target_update(target=target, params=after["params"])
    adoption_revert(adoption=adoption, by=rita, reason="slower")
    with pytest.raises(ExperimentError) as refused:
        adoption_revert(adoption=adoption, by=rita, reason="again")
    assert refused.value.problems[0].startswith(f"adoption {adoption.pk} was reverted by rita (")
    assert _sent(target) == BEFORE


def test_the_experiment_its_adoption_the_confirming_run_and_a_study_on_it_link_both_ways(
    rita: User,
    alice: User,
    golden_set: GoldenSet,
    version: GoldenVersion,
    target: SearchTarget,
    experiment: Experiment,
    django_capture_on_commit_callbacks: Any,
) -> None:
    documents(golden_set)
    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        baseline = run_create(golden_version=version, target=target, triggered_by=rita)
        _use(logged_in(rita), experiment, None)
    adoption = ExperimentAdoption.objects.select_related("run").get()
    run = adoption.run
    assert run is not None
    for finished in (run, baseline):
        finished.refresh_from_db()
        assert finished.status == EvaluationRun.Status.SUCCEEDED, finished.error_message
    study = study_create(
        spec=StudySpec(run_a=baseline, run_b=run, raters=[alice], seed=1, answers_per_query=1), by=rita
    )
    client = logged_in(rita)
    here = f"/experiments/{experiment.pk}/"

    experiment_page = client.get(here).content.decode()
    links = _hrefs(experiment_page, f"adoption-{adoption.pk}")
    assert f"/runs/{run.pk}/" in links and f"/studies/{study.pk}/" in links  # to the run and its study

    run_page = client.get(f"/runs/{run.pk}/").content.decode()
    assert _hrefs(run_page, "adopted-from") == [f"{here}#adoption-{adoption.pk}"]  # back to the experiment
    assert f"/studies/{study.pk}/" in _hrefs(run_page, "run-studies")  # to the study
    assert f"configuration rank {adoption.rank}: {adoption.configuration_text.split(': ')[1]}" in html_text(
        run_page
    )
    assert f"Adopted from experiment {experiment.pk}" in html_text(run_page)

    study_page = client.get(f"/studies/{study.pk}/").content.decode()
    assert f'href="/runs/{run.pk}/"' in study_page  # back to the run, whose page leads to the experiment
    assert f'href="/runs/{baseline.pk}/"' in study_page


@pytest.mark.parametrize("who", ["alice", "charlie", "victor"])
def test_who_does_not_review_the_set_cannot_adopt_or_revert(
    who: str,
    rita: User,
    alice: User,
    charlie: User,
    victor: User,
    experiment: Experiment,
    target: SearchTarget,
) -> None:
    adoption = experiment_adopt(experiment=experiment, by=rita, rationale="better")
    after = _sent(target)
    client = logged_in({"alice": alice, "charlie": charlie, "victor": victor}[who])
    assert _use(client, experiment, None).status_code == 404
    revert = f"/experiments/{experiment.pk}/adoptions/{adoption.pk}/revert/"
    assert client.post(revert, {"reason": "x"}).status_code == 404
    assert client.get(f"/runs/{adoption.run_id}/").status_code == 404
    assert _sent(target) == after and ExperimentAdoption.objects.get().stands


def test_an_adoption_is_reverted_only_through_its_own_experiment(
    rita: User, version: GoldenVersion, target: SearchTarget, experiment: Experiment
) -> None:
    adoption = experiment_adopt(experiment=experiment, by=rita, rationale="better")
    other = finished_experiment(version, target, rita, grid={"params": {"k1": [3]}})
    client = logged_in(rita)
    assert (
        client.post(f"/experiments/{other.pk}/adoptions/{adoption.pk}/revert/", {"reason": "x"}).status_code
        == 404
    )
    assert client.get(f"/experiments/{experiment.pk}/adoptions/{adoption.pk}/revert/").status_code == 405
    adoption.refresh_from_db()
    assert adoption.stands


def test_a_reviewer_who_does_not_review_every_set_of_the_target_adopts_and_reverts(
    rita: User, victor: User, target: SearchTarget, experiment: Experiment
) -> None:
    """The target also lists victor's set: rita's adoption and revert change its params all the same."""
    target.golden_sets.add(factories.GoldenSetFactory.create(slug="victors", reviewers=[victor]))
    adoption = experiment_adopt(experiment=experiment, by=rita, rationale="better")
    adoption_revert(adoption=adoption, by=rita, reason="slower")
    assert _sent(target) == BEFORE


def _post(token: str, path: str, body: dict[str, Any]) -> Any:
    return Client().post(path, body, content_type="application/json", **bearer(token))


def test_the_api_adopts_any_configuration_that_beat_the_baseline_and_reverts_it_with_the_record(
    rita: User, experiment: Experiment, target: SearchTarget, token_for: TokenFor
) -> None:
    token = token_for(rita, "read", "runs:write")
    assert experiment.result is not None
    rank = next(
        r for r in (_rank_of(experiment, w) for w in (2, 3, 6)) if r != experiment.result["winner"]["rank"]
    )
    used = _post(token, f"/api/v1/experiments/{experiment.pk}/use/", {"rationale": "cheaper", "rank": rank})
    assert used.status_code == 201, used.content
    body = used.json()
    adoption = ExperimentAdoption.objects.select_related("run").get()
    assert adoption.run is not None
    assert {
        k: body[k] for k in ("id", "rank", "configuration", "params_before", "rationale", "adopted_by")
    } == {
        "id": adoption.pk,
        "rank": rank,
        "configuration": adoption.configuration,
        "params_before": {"mode": "x", "rewrite": False},
        "rationale": "cheaper",
        "adopted_by": "rita",
    }
    assert (body["run"], body["run_label"], body["reverted_at"]) == (
        adoption.run.pk,
        adoption.run.label,
        None,
    )
    assert body["runs_used"] == [adoption.run.pk]
    run = Client().get(f"/api/v1/runs/{adoption.run.pk}/", **bearer(token)).json()
    assert run["adopted_from"] == {
        "experiment": experiment.pk,
        "adoption": adoption.pk,
        "rank": rank,
        "configuration": adoption.configuration,
        "reverted": False,
        "link": f"http://testserver/api/v1/experiments/{experiment.pk}/",
    }

    again = _post(token, f"/api/v1/experiments/{experiment.pk}/use/", {"rationale": "again", "rank": rank})
    assert again.status_code == 400 and "is already in use on staging" in again.json()["problems"][0]
    path = f"/api/v1/experiments/{experiment.pk}/adoptions/{adoption.pk}/revert/"
    assert _post(token, path, {}).status_code == 400  # the reason is required
    reverted = _post(token, path, {"reason": "slower"})
    assert reverted.status_code == 200, reverted.content
    assert {k: reverted.json()[k] for k in ("reverted_by", "revert_reason", "runs_used")} == {
        "reverted_by": "rita",
        "revert_reason": "slower",
        "runs_used": [adoption.run.pk],
    }
    assert _sent(target) == BEFORE
    twice = _post(token, path, {"reason": "slower"})
    assert twice.status_code == 400 and "nothing to revert" in twice.json()["problems"][0]
    detail = Client().get(f"/api/v1/experiments/{experiment.pk}/", **bearer(token)).json()
    assert [a["id"] for a in detail["adoptions"]] == [adoption.pk] and detail["adoptions"][0]["reverted_at"]
    run = Client().get(f"/api/v1/runs/{adoption.run.pk}/", **bearer(token)).json()
    assert run["adopted_from"]["reverted"] is True


def test_the_api_refuses_adopt_and_revert_to_who_does_not_review_the_set_and_to_a_read_token(
    rita: User, victor: User, experiment: Experiment, target: SearchTarget, token_for: TokenFor
) -> None:
    adoption = experiment_adopt(experiment=experiment, by=rita, rationale="better")
    after = _sent(target)
    path = f"/api/v1/experiments/{experiment.pk}/adoptions/{adoption.pk}/revert/"
    other = token_for(victor, "read", "runs:write")
    assert _post(other, path, {"reason": "x"}).status_code == 404
    assert _post(other, f"/api/v1/experiments/{experiment.pk}/use/", {"rationale": "x"}).status_code == 404
    assert Client().get(f"/api/v1/runs/{adoption.run_id}/", **bearer(other)).status_code == 404
    reader = token_for(rita, "read")
    assert _post(reader, path, {"reason": "x"}).status_code == 403
    assert _post(reader, f"/api/v1/experiments/{experiment.pk}/use/", {"rationale": "x"}).status_code == 403
    elsewhere = finished_experiment(experiment.golden_version, target, rita, grid={"params": {"k1": [3]}})
    mine = token_for(rita, "read", "runs:write")
    wrong = f"/api/v1/experiments/{elsewhere.pk}/adoptions/{adoption.pk}/revert/"
    assert _post(mine, wrong, {"reason": "x"}).status_code == 404
    assert _sent(target) == after and ExperimentAdoption.objects.get(pk=adoption.pk).stands
