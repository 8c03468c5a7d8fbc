"""The demo story end to end, as `make run` plays it: the real demo search service on a free port, a real
Celery worker process, `demo_load` then `demo_runs`: a baseline with the rewriter off is promoted, the run
with `rewrite=true` fails on the billing stratum with q-0471 among the top losers, and the report page
shows it; queueing its unjudged documents for rating changes nothing and says they wait for a reviewer's
decision. Running `demo_runs` again adds no run."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command

from evaluation.models import Baseline, EvaluationRun, StudyTask, SxsStudy
from labeling.models import Assignment, Candidate
from tests.support.evaluation import logged_in, messages_text, page_text, section_text
from tests.support.processes import REPO, serving
from tests.support.workers import StartWorker

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not settings.CELERY_BROKER_URL.startswith("redis://"),
        reason="needs Redis as the broker: set REDIS_URL (CI and `make test` do)",
    ),
]


@pytest.fixture
def demo_search() -> Iterator[str]:
    with serving(["-m", "demo.search_service", "--corpus", "demo/corpus.jsonl", "--port", "0"]) as url:
        yield url


def test_demo_runs_tells_the_failure_story_and_is_idempotent(
    demo_search: str,
    start_worker: StartWorker,
    settings: Any,
    tmp_path: Path,
) -> None:
    settings.VAR_DIR = tmp_path  # demo_load keeps the demo logins there
    call_command("demo_load", stdout=io.StringIO())
    start_worker("w1")
    out = io.StringIO()

    call_command(
        "demo_runs", search_url=f"{demo_search}/search", site_url="http://assay.test", timeout=120, stdout=out
    )

    runs = list(EvaluationRun.objects.order_by("id"))
    assert [r.params for r in runs] == [{}, {"rewrite": True}]
    assert {r.triggered_by_label for r in runs} == {"reviewer (manage.py demo_runs)"}
    baseline, current = runs
    assert baseline.status == current.status == "succeeded"
    assert (baseline.errors, current.errors) == (0, 0)
    promoted = Baseline.objects.get()
    assert (promoted.run, promoted.rationale, promoted.approved_by.username) == (
        baseline,
        "demo baseline",
        "reviewer",
    )
    assert current.verdict == "fail" and current.gate is not None
    assert current.gate["baseline_run"] == baseline.pk
    tripped = {(f["scope"], f["metric"]) for f in current.gate["failures"]}
    assert ("stratum billing", "ndcg") in tripped and ("stratum billing", "empty_rate") in tripped
    assert not any(scope.startswith("stratum") and scope != "stratum billing" for scope, _ in tripped)
    assert "q-0471" in [loser["id"] for loser in current.gate["top_losers"]]
    text = out.getvalue()
    assert "Rewriter on: verdict FAIL" in text and "q-0471 (the refund query of demo/README.md)" in text
    assert f"The report: http://assay.test/runs/{current.pk}/" in text

    # The rewrite run's unjudged documents: queueing them changes nothing, and the words say why.
    work = list(Assignment.objects.order_by("pk").values_list("pk", "status", "completed", "reopened"))
    pool = Candidate.objects.count()
    queued = logged_in(User.objects.get(username="reviewer")).post(
        f"/runs/{current.pk}/unjudged/", follow=True
    )
    assert messages_text(queued) == [
        "Nothing was queued: the 2 unjudged documents the labeling set knows are all already in their "
        "pools, and no assignment was reopened.",
        "2 documents already in their pools wait for a reviewer's decision: decide them on the query pages "
        "of q-0202, q-0203.",
    ]
    assert Candidate.objects.count() == pool
    assert (
        list(Assignment.objects.order_by("pk").values_list("pk", "status", "completed", "reopened")) == work
    )

    # The side-by-side study of the two runs on billing, answered by rater1 and rater2 (docs/sxs.md).
    study = SxsStudy.objects.get()
    assert (study.run_a, study.run_b, study.stratum) == (baseline, current, "billing")
    assert study.verdict == "fail" and study.analysis is not None
    assert (study.analysis["asked"], study.analysis["answered"]) == (12, 12)  # as the README tour says
    assert not StudyTask.objects.filter(study=study, answered_at__isnull=True).exists()
    assert f"verdict fail: http://assay.test/studies/{study.pk}/" in text
    study_page = page_text(logged_in(User.objects.get(username="reviewer")).get(f"/studies/{study.pk}/"))
    assert "Offline against people" in study_page and "Verdict fail" in study_page
    # docs/sxs.md ("The demo's study") quotes the verdict's sentences as the page says them.
    sxs_doc = (REPO / "docs" / "sxs.md").read_text()
    assert study.analysis["verdict"]["why"] and study.analysis["verdict"]["more"] is None
    for sentence in study.analysis["verdict"]["why"]:
        assert f"- `{sentence}`" in sxs_doc and sentence in study_page

    again = io.StringIO()
    call_command("demo_runs", search_url=f"{demo_search}/search", site_url="http://assay.test", stdout=again)
    assert EvaluationRun.objects.count() == 2 and Baseline.objects.count() == 1
    assert f"Rewrite run {current.pk} exists already." in again.getvalue()
    assert SxsStudy.objects.count() == 1 and "Side-by-side study (exists already)" in again.getvalue()

    reviewer = logged_in(User.objects.get(username="reviewer"))
    page = reviewer.get(f"/runs/{current.pk}/")
    markup = page.content.decode()
    assert '<tr data-slice="billing" class="tripped">' in markup
    assert "q-0471 refund policy for annual plan" in section_text(page, "top-losers")

    # What the README's tour says of these pages ("A first tour: make run").
    readme = (REPO / "README.md").read_text()
    unjudged = section_text(page, "unjudged")  # the disputed documents: no final label, so unjudged
    assert "q-0202" in unjudged and "doc-1104" in unjudged and "q-0203" in unjudged and "doc-1112" in unjudged
    assert "`q-0202`'s `doc-1104` and `q-0203`'s `doc-1112`" in readme
    run_list = reviewer.get("/runs/").content.decode()
    assert re.search(rf'<tr id="run-{baseline.pk}"[^>]*>\s*<td>[^\n]*class="badge baseline"', run_list)
    assert "both started by `reviewer (manage.py demo_runs)`: run 1 marked\n   *baseline*" in readme
    agreement = page_text(reviewer.get("/sets/help-center/agreement/"))
    assert "0.938 reliable (lower bound 0.883 >= 0.800)" in agreement and "in 21 queries" in agreement
    assert (
        "(ordinal, 0.938 with its 95% interval [0.883, 0.982] over 21 queries; read *reliable*"
        in " ".join(readme.split())
    )
