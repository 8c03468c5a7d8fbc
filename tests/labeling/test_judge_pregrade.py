"""Pre-grading (docs/judge.md, "Pre-grading"): a qualified judge's grades order the humans' work. Queries
where a counted judge label is 2+ grades from the humans' frozen label, or where a judge qualified for the
query broke the answer contract, are assigned first; raters see nothing of it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling.models import GoldenSet, JudgeAnswer, JudgeJob, JudgeJobItem, JudgeQualification, Query
from labeling.selectors import assignment_list
from labeling.selectors.judge_scope import pregrade_first
from labeling.services import assignments_create
from tests import factories
from tests.support.judge_labels import label, make_judge, qualify

pytestmark = pytest.mark.django_db

ERROR = "answer broke the contract: grade 7 is off the scale (zebra-secret)"


def _queries(golden_set: GoldenSet) -> dict[str, Query]:
    """q-1: the judge agrees within a grade; q-2: the judge's answer broke the contract; q-3: the judge
    is 3 grades from the frozen label; q-4: 2 grades from a label the judge itself froze (not a human's)."""
    queries = {
        f"q-{i}": factories.pooled_query(
            golden_set, 1, external_id=f"q-{i}", stratum="billing", locale="en-US"
        )
        for i in range(1, 5)
    }
    judge = make_judge(golden_set, "m1")
    for name, frozen, graded, source in (
        ("q-1", 2, 1, "human"),
        ("q-3", 0, 3, "human"),
        ("q-4", 1, 3, "judge"),
    ):
        doc = queries[name].candidates.get().document
        factories.FrozenLabelFactory.create(query=queries[name], document=doc, grade=frozen, source=source)
        label(judge, queries[name], doc, graded)
    job = JudgeJob.objects.create(judge=judge)
    answer = JudgeAnswer.objects.create(
        model="m1", prompt_hash="p", query_hash="q", document_hash="d", error=ERROR
    )
    JudgeJobItem.objects.create(
        job=job,
        index=0,
        query=queries["q-2"],
        document=queries["q-2"].candidates.get().document,
        done=True,
        answer=answer,
    )
    return queries


def test_only_a_qualified_judges_disagreements_and_errors_put_queries_first(
    golden_set: GoldenSet, rita: User
) -> None:
    queries = _queries(golden_set)
    judge = golden_set.judges.get()
    assert pregrade_first(golden_set=golden_set) == set()  # not qualified: its grades order nothing
    out_of_scope = qualify(judge, rita, strata=["docs"])
    assert pregrade_first(golden_set=golden_set) == set()
    out_of_scope.status = JudgeQualification.Status.WITHDRAWN
    out_of_scope.save()
    qualify(judge, rita, locales=["en-US"])
    assert pregrade_first(golden_set=golden_set) == {queries["q-2"].pk, queries["q-3"].pk}


def test_they_come_first_in_the_raters_queue_which_shows_nothing_of_the_judge(
    golden_set: GoldenSet, alice: User, rita: User, client: Client
) -> None:
    queries = _queries(golden_set)
    judge = golden_set.judges.get()
    qualify(judge, rita)

    assignments_create(golden_set=golden_set, raters=[alice])

    order = [a.query.external_id for a in assignment_list(rater=alice) if a.kind == "primary"]
    assert order == ["q-2", "q-3", "q-1", "q-4"]
    client.force_login(alice)
    pages = [client.get(reverse("labeling:queue")).content.decode()]
    for query in queries.values():
        assignment = query.assignments.get(kind="primary")
        pages.append(client.get(reverse("labeling:grade", args=[assignment.pk])).content.decode())
    for page in pages:
        for secret in (judge.name, "zebra-secret", "pre-grad", "machine judge", "judge label"):
            assert secret not in page
