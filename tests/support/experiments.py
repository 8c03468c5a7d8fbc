"""Experiment tests' helpers: an experiment driven to its end in the test's own process, step by step as
the tasks would drive it (start, each chunk, advance, each held-out chunk, advance), without Celery or
its on-commit hooks, for tests that need a finished experiment to exist (pages, permissions), not the
workers; a stub engine that reads a tuning parameter; the demo search service on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluation.experiments.services.chunks import experiment_chunk_process
from evaluation.experiments.services.experiments import (
    ExperimentPlan,
    experiment_advance,
    experiment_begin,
    experiment_create,
)
from evaluation.models import Experiment, SearchTarget
from golden_io.models import GoldenVersion
from tests.support.processes import REPO, serving
from tests.support.stub_server import Recorded, Reply, hits_reply

DEMO = Path(REPO) / "demo"

GRID = {"params": {"w": [1, 2], "mode": ["a", "b"]}}


def finished_experiment(
    version: GoldenVersion, target: SearchTarget, by: Any, grid: Any = None, **options: Any
) -> Experiment:
    experiment = experiment_create(
        golden_version=version, target=target, grid=grid or GRID, created_by=by, **options
    )
    experiment_finish(experiment, experiment_begin(experiment_id=experiment.pk))
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.SUCCEEDED, experiment.error_message
    return experiment


def experiment_finish(experiment: Experiment, plan: ExperimentPlan | None, *, skip: int = 0) -> None:
    """Drive a started experiment to its end from `plan` (its first `skip` chunks already processed)."""
    while plan is not None:
        for index in plan.indices[skip:]:
            experiment_chunk_process(experiment_id=experiment.pk, chunk=index)
        skip = 0
        plan = experiment_advance(experiment_id=experiment.pk)


def tuned_answer(request: Recorded) -> Reply:
    """A stub engine that reads a tuning parameter (`w`, `title_weight` or `k1`, whichever the body has):
    below 2 (or none: the usual baseline) it answers d3, d2, d1; from 2 d2, d1, d3; from 3 d1, d2, d4,
    the ideal list for `tests.support.runs.golden_file`'s judgments. So a grid over it has a winner, and
    its value 1 returns the baseline's results."""
    body = request.json if request.body else {}
    value = next((body[name] for name in ("w", "title_weight", "k1") if name in body), None)
    value = value if isinstance(value, int | float) else 0
    if value >= 3:
        return hits_reply(["d1", "d2", "d4"])
    return hits_reply(["d2", "d1", "d3"] if value >= 2 else ["d3", "d2", "d1"])


@pytest.fixture(name="demo_url")
def demo_url_fixture() -> Iterator[str]:
    """The demo search service in its own process on a loopback port (it ignores unknown parameters)."""
    with serving(["-m", "demo.search_service", "--corpus", str(DEMO / "corpus.jsonl"), "--port", "0"]) as url:
        yield url
