"""Side-by-side studies: creation (what is asked, counted apart, left out), the worded refusals, the
sides' draw, and the rater's answers (second tab, after submit, undo) through the service."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from django.contrib.auth.models import User

from evaluation.models import StudyTask, SxsStudy
from evaluation.studies.services import (
    Answer,
    AnswerRefused,
    StudyError,
    StudySpec,
    study_answer,
    study_create,
    study_undo,
    sxs_inputs,
)
from labeling.models import GoldenSet
from tests import factories
from tests.support.studies import finished_run, two_runs

pytestmark = pytest.mark.django_db


def _spec(run_a: object, run_b: object, raters: list[User], **kwargs: object) -> StudySpec:
    kwargs.setdefault("seed", 7)
    kwargs.setdefault("answers_per_query", len(raters))
    return StudySpec(run_a=run_a, run_b=run_b, raters=raters, **kwargs)  # type: ignore[arg-type]


def test_a_study_asks_what_differs_counts_identical_lists_apart_and_names_errored_queries(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    run_a, run_b = two_runs(golden_set, 8, same=["q-3"], errors_b=["q-5"])

    study = study_create(spec=_spec(run_a, run_b, [alice, bob]), by=rita)

    items = {q.query_id: q for q in study.queries.all()}
    assert sorted(items, key=lambda q: int(q[2:])) == ["q-1", "q-2", "q-3", "q-4", "q-6", "q-7", "q-8"]
    assert [q for q, item in items.items() if item.identical] == ["q-3"]
    assert study.left_out == [
        {"query_id": "q-5", "why": f"run B, {run_b.label}, errored: HTTP 500 from the engine"}
    ]
    # Two raters answer each of the six asked queries; none is asked of the identical one.
    tasks = StudyTask.objects.filter(study=study)
    assert tasks.count() == 12 and not tasks.filter(item__identical=True).exists()
    assert items["q-2"].ndcg_change == pytest.approx(0.2) and items["q-1"].ndcg_change == pytest.approx(-0.1)
    card = items["q-1"].cards_b[0]
    assert card == {"id": "d5", "title": "T d5", "snippet": "About d5.", "host": "docs.example.org"}


def test_tokens_are_random_hex_and_carry_no_order(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    run_a, run_b = two_runs(golden_set, 12)
    study = study_create(spec=_spec(run_a, run_b, [alice, bob]), by=rita)

    rows = list(StudyTask.objects.filter(study=study).order_by("id").values_list("token", flat=True))
    assert all(re.fullmatch(r"[0-9a-f]{16}", token) for token in rows) and len(set(rows)) == 24
    # Neither the creation order nor anything of the query is in a token: sorting the tokens does not give
    # the rows' order back, and the same study made again (same seed) gets other tokens.
    assert sorted(rows) != rows
    again = study_create(spec=_spec(run_a, run_b, [alice, bob]), by=rita)
    assert not set(rows) & set(StudyTask.objects.filter(study=again).values_list("token", flat=True))


def test_sides_balance_per_rater_and_vary_over_draws(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    run_a, run_b = two_runs(golden_set, 9)
    left_counts: Counter[tuple[int, str]] = Counter()
    seeds = range(40)
    for seed in seeds:
        study = study_create(spec=_spec(run_a, run_b, [alice, bob], seed=seed), by=rita)
        for rater in (alice, bob):
            sides = list(
                StudyTask.objects.filter(study=study, rater=rater).values_list("candidate_left", flat=True)
            )
            # Nine queries each: the candidate is on the left four or five times, never more or fewer.
            assert sum(sides) in (4, 5)
        for task in StudyTask.objects.filter(study=study).select_related("item"):
            left_counts[(task.rater_id, task.item.query_id)] += task.candidate_left
    # Over the draws every (rater, query) saw the candidate on both sides, about half the time each. Each
    # count is near Binomial(40, 1/2) (the shuffles are seeded by the draw and the rater's and items' ids,
    # which differ from one database to the next): 5 to 35 fails a fair draw about 3 times in a million
    # over the 18 pairs, where 10 to 30 failed once in `make test` (a count of 9).
    assert all(5 <= n <= 35 for n in left_counts.values()), left_counts


def test_raters_share_the_queries_evenly_when_fewer_answers_than_raters(
    golden_set: GoldenSet, rita: User, alice: User, bob: User
) -> None:
    carol = User.objects.create_user("carol")
    carol.groups.add(*alice.groups.all())
    golden_set.raters.add(carol)
    run_a, run_b = two_runs(golden_set, 9)

    study = study_create(spec=_spec(run_a, run_b, [alice, bob, carol], answers_per_query=2), by=rita)

    per_rater = Counter(StudyTask.objects.filter(study=study).values_list("rater__username", flat=True))
    assert sorted(per_rater.values()) == [6, 6, 6]
    per_query = Counter(StudyTask.objects.filter(study=study).values_list("item__query_id", flat=True))
    assert set(per_query.values()) == {2}


@pytest.mark.parametrize(
    ("selection", "kwargs", "expected"),
    [
        ("stratum", {"stratum": "billing"}, ["q-1", "q-3", "q-5", "q-7"]),
        ("movers", {"size": 3}, ["q-1", "q-3", "q-2"]),
        ("sample", {"size": 3}, None),
    ],
)
def test_the_query_selections(
    golden_set: GoldenSet,
    rita: User,
    alice: User,
    selection: str,
    kwargs: dict[str, object],
    expected: list[str] | None,
) -> None:
    run_a, run_b = two_runs(golden_set, 8)

    study = study_create(spec=_spec(run_a, run_b, [alice], selection=selection, **kwargs), by=rita)

    chosen = list(study.queries.order_by("id").values_list("query_id", flat=True))
    if expected is None:
        assert len(chosen) == 3
        again = study_create(spec=_spec(run_a, run_b, [alice], selection=selection, **kwargs), by=rita)
        assert list(again.queries.order_by("id").values_list("query_id", flat=True)) == chosen  # the seed's
    else:
        assert chosen == expected


def test_bad_studies_are_refused_in_words(golden_set: GoldenSet, rita: User, alice: User) -> None:
    run_a, run_b = two_runs(golden_set, 4)
    other_set = factories.GoldenSetFactory.create(slug="other", raters=[alice], reviewers=[rita])
    other_a, _ = two_runs(other_set, 4)
    version_2_a, _ = two_runs(golden_set, 4, version="2026-09-01")

    def refused(**kwargs: Any) -> list[str]:
        by = kwargs.pop("by", rita)
        spec = _spec(kwargs.pop("a", run_a), kwargs.pop("b", run_b), kwargs.pop("raters", [alice]), **kwargs)
        with pytest.raises(StudyError) as error:
            study_create(spec=spec, by=by)
        return error.value.problems

    # Each run by its label (`run 3 engine`), as the pages name it.
    assert refused(b=run_a) == [f"{run_a.label} against itself: a study compares two different runs"]
    assert refused(b=other_a) == [
        f"{run_a.label} is of golden set help-center and {other_a.label} of other: a study compares two "
        "runs of one set"
    ]
    assert refused(b=version_2_a) == [
        f"{run_a.label} is on golden version 2026-08-01 and {version_2_a.label} on 2026-09-01: a study "
        "compares two runs of the same golden version"
    ]
    assert run_a.label == f"run {run_a.pk} engine"
    assert refused(selection="stratum", stratum="nothing") == [
        "stratum 'nothing' has no query in these runs (strata: billing, docs)"
    ]
    assert refused(selection="sample", size=5) == [
        "size: 5 queries asked for, but only 4 are available to choose from"
    ]
    assert refused(shown=11) == ["results shown: 11 per side; choose from 1 to 10"]
    assert refused(answers_per_query=2) == ["answers per query: 2 answers need as many raters; 1 chosen"]
    assert "only a reviewer of the runs' golden set can create a study of them" in refused(by=alice)
    assert SxsStudy.objects.count() == 0


def test_runs_showing_the_same_lists_leave_nothing_to_ask(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    run_a, run_b = two_runs(golden_set, 3, same=["q-1", "q-2", "q-3"])

    with pytest.raises(StudyError) as error:
        study_create(spec=_spec(run_a, run_b, [alice]), by=rita)

    assert error.value.problems == ["all 3 chosen queries show the same top 5 in both runs: nothing to ask"]


def test_a_running_run_and_a_stranger_as_rater_are_refused(
    golden_set: GoldenSet, rita: User, alice: User, charlie: User
) -> None:
    run_a, run_b = two_runs(golden_set, 3)
    EvaluationRunStatus = type(run_b).Status
    type(run_b).objects.filter(pk=run_b.pk).update(status=EvaluationRunStatus.RUNNING)
    run_b.refresh_from_db()

    with pytest.raises(StudyError) as error:
        study_create(spec=_spec(run_a, run_b, [alice, charlie], answers_per_query=1), by=rita)

    assert error.value.problems == [
        f"run B, {run_b.label}, is running: only a finished run with a report can be compared",
        "raters: charlie not a rater of help-center (the set's raters list and the raters group)",
    ]


# ----------------------------------------------------------------------------------------- answers


def _one_task(golden_set: GoldenSet, rita: User, alice: User) -> StudyTask:
    run_a, run_b = two_runs(golden_set, 2)
    study = study_create(spec=_spec(run_a, run_b, [alice]), by=rita)
    return StudyTask.objects.filter(study=study).select_related("item").first()  # type: ignore[return-value]


def test_a_second_tab_and_a_second_submit_are_refused_in_words(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    task = _one_task(golden_set, rita, alice)

    saved = study_answer(token=task.token, rater=alice, revision=0, answer=Answer(preference=2))
    assert saved.revision == 1 and saved.preference == 2

    with pytest.raises(AnswerRefused) as second_tab:
        study_answer(token=task.token, rater=alice, revision=0, answer=Answer(preference=-3))
    assert (second_tab.value.status, second_tab.value.code) == (409, "stale")
    assert second_tab.value.message.startswith("This query was answered or undone in another tab")
    with pytest.raises(AnswerRefused) as again:
        study_answer(token=task.token, rater=alice, revision=1, answer=Answer(preference=-3))
    assert (again.value.code, again.value.message) == (
        "answered",
        "You have answered this query already: undo (u) first to change your answer. Nothing was saved.",
    )
    task.refresh_from_db()
    assert task.preference == 2

    study_undo(token=task.token, rater=alice, revision=1)
    changed = study_answer(token=task.token, rater=alice, revision=2, answer=Answer(preference=-1))
    assert changed.preference == -1 and changed.revision == 3


def test_someone_elses_task_is_not_found(golden_set: GoldenSet, rita: User, alice: User, bob: User) -> None:
    task = _one_task(golden_set, rita, alice)

    with pytest.raises(AnswerRefused) as error:
        study_answer(token=task.token, rater=bob, revision=0, answer=Answer(preference=1))

    assert (error.value.status, error.value.message) == (404, "No such study task of yours.")


def test_the_analysis_gets_the_answers_with_the_sides_undone(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    run_a, run_b = two_runs(golden_set, 4)
    study = study_create(spec=_spec(run_a, run_b, [alice]), by=rita)
    tasks = list(StudyTask.objects.filter(study=study).select_related("item"))
    for task in tasks:
        # Left much better, junk on the right: the candidate's answer depends on where it was shown.
        study_answer(
            token=task.token,
            rater=alice,
            revision=0,
            answer=Answer(preference=-3, junk_right=True, reasons=("relevance",)),
        )

    queries, answers = sxs_inputs(study)

    assert len(queries) == 4
    by_query = {a.query_id: a for a in answers}
    for task in tasks:
        answer = by_query[task.item.query_id]
        assert answer.candidate_left is task.candidate_left
        assert answer.preference == (3 if task.candidate_left else -3)
        assert (answer.junk_candidate, answer.junk_baseline) == (not task.candidate_left, task.candidate_left)
        assert answer.reasons == ("relevance",) and answer.rater == "alice"


def test_a_run_with_errors_in_a_stratum_study_names_only_that_strata_s_errors(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    run_a, run_b = two_runs(golden_set, 6, errors_b=["q-1", "q-2"])

    study = study_create(spec=_spec(run_a, run_b, [alice], selection="stratum", stratum="docs"), by=rita)

    assert [q["query_id"] for q in study.left_out] == ["q-2"]
    assert list(study.queries.values_list("query_id", flat=True)) == ["q-4", "q-6"]


def test_finished_run_helper_keeps_errors_out_of_the_lists(golden_set: GoldenSet) -> None:
    run_a, _ = two_runs(golden_set, 2)
    run = finished_run(run_a.golden_version, run_a.target, {}, {}, errors=["q-1"])
    assert run.results.get(query_id="q-1").error is not None
