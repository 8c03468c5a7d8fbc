"""A side-by-side study's analysis (docs/sxs.md, "Analysis"): the answers as reviewers read them (sides
undone), `assay.sxs.analyse`'s figures and verdict kept on the study and made again only when its answers
changed (frozen while it is closed), the studies a run is in with their verdicts, and the set's "a passed
study before a baseline" setting."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from assay.sxs import (
    ANALYSIS_VERSION,
    SxsAnswer,
    SxsQuery,
    SxsRule,
    analyse,
)
from evaluation.runs.models import EvaluationRun
from evaluation.studies.models import (
    StudyQuery,
    StudySetting,
    StudyTask,
    SxsStudy,
    sides_undone,
)
from evaluation.studies.services.studies import StudyError
from labeling.models import GoldenSet
from labeling.roles import reviews

ANSWER_FIELDS = (
    "study_id",
    "token",
    "candidate_left",
    "preference",
    "reasons",
    "junk_left",
    "junk_right",
    "note",
    "answered_at",
    "item__query_id",
    "item__stratum",
    "item__critical",
    "item__ndcg_change",
    "rater__username",
)


def study_answers(study: SxsStudy) -> QuerySet[StudyTask]:
    """The study's answered tasks with their query and rater, in a stable order (query, rater)."""
    # Only what an answer row needs: a query's cards (its two lists, kilobytes) are not read once per answer.
    return (
        StudyTask.objects.filter(study=study, answered_at__isnull=False)
        .select_related("item", "rater")
        .only(*ANSWER_FIELDS)
        .order_by("item__query_id", "rater__username", "token")
    )


def sxs_inputs(study: SxsStudy) -> tuple[list[SxsQuery], list[SxsAnswer]]:
    """The analysis' input: every chosen query (identical ones flagged) with its nDCG change, and every
    answer with the sides undone (in the candidate's favour)."""
    queries = [
        SxsQuery(
            query_id=q.query_id,
            stratum=q.stratum,
            critical=q.critical,
            ndcg_change=q.ndcg_change,
            identical=q.identical,
        )
        for q in StudyQuery.objects.filter(study=study)
        .only("query_id", "stratum", "critical", "ndcg_change", "identical")
        .order_by("id")
    ]
    # Plain rows, not model instances: the analysis reads seven values of every answer.
    rows = (
        StudyTask.objects.filter(study=study, answered_at__isnull=False)
        .order_by("item__query_id", "rater__username", "token")
        .values_list(
            "item__query_id",
            "rater__username",
            "candidate_left",
            "preference",
            "reasons",
            "junk_left",
            "junk_right",
        )
    )
    answers = []
    for query_id, rater, left, preference, reasons, junk_left, junk_right in rows:
        assert (
            preference is not None
        )  # answered: study_answer sets it with answered_at, study_undo clears both
        undone = sides_undone(left, preference, junk_left, junk_right)
        answers.append(
            SxsAnswer(
                query_id=query_id,
                rater=rater,
                preference=undone["preference"],
                candidate_left=left,
                reasons=tuple(reasons),
                junk_baseline=undone["junk_baseline"],
                junk_candidate=undone["junk_candidate"],
            )
        )
    return queries, answers


def _answers_key(study: SxsStudy) -> str:
    """What the kept analysis was made from: every submit and undo adds one to its task's revision, so
    the revisions' sum moves whenever an answer changes; and by which version of the analysis, so one
    stored by an older rule is made again when read (docs/sxs.md, "Studies stored before the three
    outcomes")."""
    state = StudyTask.objects.filter(study=study).aggregate(n=Count("id"), revisions=Sum("revision"))
    return f"v{ANALYSIS_VERSION}:{state['n']}:{state['revisions'] or 0}"


def study_analysis(study: SxsStudy) -> dict[str, Any]:
    """The study's analysis (`assay.sxs.analyse`), kept on the study and made again only when an answer
    changed since (every submit and undo moves the revisions' sum); its verdict goes on the study, where
    the run pages read it. A closed study's is frozen: the one read when it closed, whatever reads it
    (a newer version of the analysis included) until a reviewer reopens it."""
    if study.closed_at is not None and study.analysis is not None:
        return study.analysis
    key = _answers_key(study)
    if study.analysis is not None and study.analysed_key == key:
        return study.analysis
    queries, answers = sxs_inputs(study)
    result = analyse(
        queries,
        answers,
        answers_per_query=study.answers_per_query,
        rule=SxsRule.from_dict(study.rule),
        seed=study.seed,
    ).to_dict()
    verdict = result["verdict"]["result"]
    SxsStudy.objects.filter(pk=study.pk).update(analysis=result, analysed_key=key, verdict=verdict)
    study.analysis, study.analysed_key, study.verdict = result, key, verdict
    return result


# ------------------------------------------------------------------------------------------ settings


def study_setting_set(*, golden_set: GoldenSet, require_passed_study: bool, by: Any) -> StudySetting:
    if not reviews(by, golden_set):
        raise StudyError([f"only a reviewer of {golden_set.slug} can change its study setting"])
    setting, _ = StudySetting.objects.update_or_create(
        golden_set=golden_set, defaults={"require_passed_study": require_passed_study, "updated_by": by}
    )
    return setting


def run_studies(run: EvaluationRun) -> list[dict[str, Any]]:
    """The studies `run` is in (as run A or B), newest first, each with its verdict brought up to date
    (`study_analysis`), the run's role and the other run (its label's columns only)."""
    rows: list[tuple[SxsStudy, str, int]] = []
    for study in SxsStudy.objects.filter(Q(run_a=run) | Q(run_b=run)).order_by("-created", "-id"):
        study_analysis(study)
        role = "run A (the baseline)" if study.run_a_id == run.pk else "run B (the candidate)"
        rows.append((study, role, study.run_b_id if study.run_a_id == run.pk else study.run_a_id))
    others = EvaluationRun.objects.filter(pk__in=[other for *_, other in rows]).select_related("target")
    named = {other.pk: other for other in others.only(*EvaluationRun.LABEL_FIELDS)}
    return [{"study": study, "role": role, "other": named[other]} for study, role, other in rows]
