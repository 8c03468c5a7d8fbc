"""Builders for the side-by-side study tests: two finished runs of one golden version with the result
lists a test chooses, written straight to the database (no engine is called: the study reads only what a
run stored), the set's documents their cards show, and a study answered through the rater's service."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.models import EvaluationRun, QueryRunResult, SearchTarget, StudyTask, SxsStudy
from evaluation.studies.services import Answer, StudySpec, study_answer, study_create
from golden_io.models import GoldenVersion
from labeling.models import Document, GoldenSet
from tests.support.runs import golden_file, make_target, make_version

DOCS = [f"d{i}" for i in range(1, 13)]


def documents(golden_set: GoldenSet) -> None:
    """d1..d12 with a title, a URL on docs.example.org and a snippet each."""
    for doc in DOCS:
        Document.objects.get_or_create(
            golden_set=golden_set,
            doc_id=doc,
            defaults={
                "title": f"Title of {doc}",
                "url": f"https://docs.example.org/{doc}",
                "snippet": f"About {doc}.",
            },
        )


def finished_run(
    version: GoldenVersion,
    target: SearchTarget,
    lists: Mapping[str, Sequence[str]],
    ndcg: Mapping[str, float],
    *,
    errors: Sequence[str] = (),
    params: Mapping[str, Any] | None = None,
) -> EvaluationRun:
    """A succeeded run with one result per query of `lists` (ids, titles `T <id>`), a report whose
    per-query rows carry `ndcg` (None where the query errored), and an error on each query of `errors`."""
    golden = version.golden()
    run = EvaluationRun.objects.create(
        golden_version=version,
        target=target,
        params=dict(params or {}),
        status=EvaluationRun.Status.SUCCEEDED,
        total=len(golden.queries),
        done=len(golden.queries),
        errors=len(errors),
        report={
            "per_query": [
                {
                    "id": q.id,
                    "text": q.text,
                    "ndcg": None if q.id in errors else ndcg.get(q.id, 0.5),
                    "stratum": q.stratum,
                    "critical": q.critical,
                    "error": "HTTP 500" if q.id in errors else None,
                }
                for q in golden.queries
            ]
        },
    )
    for q in golden.queries:
        ids = list(lists.get(q.id, ["d1", "d2", "d3"]))
        QueryRunResult.objects.create(
            run=run,
            query_id=q.id,
            ids=[] if q.id in errors else ids,
            titles=[] if q.id in errors else [f"T {d}" for d in ids],
            error="HTTP 500 from the engine" if q.id in errors else None,
        )
    return run


def two_runs(
    golden_set: GoldenSet,
    n: int = 6,
    *,
    same: Sequence[str] = (),
    errors_b: Sequence[str] = (),
    **golden: Any,
) -> tuple[EvaluationRun, EvaluationRun]:
    """Run A answers every query d1..d5, run B d5..d1 (reversed), but the queries of `same`, which B
    answers as A does; B's nDCG is A's minus 0.1 on odd queries and plus 0.2 on even ones."""
    documents(golden_set)
    golden_data = golden_file(n, **golden)
    version = GoldenVersion.objects.filter(
        golden_set=golden_set, name=golden_data.version
    ).first() or make_version(golden_set, golden_data)
    target = SearchTarget.objects.filter(golden_sets=golden_set, name="engine").first() or make_target(
        "http://127.0.0.1:9/search", golden_set, name="engine"
    )
    ids = [q.id for q in version.golden().queries]
    forward = ["d1", "d2", "d3", "d4", "d5"]
    lists_a = {q: forward for q in ids}
    lists_b = {q: forward if q in same else forward[::-1] for q in ids}
    ndcg_a = {q: 0.6 for q in ids}
    ndcg_b = {q: 0.5 if int(q.split("-")[1]) % 2 else 0.8 for q in ids}
    run_a = finished_run(version, target, lists_a, ndcg_a)
    run_b = finished_run(version, target, lists_b, ndcg_b, errors=errors_b, params={"rewrite": True})
    return run_a, run_b


def study_form(**changes: Any) -> dict[str, Any]:
    """The New-study form's fields as a reviewer posts them (one answer per query), with `changes`."""
    form: dict[str, Any] = {
        "selection": "all",
        "shown": 5,
        "answers_per_query": 1,
        "instructions_name": "default",
        "instructions": "Which list would you rather get?",
        "min_lower": -0.25,
        "min_queries": 20,
    }
    return {**form, **changes}


def answered_study(
    golden_set: GoldenSet,
    rita: Any,
    raters: Sequence[Any],
    *,
    candidate: int | list[int],
    runs: tuple[EvaluationRun, EvaluationRun] | None = None,
) -> SxsStudy:
    """A study of 6 queries, every rater answering every query `candidate` in the candidate's favour (or,
    given a list, the n-th query its n-th value)."""
    run_a, run_b = runs or two_runs(golden_set, 6)
    study = study_create(
        spec=StudySpec(
            run_a=run_a,
            run_b=run_b,
            raters=raters,
            seed=5,
            answers_per_query=len(raters),
            rule={"min_lower": -0.25, "min_queries": 4, "critical_junk_fails": True},
        ),
        by=rita,
    )
    items = list(study.queries.filter(identical=False).values_list("pk", flat=True))
    for task in StudyTask.objects.filter(study=study).select_related("rater"):
        value = candidate[items.index(task.item_id)] if isinstance(candidate, list) else candidate
        shown = -value if task.candidate_left else value  # as the rater saw it
        study_answer(token=task.token, rater=task.rater, revision=0, answer=Answer(preference=shown))
    return study


def one_query_answered(golden_set: GoldenSet, rita: Any, alice: Any, bob: Any) -> SxsStudy:
    """A study of 6 queries (q-2 identical, not asked) by alice and bob, only q-1 answered: alice +2 as
    shown with "something else" and a note, junk on her left list; bob -1 for relevance."""
    run_a, run_b = two_runs(golden_set, 6, same=("q-2",))
    study = study_create(
        spec=StudySpec(run_a=run_a, run_b=run_b, raters=[alice, bob], seed=3, answers_per_query=2), by=rita
    )
    for task in StudyTask.objects.filter(study=study, item__query_id="q-1").select_related("rater"):
        if task.rater == alice:
            answer = Answer(preference=2, reasons=("other",), junk_left=True, note="B hides the refund page")
        else:
            answer = Answer(preference=-1, reasons=("relevance",))
        study_answer(token=task.token, rater=task.rater, revision=0, answer=answer)
    return study
