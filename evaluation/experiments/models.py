"""Experiments: a parameter sweep of one target on one golden version, run on the Celery workers
(docs/experiments.md, "In the app"). Imported by the registry, `evaluation/models.py`, so Django finds
these models in the `evaluation` app.

An experiment is searched in chunks of (configurations, queries), each leased as a run's chunk is
(`ExperimentChunk`, a `LeasedChunk` as `ChunkLease` is: one claim, renewal and sweep), and each answer is one
`ExperimentResult`, unique per (experiment, slot, query): a chunk delivered twice, or sent again after
its worker was lost, writes each answer once. Slot 0 is the baseline (the target's own parameters),
slot i the grid's i-th configuration.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from assay.display import params_text
from evaluation.runs.models import LeasedChunk, Progress


class Experiment(Progress, models.Model):
    """A sweep of a target's parameters over a grid, chosen on the tuning part of a golden version and
    confirmed on its held-out part (`assay.experiment`, the code `assay sweep` runs)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Phase(models.TextChoices):
        TUNING = "tuning", "searching the tuning queries"
        HOLDOUT = "holdout", "confirming on the held-out queries"
        DONE = "done", "done"

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    golden_version = models.ForeignKey(
        "golden_io.GoldenVersion", on_delete=models.PROTECT, related_name="experiments"
    )
    target = models.ForeignKey(
        "evaluation.SearchTarget", on_delete=models.PROTECT, related_name="experiments"
    )
    # The target as called (TargetSpec.to_dict()): editing the target meanwhile changes nothing here.
    target_snapshot = models.JSONField(default=dict)
    grid = models.JSONField(help_text='the grid as given: {"params": {...}} or {"configs": [...]}')
    configs = models.JSONField(default=list, help_text="the configurations, in grid order (slot 1 first)")
    fraction = models.FloatField(default=0.7, help_text="share of each stratum's queries that tune")
    seed = models.IntegerField(default=0)
    top = models.PositiveIntegerField(default=3, help_text="configurations confirmed on the held-out part")
    metric = models.CharField(max_length=20, default="ndcg")
    alpha = models.FloatField(
        default=0.05, help_text="a winner's Holm-adjusted p-value is below it (docs/experiments.md)"
    )
    coverage_margin = models.FloatField(
        default=0.05, help_text="warn when the best's judged@k is below the baseline's by more than this"
    )
    split = models.JSONField(default=dict, help_text="assay.experiment.Split.to_dict()")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.TUNING)
    # Filled as the tuning phase ends: each slot's values there (the baseline first) and the ranking.
    tuning = models.JSONField(default=list, blank=True)
    ranking = models.JSONField(default=list, blank=True, help_text="grid indices, best tuning value first")
    result = models.JSONField(null=True, blank=True, help_text="SWEEP.json's content")
    total = models.PositiveIntegerField(default=0, help_text="searches asked for, both phases")
    done = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    sent = models.PositiveIntegerField(default=0, help_text="requests sent (identical ones once per chunk)")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="experiments"
    )
    error_message = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    start_resent_at = models.DateTimeField(null=True, blank=True)
    redispatches = models.PositiveIntegerField(default=0, help_text="times the sweeper re-sent missing work")

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="experiment_status_heartbeat")]
        constraints = [
            models.CheckConstraint(
                condition=Q(done__lte=models.F("total")), name="experiment_done_lte_total"
            ),
        ]

    def __str__(self) -> str:
        return f"experiment {self.pk} of {self.golden_version_id} on {self.target_id} ({self.status})"

    @property
    def fixed_params(self) -> dict[str, Any]:
        """What the baseline sends: the target's params and stage toggles as the experiment called it."""
        snapshot = self.target_snapshot or {}
        return {**(snapshot.get("params") or {}), **(snapshot.get("stages") or {})}

    @property
    def size_text(self) -> str:
        """`5 x 4 = 20 configurations` for a grid of lists, `3 configurations` for a list."""
        params = self.grid.get("params") if isinstance(self.grid, dict) else None
        count = len(self.configs)
        if isinstance(params, dict) and len(params) > 1:
            return " x ".join(str(len(v)) for v in params.values()) + f" = {count} configurations"
        return f"{count} configuration{'s' if count != 1 else ''}"


class ExperimentChunk(LeasedChunk):
    """One chunk of an experiment's work (its `slots` x `query_ids`) and its lease, held as a run's chunk
    holds its own (`LeasedChunk`: waiting, held and renewed, finished; `evaluation.runs.services.leases`),
    swept by the experiments' sweeper when it runs out."""

    OWNER = "experiment_id"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="chunks")
    phase = models.CharField(max_length=10, choices=Experiment.Phase.choices)
    slots = models.JSONField(default=list, help_text="0 the baseline, i the grid's i-th configuration")

    class Meta:
        constraints = [LeasedChunk.one_per_index("experiment", name="experiment_chunk_index_unique")]
        indexes = [LeasedChunk.open_by_expiry(name="experiment_chunk_open")]
        ordering = ["experiment", "index"]

    @property
    def work_text(self) -> str:
        return f"{len(self.slots)} configurations x {len(self.query_ids)} queries"


class ExperimentResult(models.Model):
    """What the engine returned for one query in one configuration (slot) of an experiment."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="results")
    slot = models.PositiveIntegerField()
    query_id = models.CharField(max_length=200)
    ids = models.JSONField(default=list, blank=True)
    titles = models.JSONField(default=list, blank=True)
    error = models.TextField(null=True, blank=True)  # noqa: DJ001  (None = answered)
    http_status = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "slot", "query_id"], name="experiment_result_unique"
            ),
        ]
        ordering = ["experiment", "slot", "id"]

    def __str__(self) -> str:
        return f"{self.experiment_id}/{self.slot}/{self.query_id}"


class ExperimentRescore(models.Model):
    """An experiment's stored answers scored again on a newer golden version of its set (once its gaps
    are labeled), without searching: the figures after, kept beside the experiment's own `result`
    (docs/experiments.md, "Coverage"). One per (experiment, golden version)."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="rescores")
    golden_version = models.ForeignKey("golden_io.GoldenVersion", on_delete=models.PROTECT, related_name="+")
    result = models.JSONField(help_text="the result as the experiment's, on the newer version's labels")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "golden_version"], name="experiment_rescore_unique"
            ),
        ]
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"experiment {self.experiment_id} re-scored on {self.golden_version_id}"


class ExperimentAdoption(models.Model):
    """**Use this configuration**: a configuration of an experiment that beat the baseline saved on its
    target, by whom, when and why, with the target's params before and after and the full run it started
    (which becomes the baseline only through the usual review, docs/runs.md); and, once reverted, who
    reverted it, when and why, and the runs that sent the adopted params (docs/experiments.md, "Revert").

    `params_before` and `params_after` are what the target sends (params and stage toggles together);
    `stages_before` and `stages_after` say which of those names are stage toggles, so a revert writes
    the target's params and stages back exactly as they were."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="adoptions")
    target = models.ForeignKey("evaluation.SearchTarget", on_delete=models.CASCADE, related_name="adoptions")
    configuration = models.JSONField(default=dict, help_text="the configuration's own grid values")
    rank = models.PositiveIntegerField(null=True, blank=True, help_text="its tuning rank in the experiment")
    params_before = models.JSONField(default=dict)
    params_after = models.JSONField(default=dict)
    stages_before = models.JSONField(default=dict, help_text="the target's stage toggles before")
    stages_after = models.JSONField(default=dict, help_text="the target's stage toggles after")
    rationale = models.TextField()
    adopted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    adopted_at = models.DateTimeField(auto_now_add=True)
    run = models.ForeignKey(
        "evaluation.EvaluationRun",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="adoptions",
        help_text="the confirming run it started",
    )
    reverted_at = models.DateTimeField(null=True, blank=True)
    reverted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    revert_reason = models.TextField(blank=True)
    revert_runs = models.JSONField(
        default=list, blank=True, help_text="the runs that sent the adopted params, as the revert found them"
    )

    class Meta:
        ordering = ["-adopted_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(reverted_at__isnull=True, reverted_by__isnull=True)
                | Q(reverted_at__isnull=False, reverted_by__isnull=False),
                name="adoption_reverted_by_whom",
            ),
        ]

    def __str__(self) -> str:
        return f"experiment {self.experiment_id} adopted on {self.target_id}"

    @property
    def stands(self) -> bool:
        """Not reverted: the target was set to send `params_after` (unless edited since)."""
        return self.reverted_at is None

    @property
    def params_text(self) -> str:
        return params_text(self.params_after)

    @property
    def before_text(self) -> str:
        return params_text(self.params_before)

    @property
    def configuration_text(self) -> str:
        """`rank 2: title_weight=3 min_should_match=1` (the rank left out for a record made before ranks
        were kept)."""
        values = params_text(self.configuration)
        return f"rank {self.rank}: {values}" if self.rank is not None else values

    def target_fields(self, *, before: bool) -> dict[str, dict[str, Any]]:
        """The target's `params` and `stages` as they were before the adoption (or after it)."""
        sent, stages = (
            (self.params_before, self.stages_before) if before else (self.params_after, self.stages_after)
        )
        return {
            "params": {k: v for k, v in sent.items() if k not in stages},
            "stages": dict(stages),
        }
