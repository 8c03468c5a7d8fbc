"""Chunk leases: which delivery of a chunk task is working on which chunk, for a run's chunks
(`ChunkLease`) and an experiment's (`ExperimentChunk`) alike: both are a `LeasedChunk`
(evaluation/runs/models.py), and this module is their one claim, renewal, finish and sweep. The task
claims its chunk's lease when it starts and renews it while it works, so a lost worker shows as a lease
that ran out within seconds, not as a broker message that comes back after the visibility timeout (an
hour). The sweepers (`evaluation/runs/services/sweep.py`, `experiments_sweep`) send such chunks again
(docs/runs.md, "Worker loss")."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError
from django.db.models import Exists, F, Max, OuterRef, Q, QuerySet
from django.utils import timezone

from evaluation.runs.models import ChunkLease, LeasedChunk

# How long a claim or renewal holds a chunk, and how often a working chunk renews it: three renewals
# per lease, so a chunk whose loop stalls for up to 15 s (a slow database round trip) keeps its chunk.
CHUNK_LEASE = timedelta(seconds=20)
LEASE_RENEW_EVERY_S = 5.0
# A chunk whose lease ran out this many times is not sent again: its run or experiment fails (a chunk
# that takes its worker down with it would otherwise go round for ever).
MAX_LEASE_LOSSES = 3


def _rows(model: type[LeasedChunk], owner_id: int) -> QuerySet[Any]:
    return model._default_manager.filter(**{model.OWNER: owner_id})


def leases_create(model: type[LeasedChunk], owner_id: int, chunks: Sequence[Mapping[str, Any]]) -> list[int]:
    """A waiting lease for each chunk about to be sent (each its fields, e.g. `query_ids`), numbered after
    the owner's earlier chunks; returns their indices (the chunk tasks' `chunk` argument)."""
    last = _rows(model, owner_id).aggregate(last=Max("index"))["last"]
    first = 0 if last is None else last + 1
    rows = [model(**{model.OWNER: owner_id}, index=first + i, **fields) for i, fields in enumerate(chunks)]
    model._default_manager.bulk_create(rows)
    return [row.index for row in rows]


def chunk_leases_create(*, run_id: int, chunks: Sequence[Sequence[str]]) -> list[int]:
    """A run's chunks of queries, each a waiting lease (`leases_create`)."""
    return leases_create(ChunkLease, run_id, [{"query_ids": list(c)} for c in chunks])


@dataclass(frozen=True, slots=True)
class ChunkHold:
    """A claimed lease, as its delivery holds it. Each write is conditional on `holder`: once another
    delivery claimed the chunk (this one's lease ran out), nothing here changes the row."""

    model: type[LeasedChunk]
    owner_id: int
    index: int
    holder: str

    def _mine(self) -> QuerySet[Any]:
        return _rows(self.model, self.owner_id).filter(
            index=self.index, holder=self.holder, finished_at__isnull=True
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


def lease_claim(
    model: type[LeasedChunk], owner_id: int, index: int, *, worker: str, now: datetime | None = None
) -> ChunkHold | None:
    """Claim the chunk for this delivery: only a lease that is waiting or ran out can be claimed. None
    when it is finished or another live delivery holds it: this delivery then has nothing to do."""
    now = now or timezone.now()
    holder = uuid.uuid4().hex
    claimable = (
        _rows(model, owner_id)
        .filter(index=index, finished_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__lt=now))
    )
    if (
        claimable.update(holder=holder, worker=worker[:200], claimed_at=now, expires_at=now + CHUNK_LEASE)
        != 1
    ):
        return None
    return ChunkHold(model, owner_id, index, holder)


def chunk_lease_claim(
    *, run_id: int, index: int, worker: str, now: datetime | None = None
) -> ChunkHold | None:
    """A run's chunk claimed for this delivery (`lease_claim`)."""
    return lease_claim(ChunkLease, run_id, index, worker=worker, now=now)


def lease_requeue(lease: LeasedChunk) -> bool:
    """A lease that ran out (its worker was lost) back to waiting, one loss more, conditional on the claim
    the sweeper saw: two sweepers send the chunk once, and a holder that renewed meanwhile keeps it."""
    return bool(
        type(lease)
        ._default_manager.filter(
            pk=lease.pk, holder=lease.holder, expires_at=lease.expires_at, finished_at__isnull=True
        )
        .update(holder="", expires_at=None, losses=F("losses") + 1)
    )


@dataclass
class LeasesLost:
    """What `leases_expired` found: per owner, the chunks back to waiting (to send again), and the owners
    failed for a chunk lost too often."""

    resend: dict[int, list[Any]]
    failed: list[int]


def leases_expired(
    model: type[LeasedChunk],
    *,
    running: Q,
    fail: Callable[[int, str], bool],
    now: datetime,
    max_losses: int = MAX_LEASE_LOSSES,
    skip: Sequence[int] = (),
) -> LeasesLost:
    """The sweeper's step for leases that ran out, on the chunks of owners that are `running` (a filter on
    the lease rows): each goes back to waiting, to be sent again; a chunk already lost `max_losses` times
    fails its owner instead (`fail(owner_id, message)`, True when it was still active), and the owner's
    other chunks are left. Owners in `skip` are passed over. Safe to run twice, and by two sweepers."""
    expired = model._default_manager.filter(running, finished_at__isnull=True, expires_at__lt=now).order_by(
        model.OWNER, "index"
    )
    lost = LeasesLost({}, [])
    for lease in expired:
        owner = lease.owner_id
        if owner in lost.failed or owner in skip:
            continue
        if lease.losses >= max_losses:
            message = (
                f"stalled: chunk {lease.index} ({lease.work_text}) lost its worker {lease.losses + 1} times "
                f"(last {lease.worker or 'unknown'})"
            )
            if fail(owner, message):
                lost.failed.append(owner)
            continue
        if lease_requeue(lease):
            lost.resend.setdefault(owner, []).append(lease)
    for owner in lost.failed:
        lost.resend.pop(owner, None)
    return lost


def leases_quiet(model: type[LeasedChunk], *, now: datetime, stall_after: timedelta) -> Q:
    """Owners (runs, experiments) that no live lease shows working on and that stopped moving: no heartbeat
    for `stall_after`, or for a lease with every chunk finished (the step the last chunk sends next was
    lost with its worker). A filter on the owner's rows (their `heartbeat_at`)."""
    leases = model._default_manager.filter(**{model.OWNER: OuterRef("pk")})
    open_leases = leases.filter(finished_at__isnull=True)
    live = open_leases.filter(expires_at__gte=now)
    quiet = Q(heartbeat_at__lt=now - stall_after) | (
        Q(heartbeat_at__lt=now - CHUNK_LEASE) & Exists(leases) & ~Exists(open_leases)
    )
    return Q(quiet, ~Exists(live))


def leases_close(model: type[LeasedChunk], owner_id: int, *, now: datetime) -> None:
    """Finish the owner's open chunks (their work is sent again as new chunks): a late delivery of an
    old one does nothing."""
    _rows(model, owner_id).filter(finished_at__isnull=True).update(finished_at=now, expires_at=None)
