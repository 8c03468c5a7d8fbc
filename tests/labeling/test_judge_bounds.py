"""A judge's replies are bounded like a search target's (assay.replies): the try button ends within its
deadline against an endpoint that drips its answer, with a worded failure on the page; a reply nested
thousands of levels deep or larger than the cap is that pair's failure, the other pairs answered.
Against the loopback chat-completions stub (tests/support/judge_stub.py); no wall-clock assertion: the
deadline is shown to apply by its words and by how little of the dripping answer went out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client

from assay.judge.client import past_deadline
from assay.replies import MIB, REPLY_MAX_DEPTH
from labeling.models import Assignment, GoldenSet, Judge
from labeling.services import judges
from tests.support.judge_stub import graded, judge_settings, judge_stub, try_form
from tests.support.stub_server import Reply, StubServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with judge_stub() as server:
        yield server


def test_try_against_a_dripping_endpoint_ends_at_its_deadline_with_words_on_the_page(
    client: Client,
    golden_set: GoldenSet,
    assignment: Assignment,
    stub: StubServer,
    rita: User,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(judges, "TRY_DEADLINE_S", 0.5)
    answer = graded(2, drip=0.1)  # one byte every 0.1 s: its whole body would take half a minute
    stub.default = answer
    client.force_login(rita)

    response = client.post(f"/sets/{golden_set.slug}/judges/new/", try_form(stub.url, assignment.query.pk))

    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('class="tried-pair"') == 3
    assert page.count(f"No answer: {past_deadline(0.5)}") == 3
    assert past_deadline(0.5) == "no answer within 0.5 s (the limit for the whole call)"
    body = answer.parts(keep_alive=True)[1]
    assert stub.requests and all(r.sent < len(body) for r in stub.requests)
    assert not Judge.objects.exists()


def test_try_against_an_endpoint_answering_deep_json_shows_a_worded_failure_not_a_500(
    client: Client, golden_set: GoldenSet, assignment: Assignment, stub: StubServer, rita: User
) -> None:
    stub.default = Reply(raw=b"[" * 100_000, content_type="application/json")
    client.force_login(rita)

    response = client.post(f"/sets/{golden_set.slug}/judges/new/", try_form(stub.url, assignment.query.pk))

    assert response.status_code == 200
    page = response.content.decode()
    failure = (
        "No answer: reply is not JSON (application/json, 100000 bytes): "
        f"nested deeper than {REPLY_MAX_DEPTH} levels of arrays or objects"
    )
    assert page.count(failure) == 3


def test_a_deep_or_oversize_reply_is_that_pairs_failure_and_the_other_pair_is_answered(
    golden_set: GoldenSet, assignment: Assignment, stub: StubServer
) -> None:
    deep = Reply(raw=b"[" * 100_000, content_type="application/json")
    huge = graded(1, pad=64 * MIB)  # valid JSON, were it read to its end
    stub.on(assignment.query.text, deep, huge, graded(3, "exactly it"))
    query = assignment.query
    pairs = [(query, c.document) for c in query.candidates.select_related("document").order_by("id")[:3]]
    assert len(pairs) == 3

    tried = judges.judge_try(golden_set=golden_set, settings=judge_settings(stub.url), pairs=pairs)

    outcomes = sorted(
        t.reply.failure or f"grade {t.reply.answer.grade if t.reply.answer else None}" for t in tried
    )
    assert outcomes == sorted(
        [
            "grade 3",
            "reply is not JSON (application/json, 100000 bytes): "
            f"nested deeper than {REPLY_MAX_DEPTH} levels of arrays or objects",
            "reply larger than the limit of 8 MB (HTTP 200, application/json)",
        ]
    )
    # The client stopped at the cap (at once: the reply announced its length), far from the 64 MiB offered.
    assert len(stub.requests) == 3 and all(r.sent < 24 * MIB for r in stub.requests)
