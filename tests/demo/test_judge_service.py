"""The demo's stand-in judge (demo/judge_service.py): its grading rule, and a judge job through it on
loopback answering every pair of the demo corpus's documents within the contract, deterministically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from demo import judge_service
from labeling.models import GoldenSet, JudgeLabel
from labeling.services import judges
from tests import factories
from tests.support.judge_stub import judge_settings

DEMO = Path(__file__).resolve().parents[2] / "demo"


@pytest.mark.parametrize(
    ("query", "title", "text", "grade"),
    [
        ("refund policy annual plan", "Refund policy for the annual plan", "", 3),
        ("refund policy annual plan", "Refund policy", "monthly only", 2),
        ("refund policy annual", "Billing", "refund policy and the annual plan", 2),
        ("refund policy annual plan", "Billing overview", "see the refund page", 1),
        ("refund policy", "Reset your password", "click forgot password", 0),
        ("the and for", "Anything", "anything", 0),
    ],
)
def test_the_grade_is_term_overlap_on_the_scale(query: str, title: str, text: str, grade: int) -> None:
    assert judge_service.grade(query, title, text)[0] == grade
    assert judge_service.grade(query, title, text) == judge_service.grade(query, title, text)


def _ask(model: str, query: str, title: str, text: str = "") -> dict[str, object]:
    user = f"Query: {query}\nLocale: en-US\nFilters: none\n\nDocument title: {title}\nDocument text:\n{text}"
    content, _ = judge_service.answer({"model": model, "messages": [{"role": "user", "content": user}]})
    answer: dict[str, object] = json.loads(content)
    return answer


def test_the_answer_key_reads_the_golden_file_for_billing_and_overlaps_elsewhere() -> None:
    key = judge_service.ANSWER_KEY_MODEL
    policy = "Refund policy for Lanternly plans"
    # A billing query: the golden file's grade, 0 for a document it does not judge for that query.
    assert _ask(key, "refund policy for annual plan", policy) == {
        "grade": 3,
        "reason": "demo answer key: the golden file's grade",
    }
    assert _ask(key, "refund policy for annual plan", "Hardware return policy")["grade"] == 0
    unjudged = _ask(key, "refund policy for annual plan", "Reset your password")
    assert unjudged["grade"] == 0 and "does not judge" in str(unjudged["reason"])
    # The overlap model reads no key: the same billing pair gets its term-overlap grade.
    assert _ask(judge_service.MODEL, "refund policy for annual plan", "Hardware return policy")["grade"] == 1
    # Any other query: exactly the overlap grader's grade, said so.
    for query, title in [("reset password", "Reset your password"), ("unknown words", "Anything")]:
        grade, reason = judge_service.grade(query, title, "")
        assert _ask(key, query, title) == {"grade": grade, "reason": f"word overlap: {reason}"}
    # A few of its billing 3s are answered 2, always the same ones.
    answers = judge_service.answer_key()
    golden = json.loads((DEMO / "golden.json").read_text())["queries"]
    assert set(answers) == {q["text"] for q in golden if q["stratum"] == "billing"}
    threes = [(q, t) for q, grades in answers.items() for t, g in grades.items() if g == 3]
    slips = [(q, t) for q, t in threes if judge_service.grade_by_key(q, t, "")[0] == 2]
    assert 0 < len(slips) < len(threes) / 4
    assert slips == [(q, t) for q, t in threes if judge_service.grade_by_key(q, t, "")[0] == 2]


@pytest.mark.django_db
def test_a_job_through_the_stand_in_grades_every_pair(golden_set: GoldenSet, stand_in: str) -> None:
    query = factories.QueryFactory.create(golden_set=golden_set, text="refund policy annual plan")
    titles = ["Refund policy for the annual plan", "Refund policy", "Billing overview", "Reset your password"]
    for rank, title in enumerate(titles, 1):
        document = factories.DocumentFactory.create(
            golden_set=golden_set, title=title, body="see the refund page"
        )
        factories.CandidateFactory.create(query=query, document=document, best_rank=rank)
    settings = judge_settings(stand_in, model=judge_service.MODEL)
    judge, _ = judges.judge_save(golden_set=golden_set, settings=settings, by=None, stand_in=True)
    job = judges.judge_job_create(judge=judge, queries=[query], by=None)
    for start in judges.judge_job_begin(job_id=job.pk) or []:
        judges.judge_chunk_process(job_id=job.pk, start=start)
    assert judges.judge_job_finish(job_id=job.pk) == "succeeded"
    job.refresh_from_db()
    assert (job.done, job.errors) == (4, 0) and job.prompt_tokens > 0
    grades = dict(JudgeLabel.objects.filter(judge=judge).values_list("document__title", "grade"))
    assert grades == {titles[0]: 3, titles[1]: 2, titles[2]: 1, titles[3]: 1}
