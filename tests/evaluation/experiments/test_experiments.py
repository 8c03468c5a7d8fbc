"""Experiments in the app (docs/experiments.md, "In the app"): the refusals, worded as `assay sweep`'s;
an experiment on the demo search service (its own process on a loopback port) equal to `assay sweep` of
the same grid and seed; cancel; the sweeper sending a chunk whose lease ran out again. Eager Celery."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from assay.experiment import SweepSettings, sweep_sync
from assay.golden.format import parse_json
from assay.targets import harness_config
from evaluation.experiments.services.chunks import experiment_chunk_process
from evaluation.experiments.services.experiments import (
    ExperimentError,
    experiment_advance,
    experiment_begin,
    experiment_cancel,
    experiment_create,
    experiments_sweep,
)
from evaluation.models import Experiment, ExperimentChunk, ExperimentResult, SearchTarget
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.experiments import DEMO, demo_url_fixture  # noqa: F401  (fixtures by name)
from tests.support.runs import (  # noqa: F401  (fixtures by name)
    eager_celery,
    golden_file,
    make_target,
    make_version,
    stub_fixture,
)
from tests.support.stub_server import Reply, StubServer

pytestmark = pytest.mark.django_db

GRID = {"params": {"title_weight": [0.5, 1, 3, 6, 12], "min_should_match": [1, 2, 3, 4]}}
Status = Experiment.Status


def _refused(**kwargs: Any) -> list[str]:
    with pytest.raises(ExperimentError) as caught:
        experiment_create(**kwargs)
    return caught.value.problems


def test_bad_grids_are_refused_in_the_words_of_assay_sweep(
    golden_set: GoldenSet, stub: StubServer, rita: User
) -> None:
    version = make_version(golden_set, golden_file(20))
    target = make_target(f"{stub.url}/search", golden_set)
    base = {"golden_version": version, "target": target, "created_by": rita}

    assert _refused(**base, grid="{not json") == [
        "grid: not JSON: invalid JSON at line 1 column 2: Expecting property name enclosed in double quotes"
    ]
    assert _refused(**base, grid="") == ['grid: empty; expected {"params": {...}} or {"configs": [...]}']
    assert _refused(**base, grid={"params": {"a": list(range(30)), "b": list(range(20))}}) == [
        "grid: 600 configurations (30 x 20); at most 500 in one sweep"
    ]
    assert _refused(**base, grid={"params": {"title_weight": []}}) == [
        'grid: "params.title_weight": an empty list of values'
    ]
    assert _refused(**base, grid={"configs": [{"size": 3}]})[0].startswith("grid: configuration 1 {size=3}: ")
    assert _refused(**base, grid={"configs": [{"api_key": "abc"}]}) == [
        "grid configuration 1.api_key: looks like a credential; "
        + _refused(**base, grid={"configs": [{"api_key": "abc"}]})[0].split("; ", 1)[1]
    ]
    assert _refused(**base, grid={"configs": [{"w": 1}]}, top=0) == ["top 0: must be at least 1"]
    assert _refused(**base, grid={"configs": [{"w": 1}]}, metric="recall") == [
        "metric 'recall': expected one of ndcg, mrr, precision_at_k"
    ]
    tiny = make_version(golden_set, golden_file(1), name="tiny")
    assert _refused(**{**base, "golden_version": tiny}, grid={"configs": [{"w": 1}]})[0].startswith(
        "the held-out part is empty"
    )
    assert not Experiment.objects.exists()


def test_an_experiment_equals_assay_sweep_of_the_same_grid_and_seed(
    golden_set: GoldenSet, rita: User, demo_url: str, django_capture_on_commit_callbacks: Any
) -> None:
    golden = parse_json((DEMO / "golden.json").read_bytes())
    version = make_version(golden_set, golden)
    target = make_target(f"{demo_url}/search", golden_set, concurrency=8)
    grid = {"params": {"title_weight": [1, 3, 6], "min_should_match": [1, 3]}}

    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        experiment = experiment_create(
            golden_version=version, target=target, grid=grid, created_by=rita, seed=1
        )
    experiment.refresh_from_db()

    assert experiment.status == Status.SUCCEEDED, experiment.error_message
    assert experiment.done == experiment.total == 7 * 56 + 4 * 25
    assert ExperimentResult.objects.filter(experiment=experiment).count() == experiment.total
    cli = sweep_sync(
        golden,
        harness_config(target.spec(), size=golden.k),
        [{"title_weight": w, "min_should_match": m} for w in (1, 3, 6) for m in (1, 3)],
        SweepSettings(seed=1),
    )
    app = experiment.result
    assert app is not None
    keys = ("split", "baseline", "configs", "confirmed", "best", "winner", "optimism", "coverage", "echoes")
    for key in (*keys, "metric", "top", "k", "alpha"):
        assert app[key] == cli[key], key
    # No configuration sends the baseline's request here, so nothing is shared: every search is sent once,
    # counted before the phase's last answer is written.
    assert app["requests"] == cli["requests"] == {"asked": 492, "sent": 492, "shared": 0}


def test_cancel_stops_the_experiment_and_nothing_advances_it(
    golden_set: GoldenSet, stub: StubServer, rita: User
) -> None:
    version = make_version(golden_set, golden_file(20))
    target = make_target(f"{stub.url}/search", golden_set)
    experiment = experiment_create(
        golden_version=version, target=target, grid={"configs": [{"w": 1}, {"w": 2}]}, created_by=rita
    )
    plan = experiment_begin(experiment_id=experiment.pk)
    assert plan is not None and plan.indices
    assert experiment_cancel(experiment=experiment, by=rita)
    outcome = experiment_chunk_process(experiment_id=experiment.pk, chunk=plan.indices[0])
    assert outcome.stopped and outcome.written == 0
    assert experiment_advance(experiment_id=experiment.pk) is None
    experiment.refresh_from_db()
    assert experiment.status == Status.CANCELLED and experiment.error_message == "cancelled by rita"
    assert not experiment_cancel(experiment=experiment, by=rita)


def test_the_sweeper_sends_a_chunk_whose_lease_ran_out_once(
    golden_set: GoldenSet, stub: StubServer, rita: User
) -> None:
    version = make_version(golden_set, golden_file(20))
    target = make_target(f"{stub.url}/search", golden_set)
    experiment = experiment_create(
        golden_version=version, target=target, grid={"configs": [{"w": 1}]}, created_by=rita
    )
    plan = experiment_begin(experiment_id=experiment.pk)
    assert plan is not None
    # A delivery claimed the first chunk and its worker died: the lease ran out.
    ExperimentChunk.objects.filter(experiment=experiment, index=plan.indices[0]).update(
        holder="gone", worker="w1@host", expires_at=timezone.now() - timedelta(seconds=1)
    )
    first, second = experiments_sweep(), experiments_sweep()
    assert list(first.resend[experiment.pk].indices) == [plan.indices[0]]
    assert experiment.pk not in second.resend
    lease = ExperimentChunk.objects.get(experiment=experiment, index=plan.indices[0])
    assert (lease.losses, lease.holder, lease.expires_at) == (1, "", None)
    for index in plan.indices:
        experiment_chunk_process(experiment_id=experiment.pk, chunk=index)
    holdout = experiment_advance(experiment_id=experiment.pk)
    assert holdout is not None
    for index in holdout.indices:
        experiment_chunk_process(experiment_id=experiment.pk, chunk=index)
    experiment_advance(experiment_id=experiment.pk)
    experiment.refresh_from_db()
    assert experiment.status == Status.SUCCEEDED
    assert ExperimentResult.objects.filter(experiment=experiment).count() == experiment.total


def test_a_target_that_does_not_list_the_set_is_refused(
    golden_set: GoldenSet, stub: StubServer, rita: User
) -> None:
    version = make_version(golden_set, golden_file(20))
    target = SearchTarget.objects.create(name="other", url=f"{stub.url}/search")
    problems = _refused(golden_version=version, target=target, grid={"configs": [{"w": 1}]})
    assert problems == [
        "target other is not set up for golden set help-center (add the set to the target first)"
    ]
    assert isinstance(version, GoldenVersion)


def test_an_engine_that_answers_nothing_fails_the_experiment_in_the_words_of_assay_sweep(
    golden_set: GoldenSet, stub: StubServer, rita: User, django_capture_on_commit_callbacks: Any
) -> None:
    stub.default = Reply(status=404, text="no such index")
    version = make_version(golden_set, golden_file(20))
    target = make_target(f"{stub.url}/search", golden_set)
    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        experiment = experiment_create(
            golden_version=version, target=target, grid={"configs": [{"w": 1}]}, created_by=rita
        )
    experiment.refresh_from_db()
    assert experiment.status == Status.FAILED and experiment.result is None
    assert experiment.error_message.startswith("no tuning query got an answer from the search URL in any")
    assert experiment.errors == experiment.done == 2 * len(experiment.split["tuning"])
