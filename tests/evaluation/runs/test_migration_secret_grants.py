"""Migration evaluation 0011: every secret variable a setting named before grants existed is granted to the
set(s) it is used for, so nothing that worked stops on upgrade; names the rule refuses get nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [
    ("labeling", "0012_secret_grant"),
    ("golden_io", "0003_goldenversion_base_manager"),
    ("evaluation", "0010_run_rescore_baseline"),
]


def _apps_at(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


def test_the_variables_settings_name_today_are_granted_to_their_sets() -> None:
    old = _apps_at(BEFORE)
    rubric = old.get_model("labeling", "Rubric").objects.create(name="r", version=1)
    GoldenSet = old.get_model("labeling", "GoldenSet")
    billing, docs, _bare = (
        GoldenSet.objects.create(slug=slug, name=slug, surface="help", rubric=rubric)
        for slug in ("billing", "docs", "bare")
    )
    old.get_model("labeling", "Judge").objects.create(
        golden_set=billing, rubric=rubric, name="j", base_url="http://x/v1", model="m",
        api_key_env="ASSAY_SECRET_OPENAI", instructions="i", config_hash="h",
    )  # fmt: skip
    old.get_model("golden_io", "GitExportConfig").objects.create(
        golden_set=docs, repository_path="/tmp/g", file_path="g.json",
        username_env="ASSAY_SECRET_GIT_USER", password_env="GIT_TOKEN",  # the second broke the rule already
    )  # fmt: skip
    target = old.get_model("evaluation", "SearchTarget").objects.create(
        name="prod", url="http://x/search", webhook_env="ASSAY_SECRET_SLACK",
        headers={"X-Api-Key": {"env": "ASSAY_SECRET_SEARCH"}, "X-Tenant": "acme"},
    )  # fmt: skip
    target.golden_sets.set([billing, docs])
    old.get_model("evaluation", "SearchTarget").objects.create(
        name="unlisted", url="http://x/search", headers={"X-Api-Key": {"env": "ASSAY_SECRET_NOWHERE"}}
    )
    try:
        _apps_at(MigrationExecutor(connection).loader.graph.leaf_nodes())
        from labeling.models import SecretGrant

        granted = set(SecretGrant.objects.values_list("golden_set__slug", "variable"))
        assert granted == {
            ("billing", "ASSAY_SECRET_OPENAI"),
            ("docs", "ASSAY_SECRET_GIT_USER"),
            ("billing", "ASSAY_SECRET_SEARCH"),
            ("docs", "ASSAY_SECRET_SEARCH"),
            ("billing", "ASSAY_SECRET_SLACK"),
            ("docs", "ASSAY_SECRET_SLACK"),
        }
        note = SecretGrant.objects.get(golden_set__slug="billing", variable="ASSAY_SECRET_SEARCH").note
        assert note.startswith("granted on upgrade: header X-Api-Key of target 'prod'")
        assert not SecretGrant.objects.filter(golden_set__slug="bare").exists()
    finally:
        _apps_at(MigrationExecutor(connection).loader.graph.leaf_nodes())
