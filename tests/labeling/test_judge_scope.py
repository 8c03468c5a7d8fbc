"""Which judge labels count (labeling/selectors/judge_scope.py): only an active qualification's judge,
only inside its scope, only on the document the judge graded; the newest qualification speaks."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from labeling.models import Document, GoldenSet, JudgeQualification, Query
from labeling.selectors.judge_scope import judge_qualified_for, qualified_judge_labels
from tests import factories
from tests.support.judge_labels import label, make_judge, qualify

pytestmark = pytest.mark.django_db


@pytest.fixture
def pairs(golden_set: GoldenSet) -> list[tuple[Query, Document]]:
    billing = factories.pooled_query(golden_set, 1, stratum="billing", locale="en-US")
    docs = factories.pooled_query(golden_set, 1, stratum="docs", locale="de-DE")
    return [(q, q.candidates.get().document) for q in (billing, docs)]


def test_no_qualification_no_label_counts(golden_set: GoldenSet, pairs: list[tuple[Query, Document]]) -> None:
    judge = make_judge(golden_set, "m1")
    for query, document in pairs:
        label(judge, query, document, 3)
    assert qualified_judge_labels(golden_set=golden_set) == {}


def test_a_scope_lets_only_its_strata_and_locales_count(
    golden_set: GoldenSet, pairs: list[tuple[Query, Document]], rita: User
) -> None:
    judge = make_judge(golden_set, "m1")
    for query, document in pairs:
        label(judge, query, document, 2)
    (billing, billing_doc), (docs, docs_doc) = pairs
    qualify(judge, rita, strata=["billing"])
    counted = qualified_judge_labels(golden_set=golden_set)
    assert set(counted) == {(billing.pk, billing_doc.pk)}
    assert counted[(billing.pk, billing_doc.pk)].grade == 2
    assert judge_qualified_for(judge_id=judge.pk, stratum="docs", locale="de-DE") is None
    qualify(judge, rita, locales=["de-DE"])
    assert set(qualified_judge_labels(golden_set=golden_set)) == {
        (billing.pk, billing_doc.pk),
        (docs.pk, docs_doc.pk),
    }


def test_suspended_or_withdrawn_qualifications_and_changed_documents_count_nothing(
    golden_set: GoldenSet, pairs: list[tuple[Query, Document]], rita: User
) -> None:
    judge = make_judge(golden_set, "m1")
    for query, document in pairs:
        label(judge, query, document, 1)
    qualification = qualify(judge, rita)
    assert len(qualified_judge_labels(golden_set=golden_set)) == 2
    (_, changed), (docs, docs_doc) = pairs
    changed.title = "a new title"
    changed.save()
    assert set(qualified_judge_labels(golden_set=golden_set)) == {(docs.pk, docs_doc.pk)}
    for status in (JudgeQualification.Status.SUSPENDED, JudgeQualification.Status.WITHDRAWN):
        qualification.status = status
        qualification.save()
        assert qualified_judge_labels(golden_set=golden_set) == {}


def test_the_newest_qualification_speaks_where_two_judges_graded_a_pair(
    golden_set: GoldenSet, pairs: list[tuple[Query, Document]], rita: User
) -> None:
    older, newer = make_judge(golden_set, "m1"), make_judge(golden_set, "m2")
    query, document = pairs[0]
    label(older, query, document, 0)
    label(newer, query, document, 3)
    qualify(older, rita)
    qualify(newer, rita)
    counted = qualified_judge_labels(golden_set=golden_set, query_ids=[query.pk])
    assert counted[(query.pk, document.pk)].judge_id == newer.pk
    assert counted[(query.pk, document.pk)].grade == 3
