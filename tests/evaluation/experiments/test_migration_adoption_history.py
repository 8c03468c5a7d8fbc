"""Migration evaluation 0020: an adoption recorded before it gets the configuration it used (the winner
of the figures current then) and which of the names its target sends are stage toggles, so it can be
reverted exactly like a new one."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [
    ("labeling", "0012_secret_grant"),
    ("golden_io", "0004_golden_imports"),
    ("evaluation", "0019_study_close"),
]


def _apps_at(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


def test_an_adoption_made_before_gets_its_configuration_and_its_targets_stage_toggles() -> None:
    old = _apps_at(BEFORE)
    rubric = old.get_model("labeling", "Rubric").objects.create(name="r", version=1)
    golden_set = old.get_model("labeling", "GoldenSet").objects.create(
        slug="help", name="help", surface="help", rubric=rubric
    )
    version = old.get_model("golden_io", "GoldenVersion").objects.create(
        golden_set=golden_set, name="v1", content=b"{}", sha256="0" * 64, rubric_name="r", rubric_version=1,
        k=10, relevant_min_grade=2, scale_min=0, scale_max=3,
    )  # fmt: skip
    target = old.get_model("evaluation", "SearchTarget").objects.create(
        name="prod", url="http://x/search", params={"k1": 3}, stages={"rewrite": True}
    )
    winner = {"grid": {"k1": 3, "rewrite": True}, "rank": 2}
    experiment = old.get_model("evaluation", "Experiment").objects.create(
        golden_version=version, target=target, grid={"configs": []}, result={"winner": winner}
    )
    user = old.get_model("auth", "User").objects.create(username="rita")
    old.get_model("evaluation", "ExperimentAdoption").objects.create(
        experiment=experiment, target=target, rationale="better", adopted_by=user,
        params_before={"k1": 2, "rewrite": False}, params_after={"k1": 3, "rewrite": True},
    )  # fmt: skip
    try:
        _apps_at(MigrationExecutor(connection).loader.graph.leaf_nodes())
        from evaluation.models import ExperimentAdoption

        adoption = ExperimentAdoption.objects.get()
        assert (adoption.configuration, adoption.rank) == ({"k1": 3, "rewrite": True}, 2)
        assert (adoption.stages_before, adoption.stages_after) == ({"rewrite": False}, {"rewrite": True})
        assert adoption.target_fields(before=True) == {"params": {"k1": 2}, "stages": {"rewrite": False}}
        assert adoption.stands and adoption.revert_runs == []
    finally:
        _apps_at(MigrationExecutor(connection).loader.graph.leaf_nodes())
