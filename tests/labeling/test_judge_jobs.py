"""Judge jobs against a loopback OpenAI-compatible stub (tests/support/judge_stub.py), the job's steps
called in-process as the Celery tasks call them (labeling/tasks.py; on real workers:
tests/integration/test_judge_workers.py).

Covered: good answers become judge labels with tokens and elapsed time on the job; off-scale, prose and
missing-field answers are errors quoting what was seen, never grades; a timeout, a 429 with Retry-After
(seconds and HTTP date) and a 500 then success; a slow endpoint held to the judge's concurrency; the
cache preventing a second call; cancel; the blinding property; the API key found only in the
Authorization header; judge labels kept apart from human grades.
"""

from __future__ import annotations

import email.utils
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core import serializers
from django.db import connection
from django.utils import timezone

from assay.judge.client import RetryPolicy
from labeling.models import GoldenSet, Judge, JudgeAnswer, JudgeJob, JudgeJobItem, JudgeLabel, Judgment, Query
from labeling.services import judges
from tests import factories
from tests.support.judge_stub import chat_reply, graded, judge_settings, judge_stub
from tests.support.stub_server import Reply, StubServer

pytestmark = pytest.mark.django_db

Status = JudgeJob.Status


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with judge_stub() as server:
        yield server


@pytest.fixture(autouse=True)
def _quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judges, "RETRY", RetryPolicy(retries=2, backoff_base=0.05, retry_after_max=1.0))
    monkeypatch.setattr(judges, "REQUEST_TIMEOUT_S", 1.0)


def make_judge(golden_set: GoldenSet, url: str, **changes: object) -> Judge:
    judge, _ = judges.judge_save(golden_set=golden_set, settings=judge_settings(url, **changes), by=None)
    return judge


def run_job(judge: Judge, queries: list[Query], chunk_size: int = 20) -> JudgeJob:
    """The job's tasks in order, as the chain runs them."""
    job = judges.judge_job_create(judge=judge, queries=queries, by=None, chunk_size=chunk_size)
    starts = judges.judge_job_begin(job_id=job.pk)
    assert starts is not None
    for start in starts:
        judges.judge_chunk_process(job_id=job.pk, start=start)
    judges.judge_job_finish(job_id=job.pk)
    job.refresh_from_db()
    return job


def query_with(golden_set: GoldenSet, text: str, n: int = 1) -> Query:
    return factories.pooled_query(golden_set, n, text=text)


def test_good_answers_become_judge_labels_with_tokens_and_time(
    golden_set: GoldenSet, stub: StubServer
) -> None:
    query = query_with(golden_set, "refund policy", 3)
    stub.on("refund policy", graded(3, "the refund policy itself", prompt_tokens=120, completion_tokens=12))
    job = run_job(make_judge(golden_set, stub.url), [query])

    assert (job.status, job.total, job.done, job.errors, job.cached) == (Status.SUCCEEDED, 3, 3, 0, 0)
    assert (job.prompt_tokens, job.completion_tokens) == (360, 36)
    assert job.elapsed_ms >= 0 and job.started_at and job.finished_at
    labels = JudgeLabel.objects.filter(judge=job.judge, query=query)
    assert sorted(label.grade for label in labels) == [3, 3, 3]
    assert {label.reason for label in labels} == {"the refund policy itself"}
    assert all(label.content_hash == label.document.content_hash for label in labels)
    sent = stub.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.json["model"] == "stub-model" and sent.json["temperature"] == 0.0
    assert sent.json["response_format"]["type"] == "json_schema"
    assert "authorization" not in sent.headers  # no key named: none sent
    # Judge labels are not human grades: nothing that reads Judgment rows sees them.
    assert not Judgment.objects.exists()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"grade": 9, "reason": "great"}', "off the scale 0..3"),
        ("This document is quite relevant, I'd say a 2.", "not a JSON object"),
        ('{"grade": 2}', "missing reason"),
        ('{"score": 2, "why": "x"}', "missing grade, reason"),
    ],
)
def test_answers_that_break_the_contract_are_errors_never_grades(
    golden_set: GoldenSet, stub: StubServer, content: str, problem: str
) -> None:
    query = query_with(golden_set, "bad answers")
    stub.on("bad answers", chat_reply(content))
    job = run_job(make_judge(golden_set, stub.url), [query])

    assert (job.status, job.done, job.errors) == (Status.SUCCEEDED, 1, 1)
    assert not JudgeLabel.objects.exists()
    answer = JudgeAnswer.objects.get()
    assert answer.grade is None and problem in answer.error and "seen:" in answer.error
    assert answer.prompt_tokens == 100  # paid for all the same


def test_a_timeout_is_a_failure_after_the_retries(golden_set: GoldenSet, stub: StubServer) -> None:
    query = query_with(golden_set, "too slow")
    stub.on("too slow", graded(2, delay=3.0))  # longer than the 1 s timeout
    job = run_job(make_judge(golden_set, stub.url), [query])

    assert (job.done, job.errors) == (1, 1)
    item = JudgeJobItem.objects.get(job=job)
    assert "timeout after 1s" in item.failure and "(3 attempts)" in item.failure
    assert len(stub.requests_for("too slow")) == 3
    assert not JudgeAnswer.objects.exists()  # no answer came: nothing cached, a later job tries again


@pytest.mark.parametrize(
    "retry_after",
    ["1", "http-date"],
)
def test_a_429_waits_as_retry_after_says_then_succeeds(
    golden_set: GoldenSet, stub: StubServer, retry_after: str
) -> None:
    query = query_with(golden_set, "busy")
    if retry_after == "http-date":  # two seconds ahead: a second or more once the date's rounding is off
        retry_after = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    stub.on(
        "busy", Reply(status=429, headers={"Retry-After": retry_after}, json={"error": "rate"}), graded(1)
    )
    job = run_job(make_judge(golden_set, stub.url), [query])

    assert (job.done, job.errors) == (1, 0)
    first, second = stub.requests_for("busy")
    assert (
        second.received_at - first.received_at >= 0.5
    )  # waited (the cap is 1 s here), not the 0.05 s backoff
    assert JudgeLabel.objects.get().grade == 1


def test_a_500_then_success_is_an_answer(golden_set: GoldenSet, stub: StubServer) -> None:
    query = query_with(golden_set, "flaky")
    stub.on("flaky", Reply(status=500, text="oops"), graded(0, "unrelated"))
    job = run_job(make_judge(golden_set, stub.url), [query])
    assert (job.done, job.errors) == (1, 0)
    assert len(stub.requests_for("flaky")) == 2
    assert JudgeLabel.objects.get().grade == 0


def test_a_slow_endpoint_gets_no_more_than_the_judges_concurrency(
    golden_set: GoldenSet, stub: StubServer
) -> None:
    query = query_with(golden_set, "slow", 6)
    stub.on("slow", graded(2, delay=0.2))
    job = run_job(make_judge(golden_set, stub.url, concurrency=2), [query], chunk_size=3)
    assert (job.done, job.errors) == (6, 0)
    assert stub.max_in_flight == 2


def test_the_cache_answers_a_pair_already_paid_for(golden_set: GoldenSet, stub: StubServer) -> None:
    query = query_with(golden_set, "cached", 4)
    judge = make_judge(golden_set, stub.url)
    first = run_job(judge, [query])
    assert len(stub.requests) == 4 and first.cached == 0
    second = run_job(judge, [query])
    assert len(stub.requests) == 4  # not one call more
    assert (second.done, second.cached, second.prompt_tokens) == (4, 4, 0)
    assert JudgeAnswer.objects.count() == 4 and JudgeLabel.objects.count() == 4
    # A changed document is new content: asked again, alone.
    document = query.candidates.first().document  # type: ignore[union-attr]
    document.body = "A different text now."
    document.save()
    run_job(judge, [query])
    assert len(stub.requests) == 5


def test_a_redelivered_chunk_judges_only_what_is_not_done(golden_set: GoldenSet, stub: StubServer) -> None:
    query = query_with(golden_set, "redelivered", 4)
    job = judges.judge_job_create(judge=make_judge(golden_set, stub.url), queries=[query], by=None)
    judges.judge_job_begin(job_id=job.pk)
    judges.judge_chunk_process(job_id=job.pk, start=0)
    judges.judge_chunk_process(job_id=job.pk, start=0)  # the same chunk delivered again
    assert len(stub.requests) == 4


def test_a_small_job_judged_directly_has_exactly_one_answer_per_pair(
    golden_set: GoldenSet, stub: StubServer
) -> None:
    """What the start task does with a job of a few chunks (labeling/tasks.py): every pair in one pass,
    then finished; a chunk of it delivered again afterwards (the broker's redelivery) asks nothing."""
    queries = [query_with(golden_set, f"direct {i}", 9) for i in range(5)]
    job = judges.judge_job_create(
        judge=make_judge(golden_set, stub.url, concurrency=4), queries=queries, by=None, chunk_size=10
    )
    assert judges.judge_job_begin(job_id=job.pk) == [0, 10, 20, 30, 40]
    assert judges.judge_job_direct(job_id=job.pk) == Status.SUCCEEDED
    judges.judge_chunk_process(job_id=job.pk, start=20)
    job.refresh_from_db()
    assert (job.total, job.done, job.errors, job.cached) == (45, 45, 0, 0)
    assert len(stub.requests) == 45
    assert JudgeAnswer.objects.filter(job=job).count() == 45
    assert JudgeJobItem.objects.filter(job=job, answer__isnull=False).count() == 45
    assert JudgeLabel.objects.filter(judge=job.judge).count() == 45


@pytest.mark.django_db(transaction=True)  # the chunk runs in another thread, on its own connection
def test_cancel_stops_the_chunk(golden_set: GoldenSet, stub: StubServer) -> None:
    query = query_with(golden_set, "cancel me", 8)
    stub.on("cancel me", graded(2, delay=0.4))
    job = judges.judge_job_create(
        judge=make_judge(golden_set, stub.url, concurrency=1), queries=[query], by=None
    )
    judges.judge_job_begin(job_id=job.pk)

    def chunk() -> None:
        try:
            judges.judge_chunk_process(job_id=job.pk, start=0)
        finally:
            connection.close()

    worker = threading.Thread(target=chunk)
    worker.start()
    deadline = time.monotonic() + 10
    while not JudgeJobItem.objects.filter(job=job, done=True).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert judges.judge_job_cancel(job=job)
    worker.join(15)
    assert not worker.is_alive()
    job.refresh_from_db()
    assert job.status == Status.CANCELLED
    assert 1 <= job.done < 8
    assert len(stub.requests) < 8
    assert judges.judge_job_finish(job_id=job.pk) == Status.CANCELLED
    assert not judges.judge_job_cancel(job=job)


def test_the_judge_sees_no_system_rank_label_or_grade(
    golden_set: GoldenSet, stub: StubServer, alice: User
) -> None:
    """The blinding property: a pool whose provenance names systems and ranks, documents with frozen
    labels, human grades and gold; none of it reaches any prompt sent."""
    query = factories.QueryFactory.create(golden_set=golden_set, text="blind query")
    secrets_of_pool = ["system-zebra-bm25", "system-okapi-dense"]
    assignment = factories.AssignmentFactory.create(query=query, rater=alice)
    for rank in range(1, 4):
        document = factories.DocumentFactory.create(golden_set=golden_set, title=f"Plain title {rank}")
        factories.CandidateFactory.create(
            query=query,
            document=document,
            provenance=[
                {"system": secrets_of_pool[0], "rank": 40 + rank},
                {"system": secrets_of_pool[1], "rank": 70 + rank},
            ],
            best_rank=40 + rank,
        )
        factories.FrozenLabelFactory.create(query=query, document=document, grade=3, version="frozen-v-xyzzy")
        factories.grade(assignment, document, 1, note="rater-note-plugh")
        factories.AdjudicationFactory.create(query=query, document=document, rationale="adjudicated-quux")
    run_job(make_judge(golden_set, stub.url, instructions="Grade it."), [query])

    assert len(stub.requests) == 3
    for request in stub.requests:
        text = request.body.decode()
        for forbidden in [
            *secrets_of_pool,
            "frozen-v-xyzzy",
            "rater-note-plugh",
            "adjudicated-quux",
            "rank",
            "alice",
        ]:
            assert forbidden not in text
        for number in ("41", "42", "43", "71", "72", "73"):
            assert number not in text
        prompt = request.json["messages"]
        assert [m["role"] for m in prompt] == ["system", "user"]
        assert "Query: blind query" in prompt[1]["content"]


def test_the_api_key_is_sent_and_found_nowhere_else(
    golden_set: GoldenSet,
    stub: StubServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    client,
    rita: User,
) -> None:
    key = "sk-unique-judge-key-5c7e1f0a9b"
    monkeypatch.setenv("ASSAY_SECRET_JUDGE_KEY", key)
    query = query_with(golden_set, "keyed", 2)
    other = query_with(golden_set, "keyed failing")
    stub.on("keyed failing", Reply(status=401, json={"error": f"bad key {key}"}))
    caplog.set_level("DEBUG")
    factories.grant_secrets(golden_set, "ASSAY_SECRET_JUDGE_KEY")
    judge = make_judge(golden_set, stub.url, api_key_env="ASSAY_SECRET_JUDGE_KEY")
    job = run_job(judge, [query, other])

    assert {r.headers["authorization"] for r in stub.requests} == {f"Bearer {key}"}
    assert job.errors == 1 and "HTTP 401" in JudgeJobItem.objects.get(job=job, query=other).failure
    everything = []
    for model in apps.get_models():
        everything.append(serializers.serialize("json", model._default_manager.all()))
    client.force_login(rita)
    for url in (
        f"/sets/{golden_set.slug}/judges/",
        f"/sets/{golden_set.slug}/judges/{judge.pk}/",
        f"/sets/{golden_set.slug}/judges/{judge.pk}/jobs/{job.pk}/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        everything.append(response.content.decode())
    everything.append(caplog.text)
    everything.append(json.dumps([job.message, list(JudgeJobItem.objects.values_list("failure", flat=True))]))
    assert not [text for text in everything if key in text]


def test_a_missing_key_variable_fails_the_pairs_without_a_call(
    golden_set: GoldenSet, stub: StubServer
) -> None:
    query = query_with(golden_set, "no key")
    factories.grant_secrets(golden_set, "ASSAY_SECRET_NOT_SET_HERE")
    job = run_job(make_judge(golden_set, stub.url, api_key_env="ASSAY_SECRET_NOT_SET_HERE"), [query])
    assert (job.done, job.errors) == (1, 1)
    assert "ASSAY_SECRET_NOT_SET_HERE is not set" in JudgeJobItem.objects.get(job=job).failure
    assert not stub.requests


def test_a_deciding_change_is_a_new_judge_and_a_serving_change_is_not(
    golden_set: GoldenSet, stub: StubServer
) -> None:
    first = make_judge(golden_set, stub.url)
    same, created = judges.judge_save(
        golden_set=golden_set, settings=judge_settings(stub.url, concurrency=5), by=None, previous=first
    )
    assert (same.pk, created, same.concurrency) == (first.pk, False, 5)
    for change in ({"model": "other"}, {"temperature": 0.7}, {"instructions": "Be strict."}):
        new, created = judges.judge_save(
            golden_set=golden_set, settings=judge_settings(stub.url, **change), by=None, previous=first
        )
        assert (
            created and new.pk != first.pk and new.previous == first and new.config_hash != first.config_hash
        )
    with pytest.raises(judges.JudgeError, match="already has this model"):
        judges.judge_save(golden_set=golden_set, settings=judge_settings(stub.url, model="other"), by=None)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"api_key_env": "DJANGO_SECRET_KEY"}, "does not start with ASSAY_SECRET_"),
        ({"api_key_env": "sk-live-pasted-key"}, "not an environment variable name"),
        ({"base_url": "ftp://example.com"}, "expected http(s)"),
    ],
)
def test_settings_are_checked(golden_set: GoldenSet, changes: dict[str, str], problem: str) -> None:
    with pytest.raises(judges.JudgeError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        judges.judge_save(
            golden_set=golden_set, settings=judge_settings("http://127.0.0.1:9", **changes), by=None
        )


def test_private_addresses_need_the_operators_consent(
    golden_set: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_TARGET_ALLOW_PRIVATE", "false")
    with pytest.raises(judges.JudgeError, match="loopback"):
        judges.judge_save(golden_set=golden_set, settings=judge_settings("http://127.0.0.1:9"), by=None)


def test_trying_a_prompt_shows_each_prompt_and_answer_and_saves_nothing(
    golden_set: GoldenSet, stub: StubServer
) -> None:
    query = query_with(golden_set, "try me", 4)
    stub.on("try me", graded(3), chat_reply("prose"))
    pairs = [(query, c.document) for c in query.candidates.all()]
    tried = judges.judge_try(golden_set=golden_set, settings=judge_settings(stub.url), pairs=pairs)
    assert len(tried) == 3  # at most three
    assert [t.reply.answer.grade if t.reply.answer else None for t in tried].count(3) == 1
    assert all("Query: try me" in t.messages[1]["content"] for t in tried)
    assert not Judge.objects.exists() and not JudgeAnswer.objects.exists()


def test_a_chunk_leaves_a_job_held_by_a_live_delivery_alone(golden_set: GoldenSet, stub: StubServer) -> None:
    query = query_with(golden_set, "held", 3)
    job = judges.judge_job_create(judge=make_judge(golden_set, stub.url), queries=[query], by=None)
    judges.judge_job_begin(job_id=job.pk)
    JudgeJob.objects.filter(pk=job.pk).update(holder="another-delivery", heartbeat_at=timezone.now())
    assert judges.judge_chunk_process(job_id=job.pk, start=0) is False
    assert not stub.requests and not JudgeJobItem.objects.filter(job=job, done=True).exists()
    # Its hold ran out (the delivery's worker died): the next delivery takes the job over.
    JudgeJob.objects.filter(pk=job.pk).update(
        heartbeat_at=timezone.now() - judges.HOLD - timedelta(seconds=1)
    )
    judges.judge_chunk_process(job_id=job.pk, start=0)
    assert len(stub.requests) == 3
    job.refresh_from_db()
    assert job.holder == "" and job.done == 3  # released when the chunk ended


def test_the_sweep_sends_the_unfinished_chunks_of_a_job_whose_heartbeat_stopped(
    golden_set: GoldenSet, stub: StubServer
) -> None:
    query = query_with(golden_set, "stalled", 7)
    job = judges.judge_job_create(
        judge=make_judge(golden_set, stub.url), queries=[query], by=None, chunk_size=3
    )
    assert judges.judge_job_begin(job_id=job.pk) == [0, 3, 6]
    judges.judge_chunk_process(job_id=job.pk, start=0)  # chunk 0 done
    # Chunk 3's delivery held the job, then its worker died.
    JudgeJob.objects.filter(pk=job.pk).update(holder="dead-delivery", heartbeat_at=timezone.now())
    assert judges.judge_jobs_sweep() == {}  # the heartbeat is fresh
    later = timezone.now() + judges.JOB_STALL + timedelta(seconds=1)
    assert judges.judge_jobs_sweep(now=later) == {job.pk: [3, 6]}
    assert judges.judge_jobs_sweep(now=later) == {}  # taken once per stall
    # The chunks sent again can hold the job at once: the dead delivery's hold was dropped.
    judges.judge_chunk_process(job_id=job.pk, start=3)
    assert len(stub.requests) == 6
    judges.judge_job_cancel(job=job)
    assert judges.judge_jobs_sweep(now=later + judges.JOB_STALL * 2) == {}  # a cancelled job is left alone
