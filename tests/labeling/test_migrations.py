"""Migration 0004 (proposals, calibration rounds, explicit done) carries the data made before it: a
finished assignment stays done, a judgment saved with the note that was required then keeps grade and
note, its history stays, and its overturn becomes a pending proposal (the frozen label holds until a reviewer
accepts it)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("labeling", "0003_adjudication")]


def _apps_at(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


def test_a_judgment_with_a_required_note_and_its_finished_assignment_survive_the_migration() -> None:
    old = _apps_at(BEFORE)
    user = old.get_model("auth", "User").objects.create(username="alice")
    rubric = old.get_model("labeling", "Rubric").objects.create(name="r", version=1)
    golden_set = old.get_model("labeling", "GoldenSet").objects.create(
        slug="s", name="S", surface="help", rubric=rubric, frozen_version="v1"
    )
    document = old.get_model("labeling", "Document").objects.create(golden_set=golden_set, doc_id="d1")
    query = old.get_model("labeling", "Query").objects.create(
        golden_set=golden_set, external_id="q1", text="t"
    )
    old.get_model("labeling", "Candidate").objects.create(query=query, document=document)
    old.get_model("labeling", "FrozenLabel").objects.create(
        query=query, document=document, grade=3, version="v1"
    )
    assignment = old.get_model("labeling", "Assignment").objects.create(
        query=query, rater=user, kind="primary", status="done"
    )
    judgment = old.get_model("labeling", "Judgment").objects.create(
        assignment=assignment, document=document, grade=0, note="archived page"
    )
    old.get_model("labeling", "JudgmentEvent").objects.create(
        judgment=judgment, rater=user, old_grade=None, new_grade=0, note="archived page"
    )
    try:
        # Through 0004 and every later migration: the checks below use today's models.
        _apps_at(MigrationExecutor(connection).loader.graph.leaf_nodes())
        from labeling.models import Assignment, Judgment, JudgmentEvent, LabelProposal
        from labeling.selectors import labels_consolidated

        moved = Assignment.objects.get(pk=assignment.pk)
        assert (moved.status, moved.kind, moved.calibration_round_id) == ("done", "primary", None)
        kept = Judgment.objects.get(pk=judgment.pk)
        assert (kept.grade, kept.note) == (0, "archived page")
        assert JudgmentEvent.objects.filter(judgment=kept).count() == 1
        # The overturn that was a label at once is now a proposal for a reviewer, with its note ...
        proposal = LabelProposal.objects.get()
        assert (proposal.judgment_id, proposal.rater_id, proposal.status) == (kept.pk, user.pk, "pending")
        assert (proposal.from_grade, proposal.from_version, proposal.to_grade) == (3, "v1", 0)
        assert proposal.note == "archived page"
        # ... and the label is the frozen one until a reviewer accepts it.
        [label] = labels_consolidated(golden_set=moved.query.golden_set).labels
        assert (label.grade, label.method) == (3, "frozen")
    finally:
        _apps_at(MigrationExecutor(connection).loader.graph.leaf_nodes())
