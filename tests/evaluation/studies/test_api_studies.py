"""The side-by-side studies' API: create a study (scope `studies:write`), its progress and results, the
answers as CSV and JSONL with the sides undone and the seed; who may (object-level: a reviewer of another
set, a rater, a token without the scope) and the worded refusals."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from assay.sxs import Expectation
from evaluation.models import StudyTask, SxsStudy
from evaluation.studies.services import Answer, study_answer
from labeling.models import GoldenSet
from tests import factories
from tests.support.evaluation import TokenFor, bearer, token_for_fixture  # noqa: F401  (fixture by name)
from tests.support.studies import two_runs

pytestmark = pytest.mark.django_db


def _post(token: str, body: dict[str, object]) -> object:
    return Client().post(
        "/api/v1/studies/", json.dumps(body), content_type="application/json", **bearer(token)
    )


def test_a_reviewer_creates_a_study_and_reads_its_progress_results_and_answers(
    golden_set: GoldenSet, rita: User, alice: User, bob: User, token_for: TokenFor
) -> None:
    run_a, run_b = two_runs(golden_set, 4)
    token = token_for(rita, "read", "studies:write")

    created = _post(token, {"run_a": run_a.pk, "run_b": run_b.pk, "raters": ["alice", "bob"], "seed": 9})

    assert created.status_code == 201, created.json()  # type: ignore[attr-defined]
    body = created.json()  # type: ignore[attr-defined]
    study = SxsStudy.objects.get(pk=body["id"])
    assert body["seed"] == 9 and body["raters"] == ["alice", "bob"] and body["shown"] == 5
    assert body["progress"] == {
        "answers": 0,
        "expected": 8,
        "raters": [
            {"rater": "alice", "answered": 0, "assigned": 4},
            {"rater": "bob", "answered": 0, "assigned": 4},
        ],
    }
    assert created["Location"] == f"http://testserver/studies/{study.pk}/"  # type: ignore[index]
    expected = body["expected_interval"]
    assert (expected["queries"], expected["spread"], expected["studies"]) == (4, 1.25, 0)
    assert expected["warn"] and expected["needed"] == 97 and body["verdict"] == "inconclusive"
    assert expected["warning"].startswith("±1.22 is wider than the 0.25 between the rule's bound (-0.25)")
    for task in StudyTask.objects.filter(study=study, rater=alice):
        study_answer(
            token=task.token,
            rater=alice,
            revision=0,
            answer=Answer(preference=1 if task.candidate_left else -1),
        )

    client = Client()
    detail = client.get(f"/api/v1/studies/{study.pk}/", **bearer(token)).json()
    assert detail["progress"]["answers"] == 4
    results = client.get(f"/api/v1/studies/{study.pk}/results/", **bearer(token)).json()
    assert results["seed"] == 9 and results["answers"] == 4 and results["verdict"]["result"] == "inconclusive"
    # Alice answered every query -1, Bob none: no spread yet, only the rule's minimum (the 4 asked).
    assert results["verdict"]["more"] == {"toward": None, "queries": 4, "total": 4, "capped": False}
    assert detail["verdict"] == "inconclusive"
    jsonl = client.get(f"/api/v1/studies/{study.pk}/answers/jsonl/", **bearer(token)).content.decode()
    rows = [json.loads(line) for line in jsonl.splitlines()]
    # Shown +1 (right slightly better) with the candidate left: -1 in the candidate's favour, and so on.
    assert {row["preference"] for row in rows} == {-1} and {row["seed"] for row in rows} == {9}
    csv = client.get(f"/api/v1/studies/{study.pk}/answers/csv/", **bearer(token))
    assert csv["Content-Type"] == "text/csv; charset=utf-8" and csv.content.decode().startswith(
        "study,seed,query_id"
    )
    listed = client.get("/api/v1/studies/?golden_set=help-center", **bearer(token)).json()
    assert [s["id"] for s in listed["results"]] == [study.pk]


# The JSON types of the OpenAPI schema, as the body's values are (a float may come as an integer).
JSON_TYPES = {"integer": (int,), "number": (int, float), "boolean": (bool,), "string": (str,)}


def _component(schema: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    """The component a `$ref` (or an `allOf` of one, as drf-spectacular writes a read-only nested one)
    names."""
    ref = ref["allOf"][0] if "allOf" in ref else ref
    found: dict[str, Any] = schema["components"]["schemas"][ref["$ref"].removeprefix("#/components/schemas/")]
    return found


def test_the_schema_declares_the_201_of_a_created_study_as_it_answers(
    golden_set: GoldenSet, rita: User, alice: User, bob: User, token_for: TokenFor
) -> None:
    token = token_for(rita, "read", "studies:write")
    schema = Client().get("/api/schema/", {"format": "json"}, **bearer(token)).json()
    run_a, run_b = two_runs(golden_set, 4)

    created = _post(token, {"run_a": run_a.pk, "run_b": run_b.pk, "raters": ["alice", "bob"]})

    answer = schema["paths"]["/api/v1/studies/"]["post"]["responses"]["201"]
    shape = _component(schema, answer["content"]["application/json"]["schema"])
    interval = _component(schema, shape["properties"]["expected_interval"])
    # Every figure of `assay.sxs.Expectation`, each required, and nothing else.
    fields = {field.name for field in dataclasses.fields(Expectation)}
    assert set(interval["properties"]) == set(interval["required"]) == fields
    assert "expected_interval" in shape["required"]
    body = created.json()  # type: ignore[attr-defined]
    assert created.status_code == 201, body  # type: ignore[attr-defined]
    assert set(body) == set(shape["properties"])
    for name, value in body["expected_interval"].items():
        declared = interval["properties"][name]
        kinds = JSON_TYPES[declared["type"]]
        assert type(value) in kinds or (value is None and declared.get("nullable")), (name, value)
    # The runs' own verdict enum is not reused, and the list of studies keeps its own shape.
    listed = schema["paths"]["/api/v1/studies/"]["get"]["responses"]["200"]["content"]["application/json"]
    assert "expected_interval" not in json.dumps(_component(schema, listed["schema"]))


def test_bad_studies_are_refused_in_words(
    golden_set: GoldenSet, rita: User, alice: User, token_for: TokenFor
) -> None:
    run_a, run_b = two_runs(golden_set, 3)
    token = token_for(rita, "read", "studies:write")

    itself = _post(token, {"run_a": run_a.pk, "run_b": run_a.pk, "raters": ["alice"], "answers_per_query": 1})
    nobody = _post(token, {"run_a": run_a.pk, "run_b": run_b.pk, "raters": ["zed"]})
    too_many = _post(
        token,
        {
            "run_a": run_a.pk,
            "run_b": run_b.pk,
            "raters": ["alice"],
            "answers_per_query": 1,
            "selection": "sample",
            "size": 9,
        },
    )
    bad_rule = _post(
        token,
        {
            "run_a": run_a.pk,
            "run_b": run_b.pk,
            "raters": ["alice"],
            "answers_per_query": 1,
            "rule": {"min_lower": 7},
        },
    )

    assert itself.status_code == 400 and itself.json()["problems"] == [  # type: ignore[attr-defined]
        f"{run_a.label} against itself: a study compares two different runs"
    ]
    assert nobody.json()["problems"] == ["raters: no user named zed"]  # type: ignore[attr-defined]
    assert too_many.json()["problems"] == [  # type: ignore[attr-defined]
        "size: 9 queries asked for, but only 3 are available to choose from"
    ]
    assert bad_rule.status_code == 400 and "min_lower" in json.dumps(bad_rule.json())  # type: ignore[attr-defined]
    assert not SxsStudy.objects.exists()


def test_who_may(golden_set: GoldenSet, rita: User, alice: User, token_for: TokenFor) -> None:
    run_a, run_b = two_runs(golden_set, 3)
    made = _post(
        token_for(rita), {"run_a": run_a.pk, "run_b": run_b.pk, "raters": ["alice"], "answers_per_query": 1}
    )
    study_id = made.json()["id"]  # type: ignore[attr-defined]
    otto = User.objects.create_user("otto")
    otto.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    factories.GoldenSetFactory.create(slug="other", reviewers=[otto])
    body = {"run_a": run_a.pk, "run_b": run_b.pk, "raters": ["alice"], "answers_per_query": 1}

    # A reviewer of another set, and a rater, see no study and no run: 404.
    for user in (otto, alice):
        token = token_for(user)
        for path in ("", "results/", "answers/csv/", "answers/jsonl/"):
            assert Client().get(f"/api/v1/studies/{study_id}/{path}", **bearer(token)).status_code == 404
        assert _post(token, body).status_code == 404  # type: ignore[attr-defined]
        assert Client().get("/api/v1/studies/", **bearer(token)).json()["results"] == []
    # A token without the scope: 403, in words.
    refused = _post(token_for(rita, "read"), body)
    assert refused.status_code == 403  # type: ignore[attr-defined]
    assert "studies:write" in refused.json()["detail"]  # type: ignore[attr-defined]
    assert SxsStudy.objects.count() == 1
    assert (
        Client().get(f"/api/v1/studies/{study_id}/answers/xml/", **bearer(token_for(rita))).status_code == 404
    )
