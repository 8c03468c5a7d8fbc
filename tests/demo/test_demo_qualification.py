"""The demo's qualification story (README, "A first tour", steps 5 and 6): `demo_load` leaves enough
dual-labeled human work for a judge to be measured on, and the stand-in (demo/judge_service.py) earns
the verdicts the README names, computed in-process and through a job on loopback."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from assay.judge.prompt import PromptSpec, messages
from assay.labels.judge_agreement import NOT_QUALIFIED, QUALIFIED, Qualification, qualification_verdicts
from demo import judge_service
from labeling.models import Document, GoldenSet, Judge, Query
from labeling.selectors.judge_items import JudgeItems, PkKey, judge_figures_get, judge_items_get
from labeling.services import judge_qualification, judges
from tests.demo.test_judge_service import stand_in  # noqa: F401  (fixture)
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


@pytest.fixture
def demo(tmp_path: Path, settings: Any) -> GoldenSet:
    settings.VAR_DIR = tmp_path  # demo_load keeps the demo logins there
    call_command("demo_load", stdout=io.StringIO())
    return GoldenSet.objects.get(slug="help-center")


def _readme() -> str:
    return " ".join((REPO / "README.md").read_text().split())


def _stand_in_grades(golden_set: GoldenSet, items: JudgeItems) -> dict[PkKey, int | None]:
    """The stand-in's grade of every item, from the prompt a job would send it (no server)."""
    judge = Judge.objects.get(golden_set=golden_set, stand_in=True)
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
        content, _ = judge_service.answer({"messages": chat})
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


def test_a_qualification_job_through_the_stand_in_gives_the_same_verdicts(
    demo: GoldenSet,
    stand_in: str,  # noqa: F811
) -> None:
    judge = Judge.objects.get(golden_set=demo, stand_in=True)
    Judge.objects.filter(pk=judge.pk).update(base_url=f"{stand_in}/v1")  # where it is served: in place
    judge.refresh_from_db()
    items = judge_items_get(golden_set=demo)
    reviewer = User.objects.get(username="reviewer")
    job = judge_qualification.qualification_job_create(judge=judge, pairs=items.pks.values(), by=reviewer)
    for start in judges.judge_job_begin(job_id=job.pk) or []:
        judges.judge_chunk_process(job_id=job.pk, start=start)
    assert judges.judge_job_finish(job_id=job.pk) == "succeeded"
    job.refresh_from_db()
    assert (job.total, job.done, job.errors) == (123, 123, 0)
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
