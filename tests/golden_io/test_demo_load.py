"""`demo_load`, golden_io's since it imports the demo golden file: idempotent, and prints the logins."""

from __future__ import annotations

import json
import stat
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from golden_io.management.commands import demo_load
from labeling.models import (
    Assignment,
    Candidate,
    DisputeCheck,
    Document,
    FrozenLabel,
    GoldenSet,
    Judge,
    Judgment,
    Query,
    Rubric,
)
from labeling.selectors import labels_consolidated
from tests import factories

pytestmark = pytest.mark.django_db


def _call(*args: Any, **kwargs: Any) -> str:
    out = StringIO()
    call_command(*args, stdout=out, **kwargs)
    return out.getvalue()


@pytest.fixture
def var_dir(tmp_path: Path, settings: Any) -> Path:
    settings.VAR_DIR = tmp_path
    return tmp_path


def _snapshot() -> dict[str, Any]:
    return {
        "users": sorted(User.objects.values_list("username", flat=True)),
        "rubrics": Rubric.objects.count(),
        "documents": Document.objects.count(),
        # With their tiers: a reload must not put the disputed queries back into core.
        "queries": sorted(Query.objects.values_list("external_id", "tier", "status", "quarantine_reason")),
        "frozen": sorted(FrozenLabel.objects.values_list("query__external_id", "document__doc_id", "grade")),
        "pool": sorted(Candidate.objects.values_list("query__external_id", "document__doc_id", "provenance")),
        "assignments": sorted(
            Assignment.objects.values_list("query__external_id", "rater__username", "kind")
        ),
        "judges": list(Judge.objects.values_list("name", "model", "base_url", "stand_in", "config_hash")),
    }


def test_the_stand_in_judges_point_at_the_judge_url_setting(var_dir: Path, settings: Any) -> None:
    # A second stack on the machine moves its judge stand-in (runstack --judge-port follows the setting).
    settings.ASSAY_DEMO_JUDGE_URL = "http://127.0.0.1:18766/v1"
    _call("demo_load", "--no-logins")
    assert sorted(Judge.objects.filter(stand_in=True).values_list("model", "base_url")) == [
        ("assay-demo-answer-key", "http://127.0.0.1:18766/v1"),
        ("assay-demo-overlap", "http://127.0.0.1:18766/v1"),
    ]


def test_demo_load_is_idempotent_and_prints_the_logins(var_dir: Path) -> None:
    out = _call("demo_load")
    logins = json.loads((var_dir / "demo-logins.json").read_text())
    assert set(logins) == {"rater1", "rater2", "reviewer", "admin"}
    assert stat.S_IMODE((var_dir / "demo-logins.json").stat().st_mode) == 0o600
    for name, password in logins.items():
        assert f"{name:<9} {password}" in out
        assert User.objects.get(username=name).check_password(password)
    first = _snapshot()
    assert first["documents"] > 300 and len(first["queries"]) > 75
    frozen_version = GoldenSet.objects.get(slug="help-center").frozen_version
    assert ("q-0471", "doc-8821", 3) in first["frozen"]
    assert {k for _, _, k in first["assignments"]} == {"primary", "second"}
    assert {r for _, r, _ in first["assignments"]} == {"rater1", "rater2"}
    # The two stand-in judges (demo/judge_service.py), once each, pointing at the port runstack starts
    # them on: the term-overlap grader and the answer key (billing only).
    assert sorted((model, base_url, stand_in) for _, model, base_url, stand_in, _ in first["judges"]) == [
        ("assay-demo-answer-key", "http://127.0.0.1:8766/v1", True),
        ("assay-demo-overlap", "http://127.0.0.1:8766/v1", True),
    ]
    assert "Demo judges: the stand-ins (term overlap; answer key, billing only)" in out
    # Two dual-labeled queries were graded with a disagreement: disputed, in shadow, waiting for a reviewer.
    checks = DisputeCheck.objects.filter(disputed=True)
    assert checks.count() == 2
    disputed = {c.query.external_id for c in checks}
    assert all(
        q.tier == "shadow" and q.stratum in ("account", "developer")
        for q in Query.objects.filter(external_id__in=disputed)
    )
    assert "q-0471" not in disputed
    assert f"Graded as a disagreement for the review queue: {', '.join(sorted(disputed))}" in out
    # Both raters graded 19 more dual-labeled queries without a dispute (21 checks in all); three stay open.
    assert DisputeCheck.objects.count() == 21 and "Dual-labeled queries graded by both raters: 19." in out
    open_seconds = Assignment.objects.filter(kind="second").exclude(status="done")
    assert open_seconds.count() == 3
    # Their one-grade differences are on the pools' tail only (unjudged in the golden file, outside the
    # top), which the reviewer settled as 0: only the disputed queries' two documents wait for a
    # reviewer, and every label agrees with the golden file (0 where it has none).
    golden_set = GoldenSet.objects.get(slug="help-center")
    consolidated = labels_consolidated(golden_set=golden_set)
    waiting = consolidated.unresolved
    assert len(waiting) == 2 and {u.awaiting for u in waiting} == {"reviewer"}
    # Every grade the demo gives is dual-sample work, which counts as given: the rule that holds back a
    # single rater's unfinished work leaves nothing of the demo out, so its first freeze is what it was.
    assert consolidated.not_done == []
    frozen = {(q, d): g for q, d, g in first["frozen"]}
    query_ids = dict(Query.objects.values_list("pk", "external_id"))
    doc_ids = dict(Document.objects.values_list("pk", "doc_id"))
    for label in consolidated.labels:
        key = (query_ids[label.query_id], doc_ids[label.document_id])
        assert frozen.get(key, 0) == label.grade, key
    settled = {
        (query_ids[label.query_id], doc_ids[label.document_id])
        for label in consolidated.labels
        if label.method == "adjudicated"
    }
    assert len(settled) == 8 and not settled & frozen.keys()
    assert {q for q, _ in settled} == {"q-0406", "q-0407", "q-0408"}
    n_judgments = Judgment.objects.count()
    # Some work is already done when it runs again: the reload changes nothing and loses nothing.
    assignment = Assignment.objects.filter(rater__username="rater1", judgments__isnull=True).first()
    assert assignment is not None
    candidate = assignment.query.candidates.first()
    assert candidate is not None
    factories.JudgmentFactory.create(assignment=assignment, document=candidate.document, grade=1, note="kept")
    again = _call("demo_load")
    assert _snapshot() == first
    assert GoldenSet.objects.get(slug="help-center").frozen_version == frozen_version
    assert Judgment.objects.count() == n_judgments + 1
    assert Judgment.objects.get(assignment=assignment).note == "kept"
    assert DisputeCheck.objects.count() == 21 and "Graded as a disagreement" not in again
    assert "Dual-labeled queries graded" not in again
    assert json.loads((var_dir / "demo-logins.json").read_text()) == logins
    assert "new assignments: 0 primary, 0 second" in again
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.groups.filter(name="admins").exists()
    assert "Demo judge" not in again
    # An install made before the answer key existed gains it on its next load, and only it.
    Judge.objects.filter(model="assay-demo-answer-key").delete()
    later = _call("demo_load")
    assert "Demo judge: the stand-in (answer key, billing only)" in later
    assert _snapshot()["judges"] == first["judges"]


def test_print_logins_only_prints(var_dir: Path) -> None:
    out = _call("demo_load", "--print-logins")
    assert "Demo logins" in out and "rater1" in out
    assert not GoldenSet.objects.exists()
    assert demo_load.demo_logins() == json.loads((var_dir / "demo-logins.json").read_text())
