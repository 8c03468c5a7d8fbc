"""What /metrics shows that the database and the broker know, read at each scrape (docs/deployment.md,
"Metrics"): the same answer from every web process, however many web processes and workers there are and
whichever of them did the work. The judge calls a worker made are the only figures counted in the
process (labeling/judge_metrics.py).

`METRICS` is the one list of the families read here, with their help text; docs/deployment.md's table
lists the same names (tests/config/test_metrics.py holds the two together).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, DurationField, ExpressionWrapper, F, Min, Model, Q, Sum
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from config.broker_state import broker
from evaluation.experiments.models import Experiment, ExperimentChunk
from evaluation.runs.models import ChunkLease, EvaluationRun
from evaluation.studies.models import StudyTask
from labeling.models import JudgeJob, JudgmentEvent

logger = logging.getLogger(__name__)

Run = EvaluationRun.Status

# name -> (type, help). The label names are the families' own, below.
METRICS: dict[str, tuple[str, str]] = {
    "assay_scrape_ok": ("gauge", "1 when this part of the scrape could be read (database, broker), else 0"),
    "assay_runs": ("gauge", "Evaluation runs by status"),
    "assay_run_phase_seconds": (
        "histogram",
        "Seconds finished runs (succeeded or failed) spent in each phase: queued (created to started), "
        "running (started to finalizing), finalizing (to finished), total (created to finished)",
    ),
    "assay_run_oldest_seconds": (
        "gauge",
        "Age of the oldest active run in each active status, since it entered that status (0: none)",
    ),
    "assay_run_queries": ("gauge", "Queries of each active run: total, done and errors"),
    "assay_chunks": (
        "gauge",
        "Unfinished chunks of runs and experiments: waiting (sent, not claimed), leased (held by a live "
        "worker), expired (the lease ran out: the sweeper sends it again)",
    ),
    "assay_chunk_losses": ("counter", "Times a chunk's lease ran out and the sweeper sent it again"),
    "assay_experiments": ("gauge", "Experiments (parameter sweeps) by status"),
    "assay_experiment_searches": ("gauge", "Searches of each active experiment: total, done and errors"),
    "assay_study_tasks": (
        "gauge",
        "Side-by-side study tasks (one rater, one query) of each study with open tasks: answered and open",
    ),
    "assay_judge_jobs": ("gauge", "Judge jobs by status"),
    "assay_judge_job_pairs": ("gauge", "Pairs of each running judge job: total, done and errors"),
    "assay_grade_saves_per_minute": (
        "gauge",
        "Grades and can't-judge marks saved (judgment events, undos included) in the last 60 seconds",
    ),
    "assay_celery_queue_messages": ("gauge", "Messages waiting in each Celery queue"),
    "assay_celery_unacked_messages": (
        "gauge",
        "Messages a worker took and has not acknowledged yet (Redis only)",
    ),
    "assay_workers_up": ("gauge", "Celery workers whose heartbeat is recent"),
    "assay_worker_heartbeat_age_seconds": ("gauge", "Seconds since each up worker's last heartbeat"),
}

# Seconds: a run of the demo takes one or two, a large set's run an hour.
PHASE_BUCKETS = (1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0)
# Each phase of a run: the timestamps it runs between.
PHASES = {
    "queued": ("created", "started_at"),
    "running": ("started_at", "finalizing_at"),
    "finalizing": ("finalizing_at", "finished_at"),
    "total": ("created", "finished_at"),
}
# What an active run, experiment or judge job has done: its rows' columns of these names.
STATES = ("total", "done", "errors")
# Where an active run's time in its status starts.
ENTERED = {Run.QUEUED: "created", Run.RUNNING: "started_at", Run.FINALIZING: "finalizing_at"}


def _family(name: str, labels: Iterable[str] = ()) -> Any:
    kind, documentation = METRICS[name]
    make = {"gauge": GaugeMetricFamily, "counter": CounterMetricFamily, "histogram": HistogramMetricFamily}
    return make[kind](name, documentation, labels=list(labels))


def _by(model: type[Model], field: str, values: Iterable[str], name: str, label: str) -> Metric:
    """One gauge of rows by the value of `field`, every value shown (0 when none)."""
    counts = dict.fromkeys(values, 0)
    for row in model._default_manager.order_by().values(field).annotate(n=Count("pk")):
        counts[row[field]] = row["n"]
    family = _family(name, [label])
    for value, n in counts.items():
        family.add_metric([value], n)
    return family


def _progress(name: str, owner: str, rows: Iterable[dict[str, Any]], states: Iterable[str]) -> Metric:
    """One gauge per (active object, state): each row holds the object's id under `owner`."""
    family = _family(name, [owner, "state"])
    for row in rows:
        for state in states:
            family.add_metric([str(row[owner]), state], row[state])
    return family


def _seconds(start: str, end: str) -> ExpressionWrapper:
    return ExpressionWrapper(F(end) - F(start), output_field=DurationField())


def runs(now: datetime) -> Iterator[Metric]:
    yield _by(EvaluationRun, "status", Run.values, "assay_runs", "status")

    finished = EvaluationRun.objects.filter(status__in=[Run.SUCCEEDED, Run.FAILED]).order_by()
    phases = _family("assay_run_phase_seconds", ["phase"])
    for phase, (start, end) in PHASES.items():
        figures = finished.annotate(took=_seconds(start, end)).aggregate(
            count=Count("took"),
            total=Sum("took"),
            **{
                f"le_{i}": Count("pk", filter=Q(took__lte=timedelta(seconds=bound)))
                for i, bound in enumerate(PHASE_BUCKETS)
            },
        )
        buckets = [(floatToGoString(bound), figures[f"le_{i}"]) for i, bound in enumerate(PHASE_BUCKETS)]
        total = figures["total"] or timedelta(0)
        phases.add_metric([phase], [*buckets, ("+Inf", figures["count"])], total.total_seconds())
    yield phases

    oldest = _family("assay_run_oldest_seconds", ["status"])
    for status, since in ENTERED.items():
        first = EvaluationRun.objects.filter(status=status).order_by().aggregate(first=Min(since))["first"]
        oldest.add_metric([status], max((now - first).total_seconds(), 0.0) if first else 0.0)
    yield oldest

    active = EvaluationRun.objects.filter(status__in=EvaluationRun.ACTIVE).order_by("pk")
    yield _progress("assay_run_queries", "run", active.values(*STATES, run=F("pk")), STATES)


def chunks(now: datetime) -> Iterator[Metric]:
    """A run's and an experiment's chunks are leased alike (evaluation/runs/services/leases.py)."""
    states = _family("assay_chunks", ["owner", "state"])
    losses = _family("assay_chunk_losses", ["owner"])
    for owner, model in (("run", ChunkLease), ("experiment", ExperimentChunk)):
        figures = model._default_manager.order_by().aggregate(
            waiting=Count("pk", filter=Q(finished_at__isnull=True, expires_at__isnull=True)),
            leased=Count("pk", filter=Q(finished_at__isnull=True, expires_at__gt=now)),
            expired=Count("pk", filter=Q(finished_at__isnull=True, expires_at__lte=now)),
            losses=Sum("losses"),
        )
        for state in ("waiting", "leased", "expired"):
            states.add_metric([owner, state], figures[state])
        losses.add_metric([owner], figures["losses"] or 0)
    yield states
    yield losses


def experiments(now: datetime) -> Iterator[Metric]:
    yield _by(Experiment, "status", Experiment.Status.values, "assay_experiments", "status")
    active = Experiment.objects.filter(status__in=Experiment.ACTIVE).order_by("pk")
    rows = active.values(*STATES, experiment=F("pk"))
    yield _progress("assay_experiment_searches", "experiment", rows, STATES)


def studies(now: datetime) -> Iterator[Metric]:
    rows = (
        StudyTask.objects.order_by("study_id")
        .values("study_id")
        .annotate(
            n_answered=Count("pk", filter=Q(answered_at__isnull=False)),
            n_open=Count("pk", filter=Q(answered_at__isnull=True)),
        )
        .filter(n_open__gt=0)
    )
    named = ({"study": row["study_id"], "answered": row["n_answered"], "open": row["n_open"]} for row in rows)
    yield _progress("assay_study_tasks", "study", named, ("answered", "open"))


def judges(now: datetime) -> Iterator[Metric]:
    yield _by(JudgeJob, "status", JudgeJob.Status.values, "assay_judge_jobs", "status")
    running = JudgeJob.objects.filter(status=JudgeJob.Status.RUNNING).order_by("pk")
    yield _progress("assay_judge_job_pairs", "job", running.values(*STATES, job=F("pk")), STATES)


def grading(now: datetime) -> Iterator[Metric]:
    saves = JudgmentEvent.objects.filter(at__gt=now - timedelta(seconds=60)).count()
    family = _family("assay_grade_saves_per_minute")
    family.add_metric([], saves)
    yield family


def broker_metrics(now: datetime) -> Iterator[Metric]:
    from config.celery import app

    found = broker()
    if found is None:
        return
    state = found.state(sorted(app.amqp.queues))
    queues = _family("assay_celery_queue_messages", ["queue"])
    for queue, depth in state.queues.items():
        queues.add_metric([queue], depth)
    yield queues
    if state.unacked is not None:
        unacked = _family("assay_celery_unacked_messages")
        unacked.add_metric([], state.unacked)
        yield unacked
    up = _family("assay_workers_up")
    up.add_metric([], len(state.heartbeats))
    yield up
    ages = _family("assay_worker_heartbeat_age_seconds", ["worker"])
    for worker, beat in sorted(state.heartbeats.items()):
        ages.add_metric([worker], max(now.timestamp() - beat, 0.0))
    yield ages


# The parts of a scrape; a part that cannot be read (the database or the broker down) is left out and
# said so in assay_scrape_ok, and the rest still answers.
PARTS: dict[str, list[Callable[[datetime], Iterator[Metric]]]] = {
    "database": [runs, chunks, experiments, studies, judges, grading],
    "broker": [broker_metrics],
}


class AssayCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        ok = _family("assay_scrape_ok", ["part"])
        for part, readers in PARTS.items():
            try:
                families = [family for read in readers for family in read(now)]
            except Exception:
                logger.exception("metrics: the %s could not be read", part)
                ok.add_metric([part], 0)
                continue
            ok.add_metric([part], 1)
            yield from families
        yield ok
