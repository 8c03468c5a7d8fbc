"""Labels come only from finished work: a single rater's grades reach a golden version once the rater
marks the query done, never before, and a freeze lists the documents it left out for that, with the
count (docs/golden-versions.md, "Freeze"; docs/agreement.md, "Final labels"). Real services throughout:
grades are saved and queries marked done through labeling's services, as the grading page does."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from assay.golden.model import GoldenFile
from golden_io import selectors, services
from golden_io.models import GoldenVersion
from labeling import services as labeling_services
from labeling.models import Assignment, Candidate, GoldenSet, LabelProposal, Query
from tests import factories

pytestmark = pytest.mark.django_db


def _candidates(query: Query) -> list[Candidate]:
    return list(query.candidates.select_related("document").order_by("best_rank"))


def _grade(assignment: Assignment, candidate: Candidate, grade: int) -> None:
    labeling_services.judgment_submit(
        assignment_id=assignment.pk, rater=assignment.rater, candidate_id=candidate.pk, grade=grade
    )


def _done(assignment: Assignment) -> None:
    labeling_services.assignment_done(assignment_id=assignment.pk, rater=assignment.rater)


def _working(golden_set: GoldenSet, name: str) -> GoldenFile:
    return replace(selectors.working_golden_get(golden_set=golden_set).golden, version=name)


def _frozen(version: GoldenVersion, query_id: str) -> dict[str, int]:
    return {j.doc_id: j.grade for j in version.golden().query(query_id).judgments}


@pytest.fixture
def frozen_query(golden_set: GoldenSet) -> Query:
    """A query with a frozen label, so the set has something to freeze before anyone grades."""
    query = factories.pooled_query(golden_set, 1, external_id="q-0002", text="reset password")
    factories.FrozenLabelFactory.create(query=query, document=query.candidates.get().document, grade=2)
    return query


def test_an_open_assignments_grades_never_reach_a_freeze_and_do_once_it_is_done(
    golden_set: GoldenSet, frozen_query: Query, alice: User, rita: User
) -> None:
    query = factories.pooled_query(golden_set, 6, external_id="q-0401", text="refund for annual plan")
    assignment = factories.AssignmentFactory.create(query=query, rater=alice)  # one rater, no second
    v1 = services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1")
    assert _frozen(v1, "q-0401") == {}
    candidates = _candidates(query)

    # At every step of the open work, whatever was graded so far, the next freeze is the last version.
    for n, candidate in enumerate(candidates, start=1):
        _grade(assignment, candidate, n % 4)
        assert _working(golden_set, "v1") == v1.golden()
        with pytest.raises(services.FreezeUnchanged) as refused:
            services.golden_version_freeze(golden_set=golden_set, by=rita, name="v2")
        assert refused.value.problems == [
            "nothing changed since version v1: not frozen",
            f"{n} document{'s' if n > 1 else ''} graded on work not marked done yet"
            f" {'were' if n > 1 else 'was'} left out: a rater's grades count once the rater marks the"
            " query done",
        ]
    assert GoldenVersion.objects.count() == 1

    _done(assignment)
    v2 = services.golden_version_freeze(golden_set=golden_set, by=rita, name="v2")

    assert _frozen(v2, "q-0401") == {c.document.doc_id: n % 4 for n, c in enumerate(candidates, start=1)}
    assert v2.counts["methods"] == {"frozen": 1, "single": 6}
    assert v2.counts["left_out_not_done"] == 0
    assert "not marked done" not in v2.notes


def test_a_freeze_lists_the_documents_of_open_work_with_the_count_on_every_surface(
    golden_set: GoldenSet, frozen_query: Query, alice: User, bob: User, rita: User, client: Client
) -> None:
    """The issue's case: a few documents of a single-rater query graded, the query not marked done."""
    open_query = factories.pooled_query(golden_set, 5, external_id="q-0401", text="refund for annual plan")
    finished = factories.pooled_query(golden_set, 1, external_id="q-0403", text="invoice address")
    open_work = factories.AssignmentFactory.create(query=open_query, rater=alice)
    done_work = factories.AssignmentFactory.create(query=finished, rater=bob)
    services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1")
    graded = _candidates(open_query)[:2]
    for candidate in graded:
        _grade(open_work, candidate, 3)
    _grade(done_work, finished.candidates.get(), 1)
    _done(done_work)
    left_out = [f"q-0401 / {c.document.doc_id}: graded 3, not marked done (not in the file)" for c in graded]
    client.force_login(rita)

    before = client.get(reverse("golden_io:freeze", args=[golden_set.slug])).content.decode()
    assert 'id="not-done"' in before and "2 documents graded on work not marked done yet" in before
    assert all(line in before for line in left_out)
    diff_page = client.get(reverse("golden_io:diff", args=[golden_set.slug]), {"new": "working"})
    assert "2 documents graded on work not marked done yet would be left out" in diff_page.content.decode()
    out = io.StringIO()
    call_command("golden_diff", f"{golden_set.slug}@v1", "working", stdout=out)
    assert "! left out, graded on work not marked done: old 0, new 2" in out.getvalue()

    response = client.post(reverse("golden_io:freeze", args=[golden_set.slug]), {"name": "v2"}, follow=True)

    page = response.content.decode()
    assert "2 documents graded on work not marked done yet were left out" in page  # the message
    version = GoldenVersion.objects.get(name="v2")
    assert _frozen(version, "q-0401") == {}  # the open work is not in the file
    assert _frozen(version, "q-0403") == {finished.candidates.get().document.doc_id: 1}  # the done work is
    assert version.counts["left_out_not_done"] == 2
    assert all(f"- {line}" in version.notes for line in left_out)
    assert 'id="left-out-not-done"' in page
    assert '<th>Left out: graded on work not marked done</th><td class="num">2</td>' in page

    # The command says the same, in its output: one more finished query makes a change to freeze.
    more = factories.pooled_query(golden_set, 1, external_id="q-0404", text="change plan")
    more_work = factories.AssignmentFactory.create(query=more, rater=bob)
    _grade(more_work, more.candidates.get(), 2)
    _done(more_work)
    out = io.StringIO()
    call_command("golden_freeze", golden_set.slug, "--name", "v3", stdout=out)
    assert "Left out: 2 documents graded on work not marked done yet were left out" in out.getvalue()
    assert all(line in out.getvalue() for line in left_out)
    out = io.StringIO()
    call_command("golden_diff", f"{golden_set.slug}@v2", "v3", "--format", "json", stdout=out)
    assert '"left_out_not_done": {\n    "old": 2,\n    "new": 2\n  }' in out.getvalue()


def test_labels_frozen_from_work_now_open_stay_as_they_were_frozen(
    golden_set: GoldenSet, frozen_query: Query, alice: User, rita: User
) -> None:
    """What a freeze took before this rule from grades on work not marked done is the state of finished
    work a reviewer reopened: frozen labels whose grades now sit on an open assignment. Nothing already
    frozen changes: the next freeze would be the same version, whatever the rater does while it is open,
    and the versions themselves are never rewritten."""
    query = factories.pooled_query(golden_set, 3, external_id="q-0401", text="refund for annual plan")
    assignment = factories.AssignmentFactory.create(query=query, rater=alice)
    candidates = _candidates(query)
    for candidate, grade in zip(candidates, (3, 1, 0), strict=True):
        _grade(assignment, candidate, grade)
    _done(assignment)
    v1 = services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1")
    stored = (v1.content_bytes, v1.sha256)
    assert _frozen(v1, "q-0401") == {c.document.doc_id: g for c, g in zip(candidates, (3, 1, 0), strict=True)}

    labeling_services.assignment_reopen(assignment=assignment, by=rita)
    assert _working(golden_set, "v1") == v1.golden()
    _grade(assignment, candidates[1], 2)  # an overturn on open work: not a label, not even a proposal yet
    assert _working(golden_set, "v1") == v1.golden()
    with pytest.raises(services.FreezeUnchanged):
        services.golden_version_freeze(golden_set=golden_set, by=rita, name="v2")
    assert not LabelProposal.objects.exists()

    _done(assignment)  # finished again: the overturn is a proposal, and the label waits for a reviewer
    assert LabelProposal.objects.get().to_grade == 2
    assert _working(golden_set, "v1") == v1.golden()
    v1.refresh_from_db()
    assert (v1.content_bytes, v1.sha256) == stored


def test_a_rejudgment_not_marked_done_is_listed_and_counts_once_done(
    golden_set: GoldenSet, frozen_query: Query, alice: User, bob: User, rita: User
) -> None:
    query = factories.pooled_query(golden_set, 2, external_id="q-0401", text="refund for annual plan")
    first = factories.AssignmentFactory.create(query=query, rater=alice)
    candidates = _candidates(query)
    for candidate in candidates:
        _grade(first, candidate, 1)
    _done(first)
    v1 = services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1")
    doc = candidates[0].document
    doc.title = "the refund page, rewritten"
    doc.save()
    rejudge = labeling_services.assignment_rejudge_create(query=query, documents=[doc], rater=bob)
    _grade(rejudge, candidates[0], 3)  # on the new content, not marked done

    working = selectors.working_golden_get(golden_set=golden_set)
    assert replace(working.golden, version="v1") == v1.golden()
    assert [(n.doc_id, n.grades, n.label) for n in working.not_done] == [(doc.doc_id, (3,), 1)]

    _done(rejudge)  # done: the re-judgment counts, as one rater's overturn of a frozen label (a proposal)

    assert selectors.working_golden_get(golden_set=golden_set).not_done == ()
    assert LabelProposal.objects.get().to_grade == 3
