"""The demo's qualification story (README, "A first tour", steps 5 and 6): `demo_load` leaves enough
dual-labeled human work for a judge to be measured on, and the stand-in (demo/judge_service.py) earns
the verdicts the README names, computed in-process and through a job on loopback: the term-overlap
stand-in is refused everywhere; the answer-key stand-in (which reads the demo golden file for billing) is
qualified for billing only, and once qualified its labels fill billing pairs no human labeled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from assay.judge.prompt import PromptSpec, messages
from assay.labels.judge_verdicts import NOT_QUALIFIED, QUALIFIED, Qualification, qualification_verdicts
from demo import judge_service
from golden_io import services as golden_services
from labeling.models import Document, GoldenSet, Judge, JudgeLabel, Query
from labeling.selectors.judge_items import JudgeItems, PkKey, judge_figures_get, judge_items_get
from labeling.selectors.judge_scope import qualified_judge_labels
from labeling.services import judge_qualification, judges
from tests.support.processes import REPO

pytestmark = pytest.mark.django_db

NOT_ENOUGH = "not enough data"
# What the README's tour says the stand-in earns on the demo, per scope.
VERDICTS = {
    ("overall", ""): NOT_QUALIFIED,
    ("stratum", "account"): NOT_ENOUGH,
    ("stratum", "billing"): NOT_QUALIFIED,
    ("stratum", "blog"): NOT_ENOUGH,
    ("stratum", "developer"): NOT_ENOUGH,
    ("locale", "de-DE"): NOT_ENOUGH,
    ("locale", "en-US"): NOT_QUALIFIED,
}

# The answer-key stand-in: the golden file's grades on billing (qualified there by construction), the
# overlap grader's elsewhere.
ANSWER_KEY_VERDICTS = {
    ("overall", ""): NOT_ENOUGH,
    ("stratum", "account"): NOT_ENOUGH,
    ("stratum", "billing"): QUALIFIED,
    ("stratum", "blog"): NOT_ENOUGH,
    ("stratum", "developer"): NOT_ENOUGH,
    ("locale", "de-DE"): NOT_ENOUGH,
    ("locale", "en-US"): NOT_ENOUGH,
}


@pytest.fixture
def demo(demo_once: Path) -> GoldenSet:
    """The demo as demo_load leaves it, loaded once for the module (tests/support/demo_once.py)."""
    return GoldenSet.objects.get(slug="help-center")


def _readme() -> str:
    return " ".join((REPO / "README.md").read_text().split())


def _stand_in_grades(
    golden_set: GoldenSet, items: JudgeItems, model: str = judge_service.MODEL
) -> dict[PkKey, int | None]:
    """A stand-in's grade of every item, from the prompt a job would send it (no server)."""
    judge = Judge.objects.get(golden_set=golden_set, stand_in=True, model=model)
    spec = PromptSpec(
        instructions=judge.instructions, rubric=judges.rubric_of(judge), text_budget=judge.text_budget
    )
    queries = Query.objects.in_bulk([q for q, _ in items.pks.values()])
    documents = Document.objects.in_bulk([d for _, d in items.pks.values()])
    grades: dict[PkKey, int | None] = {}
    for query_pk, document_pk in items.pks.values():
        chat = messages(
            spec, judges.prompt_query(queries[query_pk]), judges.prompt_document(documents[document_pk])
        )
        content, _ = judge_service.answer({"model": model, "messages": chat})
        grades[(query_pk, document_pk)] = json.loads(content)["grade"]
    return grades


def _verdicts(qualification: Qualification) -> dict[tuple[str, str], str]:
    rows = (qualification.overall, *qualification.strata, *qualification.locales)
    return {(v.scope, v.name): v.verdict for v in rows}


def test_the_demo_leaves_human_items_on_enough_queries(demo: GoldenSet) -> None:
    items = judge_items_get(golden_set=demo)
    queries = {i.query_id for i in items.items}
    assert len(queries) >= 15 and len(items.items) == 123 and len(queries) == 21
    assert {i.stratum for i in items.items} == {"account", "billing", "blog", "developer"}
    assert {i.locale for i in items.items} == {"de-DE", "en-US"}
    # The humans agree well, not perfectly; their figures rest on enough queries for a verdict.
    result = judge_figures_get(golden_set=demo, grades={}, items=items)
    humans = result.figures.overall.humans
    assert humans.n_queries == 21 and humans.n_pairs == 125
    assert isinstance(humans.kappa_quadratic.value, float) and 0.9 < humans.kappa_quadratic.value < 1
    # A judge that grades as the consensus does would qualify overall: the human side is not the obstacle.
    consensus = {items.pks[(i.query_id, i.doc_id)]: i.human for i in items.items}
    perfect = qualification_verdicts(
        judge_figures_get(golden_set=demo, grades=consensus, items=items).figures
    )
    assert perfect.overall.verdict == QUALIFIED and perfect.strata[1].verdict == QUALIFIED  # billing
    # Only the two disagreements demo_load grades on purpose were disputed into shadow.
    assert set(Query.objects.filter(tier="shadow").values_list("external_id", flat=True)) == {
        "q-0202",
        "q-0203",
        "q-0223",
        "q-0433",
    }
    readme = _readme()
    assert f"the {len(items.items)} dual-labeled documents with a human consensus, in 21 queries" in readme
    assert f"against the humans' {humans.kappa_quadratic.value:.3f}" in readme


def test_the_stand_in_earns_what_the_readme_says(demo: GoldenSet) -> None:
    items = judge_items_get(golden_set=demo)
    figures = judge_figures_get(golden_set=demo, grades=_stand_in_grades(demo, items), items=items).figures
    qualification = qualification_verdicts(figures)
    assert _verdicts(qualification) == VERDICTS
    readme = _readme()
    overall = figures.overall.judge.kappa_quadratic
    assert isinstance(overall.interval, tuple)
    low, high = overall.interval
    assert f"quadratic kappa {overall.value:.3f} [{low:.3f}, {high:.3f}]" in readme
    billing = figures.strata[1]
    assert billing.name == "billing"
    assert isinstance(billing.judge.kappa_quadratic.interval, tuple)
    b_low, b_high = billing.judge.kappa_quadratic.interval
    bar = qualification.strata[1].bar
    assert isinstance(bar, float)
    assert (
        f"for billing ({billing.judge.kappa_quadratic.value:.3f} [{b_low:.3f}, {b_high:.3f}] < bar {bar:.3f})"
        in (readme)
    )


def _interval(value: object, interval: object) -> str:
    assert isinstance(value, float) and isinstance(interval, tuple)
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"


def _run_qualification_job(judge: Judge, url: str, items: JudgeItems, by: User) -> None:
    Judge.objects.filter(pk=judge.pk).update(base_url=f"{url}/v1")  # where it is served: in place
    judge.refresh_from_db()
    job = judge_qualification.qualification_job_create(judge=judge, pairs=items.pks.values(), by=by)
    for start in judges.judge_job_begin(job_id=job.pk) or []:
        judges.judge_chunk_process(job_id=job.pk, start=start)
    assert judges.judge_job_finish(job_id=job.pk) == "succeeded"
    job.refresh_from_db()
    assert (job.total, job.done, job.errors) == (123, 123, 0)


def test_the_answer_key_stand_in_earns_what_the_readme_says(demo: GoldenSet) -> None:
    items = judge_items_get(golden_set=demo)
    grades = _stand_in_grades(demo, items, judge_service.ANSWER_KEY_MODEL)
    overlap = _stand_in_grades(demo, items)
    figures = judge_figures_get(golden_set=demo, grades=grades, items=items).figures
    qualification = qualification_verdicts(figures)
    assert _verdicts(qualification) == ANSWER_KEY_VERDICTS
    # Off billing it answers exactly as the overlap grader; on billing, a few of its 3s are 2s.
    billing = {items.pks[(i.query_id, i.doc_id)] for i in items.items if i.stratum == "billing"}
    assert {k: v for k, v in grades.items() if k not in billing} == {
        k: v for k, v in overlap.items() if k not in billing
    }
    consensus = {items.pks[(i.query_id, i.doc_id)]: i.human for i in items.items}
    slips = sorted((consensus[k], v) for k, v in grades.items() if k in billing and v != consensus[k])
    assert slips and set(slips) == {(3, 2)}
    readme = _readme()
    overall = figures.overall.judge.kappa_quadratic
    assert f"overall {_interval(overall.value, overall.interval)}" in readme
    assert figures.strata[1].name == "billing"
    kappa, bar = figures.strata[1].judge.kappa_quadratic, qualification.strata[1].bar
    assert isinstance(bar, float)
    assert f"billing {_interval(kappa.value, kappa.interval)} against a bar of {bar:.3f}" in readme


def test_the_answer_key_stand_in_qualifies_for_billing_and_its_labels_count(
    demo: GoldenSet,
    stand_in: str,
    client: Client,
) -> None:
    items = judge_items_get(golden_set=demo)
    reviewer = User.objects.get(username="reviewer")
    key = Judge.objects.get(golden_set=demo, stand_in=True, model=judge_service.ANSWER_KEY_MODEL)
    overlap = Judge.objects.get(golden_set=demo, stand_in=True, model=judge_service.MODEL)
    for judge in (key, overlap):
        _run_qualification_job(judge, stand_in, items, reviewer)
    assert judge_qualification.judge_grades(judge=key) == _stand_in_grades(
        demo, items, judge_service.ANSWER_KEY_MODEL
    )
    assert _verdicts(judge_qualification.qualification_report(judge=key).verdicts) == ANSWER_KEY_VERDICTS
    assert _verdicts(judge_qualification.qualification_report(judge=overlap).verdicts) == VERDICTS
    # The compare page puts both side by side.
    client.force_login(reviewer)
    page = client.get(reverse("labeling:judge_compare", args=[demo.slug])).content.decode()
    assert key.name in page and overlap.name in page and ">qualified<" in page

    for strata in (["billing"], [], ["account"]):
        with pytest.raises(judge_qualification.QualificationRefused, match="not qualified for"):
            judge_qualification.judge_qualify(
                judge=overlap, strata=strata, locales=[], rationale="the demo tour", by=reviewer
            )
    for strata in ([], ["account"], ["billing", "account"]):
        with pytest.raises(judge_qualification.QualificationRefused, match="not qualified for"):
            judge_qualification.judge_qualify(
                judge=key, strata=strata, locales=[], rationale="the demo tour", by=reviewer
            )
    judge_qualification.judge_qualify(
        judge=key, strata=["billing"], locales=[], rationale="the demo tour", by=reviewer
    )
    assert judge_qualification.qualification_status(key).startswith("qualified for billing since")
    assert judge_qualification.qualification_status(overlap) == "not qualified"
    counted = qualified_judge_labels(golden_set=demo)
    assert counted and {c.judge_id for c in counted.values()} == {key.pk}
    stratum_of = dict(Query.objects.filter(golden_set=demo).values_list("pk", "stratum"))
    assert {stratum_of[q] for q, _ in counted} == {"billing"}

    # A judge job over the billing pools labels pairs no human labeled; the next freeze takes them.
    billing = Query.objects.filter(golden_set=demo, stratum="billing", status=Query.Status.ACTIVE)
    job = judges.judge_job_create(judge=key, queries=billing, by=reviewer)
    for start in judges.judge_job_begin(job_id=job.pk) or []:
        judges.judge_chunk_process(job_id=job.pk, start=start)
    assert judges.judge_job_finish(job_id=job.pk) == "succeeded"
    assert (
        len(qualified_judge_labels(golden_set=demo))
        == JudgeLabel.objects.filter(judge=key, query__stratum="billing").count()
        > len(counted)
    )
    version = golden_services.golden_version_freeze(golden_set=demo, by=reviewer, name="with-the-judge")
    filled = version.counts["judge_labels"]
    assert filled > 0 and f"({filled} on a fresh demo)" in _readme()
    assert version.counts["judges"] == [{"id": key.pk, "name": key.name, "labels": filled}]


def test_a_qualification_job_through_the_stand_in_gives_the_same_verdicts(
    demo: GoldenSet,
    stand_in: str,
) -> None:
    judge = Judge.objects.get(golden_set=demo, stand_in=True, model=judge_service.MODEL)
    items = judge_items_get(golden_set=demo)
    reviewer = User.objects.get(username="reviewer")
    _run_qualification_job(judge, stand_in, items, reviewer)
    assert judge_qualification.judge_grades(judge=judge) == _stand_in_grades(demo, items)
    report = judge_qualification.qualification_report(judge=judge)
    assert _verdicts(report.verdicts) == VERDICTS
    scopes: list[tuple[list[str], list[str]]] = [(["billing"], []), ([], []), (["account"], [])]
    for strata, locales in scopes:
        with pytest.raises(judge_qualification.QualificationRefused, match="not qualified for"):
            judge_qualification.judge_qualify(
                judge=judge, strata=strata, locales=locales, rationale="the demo tour", by=reviewer
            )
    assert judge_qualification.qualification_status(judge) == "not qualified"
