"""Coverage beside every gain (docs/experiments.md, "Coverage"): judged@k per configuration on both parts
in the table, the chart's tooltips and the API; a winner that brings up documents nobody rated carries a
warning; "Queue the gaps for rating" puts the unjudged top-k documents of the baseline and the confirmed
configurations into their queries' pools, "Ask the judge" sends them to the set's qualified judge; once
labeled (a newer golden version of the set: the labels frozen as `golden_version_freeze` cuts them,
tested in tests/golden_io) the experiment is re-scored from its stored answers, the figures before and
after side by side, without a single request to the engine (a loopback stub that counts them).
Experiments driven in-process (tests/support/experiments.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from assay.golden.model import Judgment
from evaluation.models import ExperimentRescore, ExperimentResult, SearchTarget
from golden_io.models import GoldenVersion
from labeling.models import Candidate, GoldenSet, JudgeJob
from tests import factories
from tests.support.evaluation import (  # noqa: F401  (fixtures by name)
    TokenFor,
    bearer,
    html_text,
    logged_in,
    messages_text,
    token_for_fixture,
)
from tests.support.experiments import finished_experiment
from tests.support.judge_labels import make_judge, qualify
from tests.support.runs import golden_file, make_target, make_version
from tests.support.stub_server import Recorded, Reply, StubServer, hits_reply

pytestmark = pytest.mark.django_db

QUERIES = 30
# golden_file's judgments are d1=3, d2=2, d4=1: the baseline answers every query with all three (in a
# poor order), w=3 puts d1 first and then two documents nobody rated.
BASELINE, TUNED = ["d4", "d2", "d1"], ["d1", "x1", "x2"]


def engine(request: Recorded) -> Reply:
    body = request.json
    return hits_reply(TUNED if body.get("w") == 3 else BASELINE)


@pytest.fixture
def stub() -> Any:
    with StubServer(default=engine) as server:
        yield server


@pytest.fixture
def version(golden_set: GoldenSet) -> GoldenVersion:
    # The labeling set knows the queries and the documents (what queueing needs; it invents none).
    for i in range(1, QUERIES + 1):
        factories.QueryFactory.create(golden_set=golden_set, external_id=f"q-{i}", text=f"query {i}")
    for doc in ("d1", "d2", "d4", "x1", "x2"):
        factories.DocumentFactory.create(golden_set=golden_set, doc_id=doc)
    return make_version(golden_set, golden_file(QUERIES))


@pytest.fixture
def target(stub: StubServer, golden_set: GoldenSet) -> SearchTarget:
    return make_target(f"{stub.url}/search", golden_set)


def _labeled(golden_set: GoldenSet) -> GoldenVersion:
    """The next version of the set: every query's x1 rated 2, x2 rated 0."""
    golden = golden_file(QUERIES, version="2026-09-01")
    queries = tuple(
        replace(q, judgments=(*q.judgments, Judgment("x1", 2), Judgment("x2", 0))) for q in golden.queries
    )
    return make_version(golden_set, replace(golden, queries=queries))


def test_a_winner_that_loses_coverage_warns_and_judging_the_gaps_then_re_scoring_changes_its_figures(
    rita: User,
    golden_set: GoldenSet,
    version: GoldenVersion,
    target: SearchTarget,
    stub: StubServer,
    token_for: TokenFor,
) -> None:
    experiment = finished_experiment(version, target, rita, grid={"params": {"w": [3]}})
    result = experiment.result
    assert result is not None and result["winner"] is not None and result["winner"]["grid"] == {"w": 3}
    config, baseline = result["configs"][0], result["baseline"]
    assert config["tuning"]["judged_at_k"] == pytest.approx(1 / 3)
    assert config["holdout"]["judged_at_k"] == pytest.approx(1 / 3)
    assert baseline["tuning"]["judged_at_k"] == baseline["holdout"]["judged_at_k"] == 1.0
    warning = result["coverage"]["warning"]
    assert warning == (
        "judged@k 0.3333 on the tuning queries against the baseline's 1.0000 and 0.3333 on the held-out "
        "queries against the baseline's 1.0000, more than 0.05 below: part of its gain may be documents "
        "nobody rated (nDCG counts them as irrelevant); judge the gaps and re-score"
    )

    client = logged_in(rita)
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    text = html_text(page)
    assert "The winner: w=3" in text and warning in text
    assert "judged@k 0.3333" in page  # the line chart's tooltip
    assert "60 unjudged documents in the top 10 of the baseline and the confirmed configurations" in text
    token = token_for(rita, "read", "runs:write")
    api = Client().get(f"/api/v1/experiments/{experiment.pk}/", **bearer(token)).json()
    assert api["coverage_margin"] == 0.05 and api["result"]["coverage"]["warning"] == warning
    assert api["result"]["configs"][0]["holdout"]["judged_at_k"] == pytest.approx(1 / 3)
    searched, answers = len(stub.requests), ExperimentResult.objects.filter(experiment=experiment).count()

    queued = client.post(f"/experiments/{experiment.pk}/gaps/", follow=True)
    assert messages_text(queued)[0].startswith("Queued 60 documents for rating, new to the pools of q-1, ")
    pooled = Candidate.objects.filter(query__golden_set=golden_set, document__doc_id__in=["x1", "x2"])
    assert pooled.count() == 2 * QUERIES
    assert {p["system"] for c in pooled for p in c.provenance} == {f"experiment:{experiment.pk}"}
    refused = client.post(f"/experiments/{experiment.pk}/rescore/", follow=True)
    assert messages_text(refused) == [
        f"Not re-scored: no newer version of help-center than {version.name}: freeze the new labels first"
    ]

    newer = _labeled(golden_set)
    assert f"Re-score on {newer.name}" in html_text(
        client.get(f"/experiments/{experiment.pk}/").content.decode()
    )
    done = client.post(f"/experiments/{experiment.pk}/rescore/", follow=True)
    assert messages_text(done) == [
        f"Re-scored on {newer.name} from the stored answers, nothing searched: winner w=3 before, winner "
        "w=3 now."
    ]
    # Not a single search: the engine saw no request, and the answers are the same rows.
    assert len(stub.requests) == searched
    assert ExperimentResult.objects.filter(experiment=experiment).count() == answers
    after = ExperimentRescore.objects.get(experiment=experiment).result
    assert after["coverage"]["warning"] is None
    assert after["configs"][0]["holdout"]["judged_at_k"] == after["baseline"]["holdout"]["judged_at_k"] == 1.0
    # x1 is relevant: the ideal list grows, the baseline's nDCG falls and the winner's rises.
    assert after["baseline"]["holdout"]["ndcg"] < baseline["holdout"]["ndcg"]
    assert after["configs"][0]["holdout"]["ndcg"] > config["holdout"]["ndcg"]
    assert (
        after["rescored"]["from_version"] == version.name
        and after["rescored"]["golden_version"] == newer.name
    )
    assert after["requests"] == result["requests"]

    text = html_text(client.get(f"/experiments/{experiment.pk}/").content.decode())
    assert f"On {version.name}: winner w=3. On {newer.name}: winner w=3." in text
    before_value, after_value = (
        format(v, ".4f") for v in (config["holdout"]["ndcg"], after["configs"][0]["holdout"]["ndcg"])
    )
    assert f"rank 1 w=3 {before_value} {after_value} 0.3333 1.0000" in text
    api = Client().get(f"/api/v1/experiments/{experiment.pk}/", **bearer(token)).json()
    assert api["result"] == result  # the figures before, kept
    assert [(r["golden_version"], r["created_by"], r["result"]) for r in api["rescores"]] == [
        (newer.name, "rita", after)
    ]
    again = Client().post(
        f"/api/v1/experiments/{experiment.pk}/rescore/", {}, content_type="application/json", **bearer(token)
    )
    assert again.status_code == 201 and len(again.json()["rescores"]) == 1  # the one made before
    assert len(stub.requests) == searched


def test_the_api_queues_the_gaps_and_refuses_what_it_cannot_do(
    rita: User, version: GoldenVersion, target: SearchTarget, token_for: TokenFor
) -> None:
    experiment = finished_experiment(version, target, rita, grid={"params": {"w": [3]}})
    token = token_for(rita, "read", "runs:write")

    def post(path: str, body: dict[str, Any]) -> Any:
        return Client().post(
            f"/api/v1/experiments/{experiment.pk}/{path}/",
            body,
            content_type="application/json",
            **bearer(token),
        )

    queued = post("gaps", {"to": "raters"})
    assert queued.status_code == 200 and queued.json()["added"] == 2 * QUERIES
    assert queued.json()["queued"]["q-1"] == ["x1", "x2"]
    assert post("gaps", {"to": "raters"}).json()["sentences"][0].startswith("Nothing was queued: the 60 ")
    judge = post("gaps", {"to": "judge"}).json()
    assert (
        judge["added"] == 0
        and judge["sentences"][0] == "Nothing was sent to a judge, and no document joined a pool."
    )
    assert post("gaps", {"to": "everyone"}).status_code == 400
    refused = post("rescore", {})
    assert refused.status_code == 400
    assert refused.json()["problems"] == [
        f"no newer version of help-center than {version.name}: freeze the new labels first"
    ]
    assert post("rescore", {"version": "nope"}).status_code == 404


def test_the_gaps_go_to_the_sets_qualified_judge(
    rita: User, golden_set: GoldenSet, version: GoldenVersion, target: SearchTarget
) -> None:
    experiment = finished_experiment(version, target, rita, grid={"params": {"w": [3]}})
    judge = make_judge(golden_set, "m1")
    client = logged_in(rita)
    assert "Ask the judge: no judge is qualified" in html_text(
        client.get(f"/experiments/{experiment.pk}/").content.decode()
    )
    qualify(judge, rita)
    page = html_text(client.get(f"/experiments/{experiment.pk}/").content.decode())
    assert f"Ask the judge (60 pairs, {judge.name})" in page

    asked = client.post(f"/experiments/{experiment.pk}/gaps/judge/", follow=True)
    job = JudgeJob.objects.get()
    assert (job.judge, job.total, job.created_by) == (judge, 2 * QUERIES, rita)
    pairs = {(i.query.external_id, i.document.doc_id) for i in job.items.select_related("query", "document")}
    assert pairs == {(f"q-{i}", doc) for i in range(1, QUERIES + 1) for doc in ("x1", "x2")}
    assert messages_text(asked)[0].startswith(
        f"Asked the judge about 60 unjudged documents of 30 queries: {judge.name}"
    )
