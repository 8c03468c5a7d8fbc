"""Chunk leases: which delivery of a chunk task is working on which chunk of a run. The task claims its
chunk's lease when it starts and renews it while it works, so a lost worker shows as a lease that ran
out within seconds, not as a broker message that comes back after the visibility timeout (an hour).
The sweeper (`evaluation/runs/services/sweep.py`) sends such chunks again (docs/runs.md, "Worker loss")."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError
from django.db.models import F, Max, Model, Q, QuerySet
from django.utils import timezone

from evaluation.runs.models import ChunkLease

# How long a claim or renewal holds a chunk, and how often a working chunk renews it: three renewals
# per lease, so a chunk whose loop stalls for up to 15 s (a slow database round trip) keeps its chunk.
CHUNK_LEASE = timedelta(seconds=20)
LEASE_RENEW_EVERY_S = 5.0


def chunk_leases_create(*, run_id: int, chunks: Sequence[Sequence[str]]) -> list[int]:
    """A waiting lease for each chunk about to be sent, numbered after the run's earlier chunks; returns
    their indices (the chunk tasks' `chunk` argument)."""
    last = ChunkLease.objects.filter(run_id=run_id).aggregate(last=Max("index"))["last"]
    first = 0 if last is None else last + 1
    rows = [ChunkLease(run_id=run_id, index=first + i, query_ids=list(c)) for i, c in enumerate(chunks)]
    ChunkLease.objects.bulk_create(rows)
    return [row.index for row in rows]


@dataclass(frozen=True, slots=True)
class ChunkHold:
    """A claimed lease, as its delivery holds it. Each write is conditional on `holder`: once another
    delivery claimed the chunk (this one's lease ran out), nothing here changes the row.

    `model` and `owner` name the lease table and its owner's column: a run's `ChunkLease` (`run_id`), or
    an experiment's `ExperimentChunk` (`experiment_id`), leased alike (docs/experiments.md)."""

    run_id: int
    index: int
    holder: str
    model: type[Model] = ChunkLease
    owner: str = "run_id"

    def _mine(self) -> QuerySet[Any]:
        return self.model._default_manager.filter(
            **{self.owner: self.run_id}, index=self.index, holder=self.holder, finished_at__isnull=True
        )

    def renew(self, *, now: datetime | None = None) -> bool:
        """Extend the lease; False when this delivery no longer holds it (it should stop: another
        delivery of the chunk has it now)."""
        return self._mine().update(expires_at=(now or timezone.now()) + CHUNK_LEASE) == 1

    def finish(self) -> None:
        """The chunk's task is done with it: later deliveries of the chunk do nothing."""
        self._mine().update(finished_at=timezone.now(), expires_at=None)

    def release(self) -> None:
        """Give the chunk back at once (the task failed before finishing it): the sweeper's next tick
        sends it again. When the database is what failed, the lease simply runs out."""
        with contextlib.suppress(DatabaseError):
            self._mine().update(expires_at=timezone.now())


def chunk_lease_claim(
    *,
    run_id: int,
    index: int,
    worker: str,
    now: datetime | None = None,
    model: type[Model] = ChunkLease,
    owner: str = "run_id",
) -> ChunkHold | None:
    """Claim the chunk for this delivery: only a lease that is waiting or ran out can be claimed. None
    when it is finished or another live delivery holds it: this delivery then has nothing to do.
    `model`, `owner`: as `ChunkHold`'s (an experiment's chunk)."""
    now = now or timezone.now()
    holder = uuid.uuid4().hex
    claimable = model._default_manager.filter(
        **{owner: run_id}, index=index, finished_at__isnull=True
    ).filter(Q(expires_at__isnull=True) | Q(expires_at__lt=now))
    if (
        claimable.update(holder=holder, worker=worker[:200], claimed_at=now, expires_at=now + CHUNK_LEASE)
        != 1
    ):
        return None
    return ChunkHold(run_id, index, holder, model, owner)


def lease_requeue(lease: Any) -> bool:
    """A lease that ran out (its worker was lost) back to waiting, one loss more, conditional on the claim
    the sweeper saw: two sweepers send the chunk once, and a holder that renewed meanwhile keeps it. A
    run's `ChunkLease` or an experiment's `ExperimentChunk`."""
    return bool(
        type(lease)
        ._default_manager.filter(
            pk=lease.pk, holder=lease.holder, expires_at=lease.expires_at, finished_at__isnull=True
        )
        .update(holder="", expires_at=None, losses=F("losses") + 1)
    )
