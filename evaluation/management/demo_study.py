"""`make run`'s side-by-side study (docs/sxs.md; the README tour): the demo baseline against the rewriter
run on the billing stratum, rater1 and rater2 answering every asked query, their answers read from
demo/sxs_answers.json (built by `python -m demo.build_sxs_answers`, deterministic), so the reviewer finds
a verdict and the offline-against-people list without grading anything.

Idempotent: a study of these two runs made before is reused, and an answer already given is left."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from evaluation.runs.models import EvaluationRun
from evaluation.studies.models import StudyTask, SxsStudy
from evaluation.studies.services import Answer, StudySpec, study_analysis, study_answer, study_create

ANSWERS = Path(settings.BASE_DIR) / "demo" / "sxs_answers.json"
STUDY_NAME = "demo: rewriter on against the demo baseline, billing"
SEED = 471


def demo_study(*, baseline_run: EvaluationRun, current: EvaluationRun, by: Any) -> tuple[SxsStudy, bool]:
    """The study (made now, or the one made before) with every answer of the file given; and whether it
    was made now. Its verdict is up to date."""
    data = json.loads(ANSWERS.read_text(encoding="utf-8"))
    study = SxsStudy.objects.filter(run_a=baseline_run, run_b=current).order_by("id").first()
    made = study is None
    if study is None:
        raters = list(get_user_model().objects.filter(username__in=data["raters"]).order_by("username"))
        spec = StudySpec(
            run_a=baseline_run,
            run_b=current,
            raters=raters,
            name=STUDY_NAME,
            selection=SxsStudy.Selection.STRATUM,
            stratum=data["stratum"],
            seed=SEED,
            shown=data["shown"],
            answers_per_query=len(raters),
        )
        study = study_create(spec=spec, by=by)
    with transaction.atomic():
        open_tasks = StudyTask.objects.filter(study=study, answered_at__isnull=True).select_related(
            "item", "rater"
        )
        for task in open_tasks:
            given = data["answers"].get(task.item.query_id, {}).get(task.rater.get_username())
            if given is None:
                continue
            # The file is in the candidate's favour; the rater saw it on one side: the answer as shown.
            sign = -1 if task.candidate_left else 1
            junk_left = given["junk_candidate"] if task.candidate_left else given["junk_baseline"]
            junk_right = given["junk_baseline"] if task.candidate_left else given["junk_candidate"]
            answer = Answer(
                preference=sign * given["preference"],
                reasons=tuple(given["reasons"]),
                junk_left=junk_left,
                junk_right=junk_right,
            )
            study_answer(token=task.token, rater=task.rater, revision=task.revision, answer=answer)
    study_analysis(study)
    return study, made
