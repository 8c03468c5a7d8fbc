"""Search targets, evaluation runs and their per-query results, baselines, budgets and nightly schedules.

Single-row behaviour only: writes that span rows are in `evaluation.runs.services`, reads in
`evaluation.runs.selectors`, the Celery side in `evaluation.runs.tasks`. The run row is the unit of
idempotency: tasks claim work with conditional updates on its `status`, and `QueryRunResult` is unique per
(run, query), so a chunk delivered twice writes each query once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from assay.adapters import ADAPTER_CHOICES, ADAPTER_NAMES, DEFAULT_ADAPTER
from assay.display import params_text, run_label
from assay.targets import TargetSpec, target_spec
from evaluation.fields import LargeJSONField


class SearchTarget(models.Model):
    """One search system to evaluate. Header secrets are env var names (`{"env": "VAR"}`), never values."""

    # Unique among the targets of each golden set, not site-wide
    # (evaluation.runs.services.target_name_problems).
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    # The choices are assay.adapters' registry (ADAPTERS), written there once.
    adapter = models.CharField(max_length=20, choices=ADAPTER_CHOICES, default=DEFAULT_ADAPTER)
    url = models.CharField(max_length=1000, help_text="search endpoint, index URL or Solr core URL")
    headers = models.JSONField(
        default=dict, blank=True, help_text='name -> value, or {"env": "VARIABLE"} for secrets'
    )
    params = models.JSONField(default=dict, blank=True, help_text="engine parameters sent on every call")
    stages = models.JSONField(
        default=dict, blank=True, help_text='stage toggles sent like params, e.g. {"rewrite": false}'
    )
    cache_bypass_header = models.CharField(
        max_length=300, blank=True, help_text="'Name: value' sent on every call, e.g. Cache-Control: no-cache"
    )
    timeout = models.FloatField(default=10.0, validators=[MinValueValidator(0.001)], help_text="seconds")
    concurrency = models.PositiveIntegerField(
        default=8, validators=[MinValueValidator(1)], help_text="requests in flight per chunk task"
    )
    retries = models.PositiveIntegerField(default=3, help_text="retries of transient failures")
    rate_limit = models.FloatField(
        null=True, blank=True, help_text="requests per second over the whole run (empty: unlimited)"
    )
    generation_header = models.CharField(max_length=100, blank=True)
    generation_field = models.CharField(max_length=200, blank=True, help_text="dotted path in the reply body")
    model_id_header = models.CharField(max_length=100, blank=True)
    model_id_field = models.CharField(max_length=200, blank=True)
    es_template = models.JSONField(null=True, blank=True, help_text="elasticsearch/opensearch query template")
    solr_method = models.CharField(max_length=4, choices=[("GET", "GET"), ("POST", "POST")], default="GET")
    # A Slack-compatible webhook told of failing and warning runs: the NAME of the ASSAY_SECRET_...
    # environment variable holding its URL (the URL itself is a secret and is never stored).
    webhook_env = models.CharField(max_length=100, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="targets"
    )
    golden_sets = models.ManyToManyField(
        "labeling.GoldenSet", blank=True, related_name="targets", help_text="the sets evaluated on it"
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(adapter__in=ADAPTER_NAMES), name="search_target_adapter_known"
            ),
        ]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def spec(self) -> TargetSpec:
        return target_spec(self)


class Progress:
    """How a run and an experiment say where they are: active (`ACTIVE`: queued or running) until a final
    status (`FINAL`), and the share of their work done (`done` of `total`)."""

    ACTIVE: ClassVar[tuple[str, ...]]
    FINAL: ClassVar[tuple[str, ...]]
    if TYPE_CHECKING:
        status: str
        done: int
        total: int

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else (100.0 if self.status in self.FINAL else 0.0)


class EvaluationRun(Progress, models.Model):
    """A golden version evaluated against a target with given params: one row, many QueryRunResults."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        FINALIZING = "finalizing"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Verdict(models.TextChoices):
        PASS = "pass"  # noqa: S105  (a verdict, not a password)
        WARN = "warn"
        FAIL = "fail"
        NONE = "none", "none (not gated yet)"

    class Trigger(models.TextChoices):
        WEB = "web", "web"
        API = "api", "api"
        CI = "ci", "ci"
        SCHEDULE = "schedule", "schedule"
        # `make run`'s demo story: its runs name the command that started them, not the web page.
        DEMO = "demo", "manage.py demo_runs"

    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.FINALIZING)
    FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
    # What `label` reads: `.select_related("target").only(*LABEL_FIELDS)` names runs in one light query.
    LABEL_FIELDS = ("pk", "target", "target__name", "effective_params", "target_snapshot")

    golden_version = models.ForeignKey(
        "golden_io.GoldenVersion", on_delete=models.PROTECT, related_name="evaluation_runs"
    )
    target = models.ForeignKey(SearchTarget, on_delete=models.PROTECT, related_name="runs")
    # The target as called (TargetSpec.to_dict(), secrets as env var names) and the run's param overrides.
    target_snapshot = models.JSONField(default=dict)
    params = models.JSONField(default=dict, blank=True, help_text="overrides on top of the target's")
    effective_params = models.JSONField(default=dict, blank=True, help_text="what the engine was sent")
    rebaseline = models.BooleanField(
        default=False, help_text="gate as a rebaseline: identity differences are accepted, not refused"
    )
    rescore_baseline = models.BooleanField(
        default=False,
        help_text="when the baseline is on another golden version, gate against its stored lists re-scored "
        "on this run's version instead of refusing to compare",
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    # Durable key -> live doc id as read at the start, so the report scores against one consistent map.
    key_map = LargeJSONField(default=dict, blank=True)
    keys = models.JSONField(default=dict, blank=True, help_text="ResolvedGolden.to_dict(): unresolved keys")
    # The report and the gate: tens of megabytes on a large set, written and read whole (LargeJSONField).
    report = LargeJSONField(null=True, blank=True)
    verdict = models.CharField(max_length=4, choices=Verdict.choices, default=Verdict.NONE)
    gate = LargeJSONField(null=True, blank=True)
    baseline = models.ForeignKey(
        "Baseline", on_delete=models.SET_NULL, null=True, blank=True, related_name="gated_runs"
    )
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.WEB)
    triggered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    schedule = models.ForeignKey(
        "RunSchedule", on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    error_message = models.TextField(blank=True)
    # The baseline as gated when the golden versions differed: its stored result lists re-scored against
    # this run's golden version (None: the baseline run's own report was used).
    baseline_rescore = models.ForeignKey(
        "BaselineRescore", on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    created = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="last progress written by a chunk")
    finalizing_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    redispatches = models.PositiveIntegerField(default=0, help_text="times the sweeper re-sent missing work")
    start_resent_at = models.DateTimeField(
        null=True, blank=True, help_text="when the sweeper last re-sent the start of this queued run"
    )

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [
            models.Index(fields=["status", "heartbeat_at"], name="run_status_heartbeat"),
            models.Index(fields=["target", "golden_version", "-created"], name="run_target_version"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(done__lte=models.F("total")), name="run_done_lte_total"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.golden_version_id} on {self.target_id} ({self.status})"

    @property
    def overrides_text(self) -> str:
        return params_text(self.params)

    @property
    def label(self) -> str:
        """The run as every page, notification and API reply names it: `run 4 demo-search-msm1
        (min_should_match=1)`, what it sent (`effective_params`) that differs from its target's defaults
        (`assay.display.run_label`; the target's stage toggles as its snapshot recorded them)."""
        stages = (self.target_snapshot or {}).get("stages")
        return run_label(self.pk, self.target.name, self.effective_params, stages)

    @property
    def triggered_by_label(self) -> str:
        """Who or what started it: a username and how ("rita (web)"), or how alone ("schedule")."""
        how = self.get_trigger_display()
        if self.triggered_by_id is not None and self.triggered_by is not None:
            return f"{self.triggered_by.get_username()} ({how})"
        return how


class QueryRunResult(models.Model):
    """What the engine returned for one golden query in one run; written once per (run, query)."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    query_id = models.CharField(max_length=200, help_text="the golden query's external id")
    ids = models.JSONField(default=list, blank=True)
    titles = models.JSONField(default=list, blank=True)
    error = models.TextField(null=True, blank=True)  # noqa: DJ001  (None = answered; "" is not an error)
    http_status = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=1)
    index_generation = models.CharField(max_length=200, blank=True)
    model_id = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "query_id"], name="query_run_result_run_query_unique"),
        ]
        ordering = ["run", "id"]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.query_id}"

    @property
    def ok(self) -> bool:
        return self.error is None


class LeasedChunk(models.Model):
    """One chunk of work and the delivery of its task that is working on it: the lease a run's chunk
    (`ChunkLease`) and an experiment's (`ExperimentChunk`, evaluation/experiments/models.py) hold alike,
    claimed, renewed, finished and swept by one piece of code (`evaluation.runs.services.leases`). The task
    claims the lease when it starts and renews `expires_at` while it works; a lease that runs out means its
    worker was lost, and the sweeper sends the chunk again (docs/runs.md, "Worker loss").

    States: waiting (`expires_at` null: a message for it is in the broker or on its way), held
    (`expires_at` set, renewed by `holder`), finished (`finished_at` set: its task finished, or its queries
    were handed to newer chunks). A delivery that finds the lease finished or held by a live holder does
    nothing, so a chunk sent twice is searched once.

    A concrete lease names its owner: a foreign key, and `OWNER`, the key's column (`run_id`)."""

    OWNER: ClassVar[str]

    index = models.PositiveIntegerField(help_text="the chunk's number within its run or experiment, from 0")
    query_ids = models.JSONField(default=list)
    holder = models.CharField(max_length=32, blank=True, help_text="the delivery holding the lease")
    worker = models.CharField(max_length=200, blank=True, help_text="the worker that claimed it last")
    claimed_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    losses = models.PositiveIntegerField(default=0, help_text="times its lease ran out and it was sent again")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.OWNER.removesuffix('_id')} {self.owner_id} chunk {self.index}"

    @staticmethod
    def one_per_index(owner: str, *, name: str) -> models.UniqueConstraint:
        """A concrete lease's constraint: one chunk per (owner, index)."""
        return models.UniqueConstraint(fields=[owner, "index"], name=name)

    @staticmethod
    def open_by_expiry(*, name: str) -> models.Index:
        """A concrete lease's index: the open chunks by expiry, what the sweeper reads."""
        return models.Index(fields=["expires_at"], name=name, condition=Q(finished_at__isnull=True))

    @property
    def owner_id(self) -> int:
        return int(getattr(self, self.OWNER))

    @property
    def work_text(self) -> str:
        """What the chunk searches, in words (the sweeper's message when its worker is lost too often)."""
        return f"{len(self.query_ids)} queries"


class ChunkLease(LeasedChunk):
    """One chunk of a run's queries and its lease (`LeasedChunk`)."""

    OWNER = "run_id"

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="chunk_leases")

    class Meta:
        constraints = [LeasedChunk.one_per_index("run", name="chunk_lease_run_index_unique")]
        indexes = [LeasedChunk.open_by_expiry(name="chunk_lease_open_expiry")]
        ordering = ["run", "index"]


class Baseline(models.Model):
    """A run a reviewer approved as the floor for (golden set, target). A promotion adds a row: the
    newest is in force, the older rows are the history."""

    golden_set = models.ForeignKey("labeling.GoldenSet", on_delete=models.CASCADE, related_name="baselines")
    target = models.ForeignKey(SearchTarget, on_delete=models.CASCADE, related_name="baselines")
    run = models.ForeignKey(EvaluationRun, on_delete=models.PROTECT, related_name="baselines")
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    rationale = models.TextField()
    approved_at = models.DateTimeField(auto_now_add=True)
    previous = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # Filled by the rebaseline workflow: where baseline/relevance.json and RELEVANCE_NOTES.md were written.
    git_branch = models.CharField(max_length=300, blank=True)
    git_commit = models.CharField(max_length=40, blank=True)
    git_message = models.TextField(blank=True)
    git_pushed = models.BooleanField(default=False)
    git_push_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-approved_at", "-id"]
        get_latest_by = ["approved_at", "id"]
        indexes = [models.Index(fields=["golden_set", "target", "-approved_at"], name="baseline_current")]

    def __str__(self) -> str:
        return f"baseline of {self.golden_set_id} on {self.target_id}: run {self.run_id}"


class BudgetSet(models.Model):
    """A golden set's gate budgets, in the `assay.drift` budgets format (validated by load_budgets)."""

    golden_set = models.OneToOneField("labeling.GoldenSet", on_delete=models.CASCADE, related_name="budgets")
    data = models.JSONField(default=dict)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"budgets of {self.golden_set_id}"


class RunSchedule(models.Model):
    """A nightly run of (golden set, target) on the set's newest golden version, at hour:minute UTC."""

    golden_set = models.ForeignKey(
        "labeling.GoldenSet", on_delete=models.CASCADE, related_name="run_schedules"
    )
    target = models.ForeignKey(SearchTarget, on_delete=models.CASCADE, related_name="schedules")
    enabled = models.BooleanField(default=True)
    hour = models.PositiveSmallIntegerField(default=2, validators=[MaxValueValidator(23)])
    minute = models.PositiveSmallIntegerField(default=0, validators=[MaxValueValidator(59)])
    params = models.JSONField(default=dict, blank=True)
    # The day (UTC) it last claimed: a schedule makes at most one attempt a day, started or refused.
    last_run_on = models.DateField(null=True, blank=True)
    # Why the last attempt did not start a run (run_create's problems, or no golden version yet); cleared
    # when a run starts. Without it a refused night would only be in the worker's log.
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    # When the set's newest golden version differs from the baseline's, gate against the baseline's
    # result lists re-scored under the new version instead of refusing to compare.
    rescore_baseline = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["golden_set", "target"], name="run_schedule_set_target_unique"),
            models.CheckConstraint(condition=Q(hour__lte=23) & Q(minute__lte=59), name="run_schedule_time"),
        ]
        ordering = ["golden_set", "target"]

    def __str__(self) -> str:
        return f"nightly {self.golden_set_id} on {self.target_id} at {self.hour:02d}:{self.minute:02d} UTC"

    @property
    def overrides_text(self) -> str:
        return params_text(self.params)


class BaselineRescore(models.Model):
    """A baseline run's stored result lists scored against another golden version's labels, so that a run on
    that version compares like with like without querying the old system again. Recorded as such: which
    run, which version, when and by whom (None: a nightly schedule)."""

    source_run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="rescores")
    golden_version = models.ForeignKey(
        "golden_io.GoldenVersion", on_delete=models.PROTECT, related_name="baseline_rescores"
    )
    report = LargeJSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source_run", "golden_version"], name="baseline_rescore_unique"),
        ]
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"run {self.source_run_id} re-scored on version {self.golden_version_id}"


class Notification(models.Model):
    """One delivery of a run's verdict to people: an email to the set's reviewers or a target's webhook.
    Unique per (run, channel), so a run is never announced twice on one channel."""

    class Channel(models.TextChoices):
        EMAIL = "email", "email"
        WEBHOOK = "webhook", "webhook"

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        SENT = "sent", "sent"
        FAILED = "failed", "failed"

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="notifications")
    channel = models.CharField(max_length=10, choices=Channel.choices)
    # Who it went to: the email addresses, or the webhook's variable name (never its URL).
    recipients = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "channel"], name="notification_run_channel_unique"),
        ]
        ordering = ["run", "channel"]

    def __str__(self) -> str:
        return f"{self.channel} for run {self.run_id}: {self.status}"


class ApiToken(models.Model):
    """A bearer token for the REST API. It acts as its user (the same object permissions as the pages)
    within its scopes. Only a SHA-256 of the token is stored: the token is shown once, at creation.

    The token reads `assay_<prefix>_<secret>`; `prefix` finds the row, the hash of the whole string proves
    it. The secret is 256 random bits, so a fast hash is enough (nothing to brute-force from the hash).
    """

    SCOPES = {
        "read": "read everything the user can see: golden sets, versions and their files, search targets, "
        "evaluation runs (status, report, verdict)",
        "golden:read": "read golden sets, their versions and version files only",
        "runs:write": "trigger and cancel evaluation runs and experiments, use an experiment's configuration",
        "studies:write": "create, close and reopen side-by-side studies of runs (docs/sxs.md)",
    }
    # A scope that reads everything holds every narrower reading scope: a token made with `read` must
    # read every resource its user can see, whatever name the endpoint's own scope has.
    IMPLIED = {"read": frozenset({"golden:read"})}

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="what it is for, e.g. 'CI on search-api'")
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    hashed = models.CharField(max_length=64, editable=False, help_text="SHA-256 of the whole token")
    scopes = models.JSONField(default=list)
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True)
    revoked = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.user_id}, assay_{self.prefix}_…)"

    @property
    def active(self) -> bool:
        return self.revoked is None

    def has_scope(self, scope: str) -> bool:
        return scope_held(self.scopes or [], scope)


def scope_held(scopes: Iterable[str], scope: str) -> bool:
    """Whether tokens with `scopes` may use an endpoint asking for `scope` (directly or implied)."""
    return any(held == scope or scope in ApiToken.IMPLIED.get(held, ()) for held in scopes)
