"""Machine judges (docs/judge.md): judges, their jobs, answers, job items, labels and qualifications.

Part of `labeling.models` (which imports every model, as Django requires).
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from assay.harness_config import MAX_CONCURRENCY
from labeling.models.sets import Document, GoldenSet, Query, Rubric


class Judge(models.Model):
    """A judge's configuration. What decides its answers (model, instructions, temperature, text budget,
    structured output, the rubric) never changes in place: a change is a new row (`previous` names the
    one it replaces) with its own `config_hash`, which must qualify again. Where it is served (base URL,
    the key's variable name, concurrency) may be edited."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="judges")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="judges")
    name = models.CharField(max_length=200)
    base_url = models.CharField(
        max_length=1000, help_text="OpenAI-compatible, e.g. https://api.example.com/v1"
    )
    model = models.CharField(max_length=200)
    # The NAME of the environment variable holding the API key (ASSAY_SECRET_...), never the key; empty
    # for an endpoint without a key (a local server).
    api_key_env = models.CharField(max_length=100, blank=True)
    temperature = models.FloatField(default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)])
    # Requests in flight per chunk, capped as a search target's are (the harness's limit, which the demo's
    # servers size their listen backlog for: demo/serving.py).
    concurrency = models.PositiveIntegerField(
        default=4, validators=[MinValueValidator(1), MaxValueValidator(MAX_CONCURRENCY)]
    )
    text_budget = models.PositiveIntegerField(
        default=4000, validators=[MinValueValidator(200)], help_text="characters of document text in a prompt"
    )
    instructions = models.TextField()
    structured = models.BooleanField(default=True, help_text="send response_format json_schema")
    # The demo's deterministic stand-in (demo/judge_service.py), labeled so wherever the judge is shown.
    stand_in = models.BooleanField(default=False)
    config_hash = models.CharField(max_length=64, editable=False)
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["golden_set", "config_hash"], name="judge_set_config_unique"),
        ]
        ordering = ["golden_set", "-created", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"


class JudgeJob(models.Model):
    """One judging job: its pairs are `JudgeJobItem` rows, judged in chunks one after another."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        CANCELLED = "cancelled"
        FAILED = "failed"

    FINAL = frozenset({Status.SUCCEEDED, Status.CANCELLED, Status.FAILED})

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="jobs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    chunk_size = models.PositiveIntegerField(default=20)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    cached = models.PositiveIntegerField(default=0, help_text="pairs answered from the cache, not paid again")
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    elapsed_ms = models.PositiveBigIntegerField(default=0, help_text="summed over the job's chunks")
    message = models.TextField(blank=True)
    # The chunk at work holds the job (`holder`, a token per delivery) and renews `heartbeat_at` while it
    # works; a running job whose heartbeat stopped lost its worker, and the sweeper sends its chunks again.
    holder = models.CharField(max_length=32, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"job {self.pk} of {self.judge_id} ({self.status})"


class JudgeAnswer(models.Model):
    """The cache: a model's answer to one prompt for one content of a query and a document, paid once.
    Only answers are kept (a grade, or an answer that broke the contract); a call that got no answer
    (an HTTP error, a timeout) is not, so it is tried again by a later job."""

    model = models.CharField(max_length=200)
    prompt_hash = models.CharField(max_length=64)
    query_hash = models.CharField(max_length=64)
    document_hash = models.CharField(max_length=64)
    grade = models.IntegerField(null=True, blank=True)
    reason = models.TextField(blank=True)
    error = models.TextField(blank=True, help_text="why the answer is not a grade, with what was seen")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    job = models.ForeignKey(
        JudgeJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="answers"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["model", "prompt_hash", "query_hash", "document_hash"], name="judge_answer_key_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model}: {self.grade if self.grade is not None else 'error'}"


class JudgeJobItem(models.Model):
    """One pair of a job, in the job's order (`index`: chunks are index ranges). `done` once it has an
    answer (from the cache or paid) or a failure; a redelivered chunk skips done items."""

    job = models.ForeignKey(JudgeJob, on_delete=models.CASCADE, related_name="items")
    index = models.PositiveIntegerField()
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    done = models.BooleanField(default=False)
    answer = models.ForeignKey(
        JudgeAnswer, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    cached = models.BooleanField(default=False)
    failure = models.TextField(blank=True, help_text="no answer came: HTTP error, timeout after retries")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "index"], name="judge_job_item_index_unique"),
        ]
        ordering = ["job", "index"]

    def __str__(self) -> str:
        return f"job {self.job_id} #{self.index}: {self.query_id}/{self.document_id}"


class JudgeLabel(models.Model):
    """A judge's current grade for (query, document), with its reason and the document's content hash
    when graded. It counts only once the judge is qualified for the query, on the document it graded
    (`labeling.selectors.judge_scope`; docs/judge.md, "What a qualified judge does")."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="labels")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="judge_labels")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="judge_labels")
    grade = models.IntegerField()
    reason = models.TextField(blank=True)
    content_hash = models.CharField(max_length=64)
    job = models.ForeignKey(JudgeJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="labels")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "query", "document"], name="judge_label_judge_query_document_unique"
            ),
        ]
        ordering = ["judge", "query", "document"]

    def __str__(self) -> str:
        return f"{self.judge_id}: {self.query_id}/{self.document_id}={self.grade}"


class JudgeQualification(models.Model):
    """A reviewer's decision that a judge's grades may count within a scope of its set (strata and locales;
    empty lists mean every one), with the figures and the bar it was decided on (docs/judge-qualification.md).

    Only an `active` row lets labels count (`labeling.selectors.judge_scope`). The drift watch suspends it
    when the judge's running agreement with later human grades falls below `bar` in its scope; a reviewer
    may withdraw it. Rows are never deleted: they are the record of who let a machine's grades count, when
    and why."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        SUSPENDED = "suspended"
        WITHDRAWN = "withdrawn"

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="qualifications")
    strata = models.JSONField(default=list, blank=True, help_text="empty: every stratum")
    locales = models.JSONField(default=list, blank=True, help_text="empty: every locale")
    rationale = models.TextField()
    bar = models.FloatField(help_text="the quadratic kappa the judge had to reach, and must keep")
    figures = models.JSONField(default=dict, blank=True, help_text="the figures the decision was made on")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_reason = models.TextField(blank=True, help_text="why it was suspended or withdrawn")

    class Meta:
        ordering = ["judge", "-at", "-id"]
        indexes = [models.Index(fields=["judge", "status"], name="judge_qualification_status")]

    def __str__(self) -> str:
        return f"{self.judge_id}: {self.status} since {self.at:%Y-%m-%d}"

    def covers(self, stratum: str, locale: str) -> bool:
        """Whether a query of this stratum and locale is in the scope."""
        return (not self.strata or stratum in self.strata) and (not self.locales or locale in self.locales)
