"""A study's answers as downloads (CSV and JSONL, pages and API alike): one row per answer with the sides
undone (preference in the candidate's favour, junk per run) and the study's seed, so the analysis can be
made again elsewhere (docs/sxs.md, "Exports")."""

from __future__ import annotations

import json
from typing import Any

from assay.problems import csv_text
from evaluation.studies.models import SxsStudy
from evaluation.studies.services.analysis import study_answers

EXPORT_FIELDS = (
    "study",
    "seed",
    "query_id",
    "stratum",
    "critical",
    "rater",
    "preference",
    "candidate_left",
    "reasons",
    "junk_baseline",
    "junk_candidate",
    "note",
    "ndcg_change",
    "answered_at",
)


def study_export_rows(study: SxsStudy) -> list[dict[str, Any]]:
    """Every answer with the sides undone (preference in the candidate's favour, junk per run) and the
    study's seed, one row each, in (query, rater) order: what the CSV and JSONL downloads hold."""
    rows = []
    for task in study_answers(study):
        undone = task.undone()
        rows.append(
            {
                "study": study.pk,
                "seed": study.seed,
                "query_id": task.item.query_id,
                "stratum": task.item.stratum,
                "critical": task.item.critical,
                "rater": task.rater.get_username(),
                "preference": undone["preference"],
                "candidate_left": task.candidate_left,
                "reasons": list(task.reasons),
                "junk_baseline": undone["junk_baseline"],
                "junk_candidate": undone["junk_candidate"],
                "note": task.note,
                "ndcg_change": task.item.ndcg_change,
                "answered_at": task.answered_at.isoformat() if task.answered_at else None,
            }
        )
    return rows


def study_export_csv(study: SxsStudy) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return " ".join(value)
        return "" if value is None else str(value)

    rows = study_export_rows(study)
    return csv_text(EXPORT_FIELDS, ([cell(row[f]) for f in EXPORT_FIELDS] for row in rows))


def study_export_jsonl(study: SxsStudy) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in study_export_rows(study))
