"""Judges, their labels and qualifications made quickly for tests (no job runs)."""

from __future__ import annotations

from django.contrib.auth.models import User

from labeling.models import Document, GoldenSet, Judge, JudgeLabel, JudgeQualification, Query
from labeling.services import judges
from tests.support.judge_stub import judge_settings


def make_judge(golden_set: GoldenSet, model: str) -> Judge:
    settings = judge_settings("http://127.0.0.1:9", model=model, name=f"judge {model}")
    judge, _ = judges.judge_save(golden_set=golden_set, settings=settings, by=None)
    return judge


def label(judge: Judge, query: Query, document: Document, grade: int) -> JudgeLabel:
    """The judge's label on the document as it is now (so it counts wherever the judge is qualified)."""
    return JudgeLabel.objects.create(
        judge=judge, query=query, document=document, grade=grade, content_hash=document.content_hash
    )


def qualify(judge: Judge, by: User, **scope: list[str]) -> JudgeQualification:
    return JudgeQualification.objects.create(
        judge=judge, by=by, rationale="agrees as humans do", bar=0.7, **scope
    )
