"""Machine judges: configuring one, trying its prompt, and the jobs that grade a set's pairs on Celery
(docs/judge.md).

A judge sees a pair exactly as a rater does: `pair_prompt` reads the rubric, the query's text, locale and
filters and the document's title and text, nothing else (no provenance, no rank, no label, no grade).
A job's pairs are `JudgeJobItem` rows; its chunks are index ranges judged one after another (a chain of
`labeling.judge_chunk` tasks), each with at most the judge's concurrency in flight. Every answer goes into
the `JudgeAnswer` cache as it arrives, keyed by (model, prompt hash, query hash, document hash), and a
chunk reads the cache before calling, so a redelivered chunk (its worker killed) pays for nothing twice.

Imported as `labeling.services.judges` (not re-exported by `labeling.services`).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Count, F, Q, QuerySet, Sum
from django.utils import timezone

from assay.judge.answer import Answer
from assay.judge.client import (
    Call,
    Endpoint,
    Reply,
    RetryPolicy,
    endpoint_credential_problems,
    endpoint_problem,
    judge_all,
    judge_all_sync,
)
from assay.judge.prompt import (
    Grade,
    PromptDocument,
    PromptQuery,
    PromptSpec,
    Rubric,
    canonical_hash,
    messages,
    prompt_hash,
    query_hash,
    response_format,
)
from assay.loop_thread import LoopThread
from assay.secrets import SecretEnvError
from labeling.judge_metrics import judge_calls_count
from labeling.models import (
    Candidate,
    Document,
    GoldenSet,
    Judge,
    JudgeAnswer,
    JudgeJob,
    JudgeJobItem,
    JudgeLabel,
    Query,
)
from labeling.selectors.grading import shuffle_key
from labeling.selectors.secrets import secret_problem, secret_read

logger = logging.getLogger(__name__)

Status = JudgeJob.Status
JOB_START = "labeling.judge_job_start"  # the task's name: services queue it by name, never import tasks
CHUNK_SIZE = 20
TRY_MAX = 3
# The fields that decide a judge's answers: a change to any of them is a new judge (`config_hash`).
DECIDING = ("model", "instructions", "temperature", "text_budget", "structured")
SERVING = ("base_url", "api_key_env", "concurrency")
WRITE_EVERY_S = 0.5
# Replies stored together at most: those arrived while the last batch was written.
STORE_BATCH = 50
# Per request (connect, send and the whole reply): a large model on a busy server can take a minute to
# answer.
REQUEST_TIMEOUT_S = 120.0
RETRY = RetryPolicy()
# A chunk's hold on its job lasts this long without a renewal (it renews every WRITE_EVERY_S); a running
# job whose heartbeat is older than JOB_STALL lost its worker (or its next chunk waits behind other work):
# the sweeper sends its unfinished chunks again, and the holds keep two deliveries from working at once.
HOLD = timedelta(seconds=20)
JOB_STALL = timedelta(seconds=30)
# The try button waits in a web request: one retry, and a short wait on a 429 at most; and the whole try
# (every pair, retries and waits included) ends within TRY_DEADLINE_S, far inside a web server's worker
# timeout (gunicorn's default: 30 s; docs/deployment.md's: 60 s), so no endpoint holds a web worker past it
# (docs/judge.md). A pair unanswered by then says so; a job waits REQUEST_TIMEOUT_S per request.
TRY_RETRY = RetryPolicy(retries=1, retry_after_max=10.0)
TRY_DEADLINE_S = 10.0


class JudgeError(ValueError):
    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """What a reviewer types for a judge (the form's cleaned data)."""

    name: str
    base_url: str
    model: str
    api_key_env: str
    temperature: float
    concurrency: int
    text_budget: int
    instructions: str
    structured: bool = True


def judge_settings_problems(settings: JudgeSettings, golden_set: GoldenSet) -> list[str]:
    """Every reason the settings cannot be saved or tried for `golden_set`: credentials in the base URL
    (assay.urls), the endpoint's address (assay.netpolicy) and the key's variable (a name granted to the
    set: labeling.selectors.secrets; the name, never the key)."""
    problems = [f"base URL: {problem}" for problem in endpoint_credential_problems(settings.base_url)]
    if refused := endpoint_problem(settings.base_url):
        problems.append(f"base URL: {refused}")
    if settings.api_key_env and (refused := secret_problem(settings.api_key_env, golden_sets=[golden_set])):
        problems.append(f"API key variable: {refused}")
    if not settings.model.strip():
        problems.append("model: required")
    if not settings.instructions.strip():
        problems.append("instructions: required")
    return problems


def rubric_of(golden_set_or_judge: GoldenSet | Judge) -> Rubric:
    stored = golden_set_or_judge.rubric
    return Rubric(stored.scale_min, stored.scale_max, [Grade.from_dict(g) for g in stored.grades])


def config_hash(settings: JudgeSettings, rubric: Rubric) -> str:
    """The deciding fields and the rubric: equal hash, equal answers to expect."""
    values = asdict(settings)
    return canonical_hash(
        {"rubric": [asdict(g) for g in rubric.grades], **{name: values[name] for name in DECIDING}}
    )


def _spec(settings: JudgeSettings | Judge, rubric: Rubric) -> PromptSpec:
    return PromptSpec(instructions=settings.instructions, rubric=rubric, text_budget=settings.text_budget)


def prompt_query(query: Query) -> PromptQuery:
    return PromptQuery(text=query.text, locale=query.locale, filters=query.filters or {})


def prompt_document(document: Document) -> PromptDocument:
    """The document as a rater reads it: its title, and its snippet and body as the text."""
    text = "\n\n".join(part for part in (document.snippet, document.body) if part)
    return PromptDocument(title=document.title, text=text)


def endpoint_of(
    settings: JudgeSettings | Judge, golden_set: GoldenSet, retry: RetryPolicy | None = None
) -> Endpoint:
    """The endpoint with the key read from this process's environment on behalf of `golden_set`;
    SecretEnvError (which never holds a value) when the variable is not granted to the set (any more) or
    is not set here."""
    key = secret_read(settings.api_key_env, golden_set=golden_set) if settings.api_key_env else None
    return Endpoint(
        base_url=settings.base_url,
        model=settings.model,
        api_key=key,
        temperature=settings.temperature,
        concurrency=settings.concurrency,
        timeout=REQUEST_TIMEOUT_S,
        retry=retry or RETRY,
    )


def _settings_of(judge: Judge) -> JudgeSettings:
    return JudgeSettings(**{name: getattr(judge, name) for name in JudgeSettings.__dataclass_fields__})


@transaction.atomic
def judge_save(
    *,
    golden_set: GoldenSet,
    settings: JudgeSettings,
    by: User | None,
    previous: Judge | None = None,
    stand_in: bool = False,
) -> tuple[Judge, bool]:
    """Save a judge; returns (judge, created). Editing `previous` changes it in place only when no
    deciding field (model, instructions, temperature, text budget, structured output) differs; otherwise
    the result is a new judge that names `previous`. A configuration the set already has is refused."""
    if problems := judge_settings_problems(settings, golden_set):
        raise JudgeError(problems)
    rubric = golden_set.rubric
    digest = config_hash(settings, rubric_of(golden_set))
    if previous is not None and previous.config_hash == digest and previous.rubric_id == rubric.pk:
        for name in (*SERVING, "name"):
            setattr(previous, name, getattr(settings, name))
        previous.save(update_fields=[*SERVING, "name"])
        return previous, False
    same = Judge.objects.filter(golden_set=golden_set, config_hash=digest).first()
    if same is not None:
        raise JudgeError([f"judge {same.name!r} (#{same.pk}) already has this model, prompt and temperature"])
    judge = Judge.objects.create(
        golden_set=golden_set,
        rubric=rubric,
        config_hash=digest,
        previous=previous,
        created_by=by,
        stand_in=stand_in,
        **asdict(settings),
    )
    return judge, True


@dataclass(frozen=True, slots=True)
class TriedPair:
    query: Query
    document: Document
    messages: list[dict[str, str]]
    reply: Reply


def judge_try(
    *, golden_set: GoldenSet, settings: JudgeSettings, pairs: Sequence[tuple[Query, Document]]
) -> list[TriedPair]:
    """Send the settings' prompt for up to TRY_MAX pairs of the set and return each prompt with its
    answer or error. Saves nothing (not even the cache: the prompt may never be saved)."""
    if problems := judge_settings_problems(settings, golden_set):
        raise JudgeError(problems)
    try:
        endpoint = endpoint_of(settings, golden_set, TRY_RETRY)
    except SecretEnvError as exc:
        raise JudgeError([f"API key variable: {exc}"]) from None
    rubric = rubric_of(golden_set)
    spec = _spec(settings, rubric)
    chosen = list(pairs)[:TRY_MAX]
    prompts = [messages(spec, prompt_query(q), prompt_document(d)) for q, d in chosen]
    schema = response_format(rubric) if settings.structured else None
    calls = [Call(i, m, schema, rubric.scale) for i, m in enumerate(prompts)]
    replies = judge_all_sync(calls, endpoint, deadline=TRY_DEADLINE_S)
    return [TriedPair(q, d, m, r) for (q, d), m, r in zip(chosen, prompts, replies, strict=True)]


def judge_job_create(
    *,
    judge: Judge,
    queries: Iterable[Query],
    by: User | None,
    chunk_size: int = CHUNK_SIZE,
    pairs: Iterable[tuple[int, int]] | None = None,
) -> JudgeJob:
    """A job over every candidate of these queries (the set's own), or only over `pairs` ((query pk,
    document pk) candidates of them: "ask the judge" on a run's unjudged documents), queued once the
    transaction commits."""
    from celery import current_app

    query_ids = [q.pk for q in queries if q.golden_set_id == judge.golden_set_id]
    wanted = None if pairs is None else set(pairs)
    with transaction.atomic():
        job = JudgeJob.objects.create(judge=judge, created_by=by, chunk_size=chunk_size)
        rows = Candidate.objects.filter(query_id__in=query_ids).values_list(
            "query__external_id", "query_id", "pk", "document_id"
        )
        ordered = sorted(
            (row for row in rows if wanted is None or (row[1], row[3]) in wanted),
            # Each query's candidates in a blind order, as the grading page gives a rater's
            # (`shuffle_key`), with the judge in the rater's place (its id negated: no rater's order).
            key=lambda row: (row[0], shuffle_key(rater_id=-judge.pk, query_id=row[1], candidate_id=row[2])),
        )
        items = [
            JudgeJobItem(job=job, index=i, query_id=query_id, document_id=document_id)
            for i, (_, query_id, _, document_id) in enumerate(ordered)
        ]
        JudgeJobItem.objects.bulk_create(items)
        job.total = len(items)
        job.save(update_fields=["total"])
        transaction.on_commit(lambda: current_app.tasks[JOB_START].delay(job.pk))
    return job


def judge_job_begin(*, job_id: int) -> list[int] | None:
    """Claim a queued job (QUEUED -> RUNNING): the first item index of each chunk, or None when it is no
    longer queued (claimed by another delivery, or cancelled)."""
    now = timezone.now()
    claimed = JudgeJob.objects.filter(pk=job_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now, heartbeat_at=now
    )
    if not claimed:
        return None
    job = JudgeJob.objects.get(pk=job_id)
    return list(range(0, job.total, job.chunk_size))


def judge_job_direct(*, job_id: int) -> str:
    """Judge every pair of a claimed job not done yet in this delivery (one hold, one pass at the judge's
    concurrency), then finish it; returns the job's status. As a chunk's: a worker lost meanwhile stops the
    heartbeat and the sweeper sends the unfinished chunks again; a cancel stops it at its next check."""
    total = JudgeJob.objects.filter(pk=job_id).values_list("total", flat=True).first() or 0
    # Counted once, by the finish (a chunk's own count would be the same figures a moment earlier).
    judge_chunk_process(job_id=job_id, start=0, size=max(total, 1), tally=False)
    return judge_job_finish(job_id=job_id)


def judge_job_cancel(*, job: JudgeJob) -> bool:
    """Stop a queued or running job: its chunks stop at their next check. False when already final."""
    return bool(
        JudgeJob.objects.filter(pk=job.pk, status__in=[Status.QUEUED, Status.RUNNING]).update(
            status=Status.CANCELLED, finished_at=timezone.now()
        )
    )


def judge_job_finish(*, job_id: int) -> str:
    """RUNNING -> SUCCEEDED once every item is done; a job with items left stays RUNNING for its
    redelivered chunks. Returns the job's status."""
    _tally(job_id)
    JudgeJob.objects.filter(pk=job_id, status=Status.RUNNING, done__gte=F("total")).update(
        status=Status.SUCCEEDED, finished_at=timezone.now()
    )
    return JudgeJob.objects.get(pk=job_id).status


def _tally(job_id: int) -> bool:
    """Write the job's counts from its items and answers; False when the job is no longer RUNNING (how a
    chunk learns of a cancel)."""
    items = JudgeJobItem.objects.filter(job_id=job_id).aggregate(
        n_done=Count("id", filter=Q(done=True)),
        n_errors=Count("id", filter=Q(done=True) & (~Q(failure="") | Q(answer__grade__isnull=True))),
        n_cached=Count("id", filter=Q(cached=True)),
    )
    tokens = JudgeAnswer.objects.filter(job_id=job_id).aggregate(
        prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens")
    )
    JudgeJob.objects.filter(pk=job_id).update(
        done=items["n_done"],
        errors=items["n_errors"],
        cached=items["n_cached"],
        prompt_tokens=tokens["prompt"] or 0,
        completion_tokens=tokens["completion"] or 0,
    )
    return JudgeJob.objects.filter(pk=job_id, status=Status.RUNNING).exists()


class _Pairs:
    """One chunk's pairs and the cache keys of each."""

    def __init__(self, judge: Judge, items: Sequence[JudgeJobItem]) -> None:
        self.judge = judge
        self.rubric = rubric_of(judge)
        self.spec = _spec(judge, self.rubric)
        self.prompt_hash = prompt_hash(self.spec, temperature=judge.temperature, structured=judge.structured)
        self.items = {item.pk: item for item in items}
        self.keys = {
            item.pk: (query_hash(prompt_query(item.query)), item.document.content_hash) for item in items
        }

    def cached(self, items: Iterable[int] | None = None) -> dict[tuple[str, str], JudgeAnswer]:
        """The stored answers of these items' pairs (by pk; every item of the chunk by default)."""
        keys = list(self.keys.values()) if items is None else [self.keys[pk] for pk in items]
        query_hashes = {q for q, _ in keys}
        document_hashes = {d for _, d in keys}
        found = JudgeAnswer.objects.filter(
            model=self.judge.model,
            prompt_hash=self.prompt_hash,
            query_hash__in=query_hashes,
            document_hash__in=document_hashes,
        )
        return {(a.query_hash, a.document_hash): a for a in found}

    def call(self, item: JudgeJobItem) -> Call:
        prompt = messages(self.spec, prompt_query(item.query), prompt_document(item.document))
        schema = response_format(self.rubric) if self.judge.structured else None
        return Call(item.pk, prompt, schema, self.rubric.scale)


def _settle(job: JudgeJob, settled: Sequence[tuple[JudgeJobItem, JudgeAnswer]], *, cached: bool) -> None:
    """These items done with their answers, and each graded answer the judge's label of its pair: one
    transaction, a few statements for the whole batch (not a few per pair)."""
    labels = [
        JudgeLabel(
            judge_id=job.judge_id,
            query_id=item.query_id,
            document_id=item.document_id,
            grade=answer.grade,
            reason=answer.reason,
            content_hash=item.document.content_hash,
            job=job,
        )
        for item, answer in settled
        if answer.grade is not None
    ]
    with transaction.atomic(savepoint=False):  # within _store's transaction, no savepoint of its own
        JudgeLabel.objects.bulk_create(
            labels,
            update_conflicts=True,
            unique_fields=["judge", "query", "document"],
            update_fields=["grade", "reason", "content_hash", "job", "updated"],
        )
        # One parameterised UPDATE run for every item: bulk_update's CASE per row costs more to build (in
        # Python, per field and row) than the whole batch's writes.
        table = connection.ops.quote_name(JudgeJobItem._meta.db_table)
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {table} SET done = %s, answer_id = %s, cached = %s WHERE id = %s",  # noqa: S608 (the model's own table)
                [(True, answer.pk, cached, item.pk) for item, answer in settled],
            )


def _store(job: JudgeJob, pairs: _Pairs, replies: Sequence[Reply]) -> None:
    """Replies as they arrive, a batch at a time: answers into the cache (the first stored wins) and each
    item's label; a failure onto the item."""
    judge_calls_count(replies)
    items = [(pairs.items[int(str(reply.key))], reply) for reply in replies]
    failed = [(reply.failure or "no answer", item.pk) for item, reply in items if reply.answer is None]
    answered = [(item, reply, reply.answer) for item, reply in items if reply.answer is not None]
    # One transaction for the batch (one commit, so one flush of PostgreSQL's log, not one per statement).
    with transaction.atomic():
        if failed:
            table = connection.ops.quote_name(JudgeJobItem._meta.db_table)
            with connection.cursor() as cursor:
                cursor.executemany(
                    f"UPDATE {table} SET done = true, failure = %s WHERE id = %s",  # noqa: S608 (the model's own table)
                    failed,
                )
        if answered:
            _answered(job, pairs, answered)


def _answered(job: JudgeJob, pairs: _Pairs, answered: Sequence[tuple[JudgeJobItem, Reply, Answer]]) -> None:
    """The answers into the cache (the first stored wins), then each item settled with the stored one."""
    JudgeAnswer.objects.bulk_create(
        [
            JudgeAnswer(
                model=pairs.judge.model,
                prompt_hash=pairs.prompt_hash,
                query_hash=pairs.keys[item.pk][0],
                document_hash=pairs.keys[item.pk][1],
                grade=answer.grade,
                reason=answer.reason,
                error=answer.error or "",
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                latency_ms=reply.latency_ms,
                job=job,
            )
            for item, reply, answer in answered
        ],
        ignore_conflicts=True,  # an answer stored first (another job's, a redelivery's) stays
    )
    stored = pairs.cached(item.pk for item, _, _ in answered)
    _settle(job, [(item, stored[pairs.keys[item.pk]]) for item, _, _ in answered], cached=False)


@dataclass(frozen=True, slots=True)
class _Hold:
    """A chunk delivery's hold on its job: every write is conditional on `token`, so a delivery whose hold
    ran out (it stalled, another took the job) changes nothing and learns it should stop."""

    job_id: int
    token: str

    def _mine(self) -> QuerySet[JudgeJob]:
        return JudgeJob.objects.filter(pk=self.job_id, holder=self.token)

    def renew(self) -> bool:
        """Extend the hold; False when the job is no longer RUNNING (cancelled) or no longer held here."""
        return self._mine().filter(status=Status.RUNNING).update(heartbeat_at=timezone.now()) == 1

    def release(self) -> None:
        self._mine().update(holder="", heartbeat_at=timezone.now())


def _hold(job_id: int, now: datetime | None = None) -> _Hold | None:
    """Hold a running job for one chunk delivery: when no live delivery holds it. None otherwise."""
    now = now or timezone.now()
    token = uuid.uuid4().hex
    free = Q(holder="") | Q(heartbeat_at__lt=now - HOLD) | Q(heartbeat_at__isnull=True)
    held = JudgeJob.objects.filter(free, pk=job_id, status=Status.RUNNING).update(
        holder=token, heartbeat_at=now
    )
    return _Hold(job_id, token) if held else None


def judge_chunk_process(*, job_id: int, start: int, size: int | None = None, tally: bool = True) -> bool:
    """Judge the chunk's items that are not done yet (from the cache first, then the endpoint): the `size`
    items from `start` (the job's chunk size by default); True when the job is still RUNNING afterwards.
    Never raises for a pair's failure; an unexpected error in the chunk becomes the failure of its
    unfinished items. A delivery that finds the job held by another live delivery does nothing (the
    holder's chain goes on). Without `tally` the job's counts are left to the caller (who finishes it)."""
    job = JudgeJob.objects.select_related("judge__rubric").filter(pk=job_id).first()
    if job is None or job.status != Status.RUNNING:
        return False
    hold = _hold(job_id)
    if hold is None:
        logger.info("judge job %s: held by another delivery; chunk at %s left to it", job_id, start)
        return False
    try:
        return _chunk(job, start, size or job.chunk_size, hold, tally)
    finally:
        hold.release()


def _chunk(job: JudgeJob, start: int, size: int, hold: _Hold, tally: bool) -> bool:
    items = list(
        JudgeJobItem.objects.filter(job=job, index__gte=start, index__lt=start + size, done=False)
        .select_related("query", "document")
        .order_by("index")
    )
    started = time.monotonic()
    try:
        running = _judge_items(job, items, hold) if items else True
    except Exception as exc:
        logger.exception("judge job %s: chunk at %s stopped", job.pk, start)
        JudgeJobItem.objects.filter(pk__in=[i.pk for i in items], done=False).update(
            done=True, failure=f"chunk stopped: {type(exc).__name__}"
        )
        running = True
    elapsed = int((time.monotonic() - started) * 1000)
    JudgeJob.objects.filter(pk=job.pk).update(elapsed_ms=F("elapsed_ms") + elapsed)
    return (_tally(job.pk) if tally else True) and running


def _judge_items(job: JudgeJob, items: Sequence[JudgeJobItem], hold: _Hold) -> bool:
    pairs = _Pairs(job.judge, items)
    cache = pairs.cached()
    hits = [(item, cache[pairs.keys[item.pk]]) for item in items if pairs.keys[item.pk] in cache]
    if hits:
        _settle(job, hits, cached=True)
    todo = [item for item in items if pairs.keys[item.pk] not in cache]
    if not todo:
        return True
    try:
        endpoint = endpoint_of(job.judge, job.judge.golden_set)
    except SecretEnvError as exc:  # the same on every worker lacking the variable: recorded, not retried
        JudgeJobItem.objects.filter(pk__in=[i.pk for i in todo]).update(
            done=True, failure=f"judge cannot be called: {exc}"
        )
        return True
    # The client's event loop in its own thread; each reply is handed back so this thread (which owns the
    # database connection) stores it at once.
    asked = [pairs.call(item) for item in todo]
    calls: LoopThread[Reply] = LoopThread(
        lambda put: judge_all(asked, endpoint, on_reply=put), name="assay-judge"
    )
    calls.start()
    last_check = time.monotonic()
    try:
        ended = False
        while not ended:
            replies, ended = calls.arrived(STORE_BATCH, wait=0.05)
            if replies:
                _store(job, pairs, replies)
            if time.monotonic() - last_check >= WRITE_EVERY_S:
                last_check = time.monotonic()
                _tally(job.pk)
                if not hold.renew():  # cancelled, or the hold was lost: stop asking
                    calls.cancel()
                    return False
    finally:
        calls.cancel()
        calls.join(30)
    if calls.error is not None:
        raise calls.error
    return True


def judge_jobs_sweep(*, now: datetime | None = None) -> dict[int, list[int]]:
    """The running jobs whose heartbeat stopped (a lost worker, or a next chunk long in the queue), each
    with the first index of every chunk that still has pairs to judge: the sweeper's task sends those
    chunks again. Each job is taken at most once per stall (a conditional update of its heartbeat), so
    two sweeps never both send it."""
    now = now or timezone.now()
    stalled = JudgeJob.objects.filter(status=Status.RUNNING).filter(
        Q(heartbeat_at__lt=now - JOB_STALL) | Q(heartbeat_at__isnull=True)
    )
    plans: dict[int, list[int]] = {}
    for job in stalled:
        # The dead delivery's hold goes with it (it ran out long ago), so the chunks sent again can take it.
        taken = JudgeJob.objects.filter(
            pk=job.pk, status=Status.RUNNING, heartbeat_at=job.heartbeat_at
        ).update(heartbeat_at=now, holder="")
        if not taken:
            continue
        left = JudgeJobItem.objects.filter(job=job, done=False).values_list("index", flat=True)
        plans[job.pk] = sorted({index - index % job.chunk_size for index in left})
    return plans
