"""What the broker holds that an operator watches (docs/deployment.md, "Metrics"): the messages waiting in
each Celery queue, the ones taken and not yet acknowledged, and the workers' heartbeats. Read at scrape
time from the broker itself, so every web process answers the same whatever process queued or took the
work.

Two brokers, as config/settings.py chooses them: Redis (production and the suite), and `make run`'s
folder (kombu's filesystem transport, config/broker.py). Each worker writes its heartbeat where its
broker is: on Redis a sorted set (one member per worker, its last beat as the score), in the folder a
file per worker (its last beat as the file's time). A worker stopped cleanly removes its own; a lost one
stops beating, and after `HEARTBEAT_LIVES` beats' time it no longer counts as up.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, unquote

from django.conf import settings
from kombu.transport.redis import PRIORITY_STEPS
from kombu.transport.redis import Channel as RedisChannel

HEARTBEATS_KEY = "assay:worker-heartbeats"
# A worker is up while its last heartbeat is younger than this many of its intervals.
HEARTBEAT_LIVES = 3
# Seconds a metrics read may wait for the broker: a scrape must answer, broker down or not.
BROKER_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True)
class BrokerState:
    queues: dict[str, int]  # messages waiting, by queue
    unacked: int | None  # taken by a worker, not yet acknowledged (None: the broker does not say)
    heartbeats: dict[str, float]  # worker name -> the time (epoch seconds) of its last heartbeat


class Broker(Protocol):
    def state(self, queues: list[str]) -> BrokerState: ...
    def beat(self, worker: str) -> None: ...
    def gone(self, worker: str) -> None: ...


def heartbeat_ttl() -> float:
    return HEARTBEAT_LIVES * float(settings.ASSAY_WORKER_HEARTBEAT_S)


class RedisBroker:
    """Queue lengths as kombu's Redis transport keeps them: a list per queue and priority step."""

    def __init__(self, url: str) -> None:
        import redis

        self.client = redis.Redis.from_url(
            url, socket_timeout=BROKER_TIMEOUT_S, socket_connect_timeout=BROKER_TIMEOUT_S
        )

    @staticmethod
    def _keys(queue: str) -> list[str]:
        # kombu's Channel._q_for_pri: the queue's own list for priority 0, `<queue><sep><step>` for others.
        return [f"{queue}{RedisChannel.sep}{step}" if step else queue for step in PRIORITY_STEPS]

    def state(self, queues: list[str]) -> BrokerState:
        now = time.time()
        with self.client.pipeline(transaction=False) as pipe:
            for queue in queues:
                for key in self._keys(queue):
                    pipe.llen(key)
            pipe.hlen(RedisChannel.unacked_key)
            pipe.zrangebyscore(HEARTBEATS_KEY, now - heartbeat_ttl(), "+inf", withscores=True)
            *lengths, unacked, beats = pipe.execute()
        steps = len(PRIORITY_STEPS)
        depths = {queue: sum(lengths[i * steps : (i + 1) * steps]) for i, queue in enumerate(queues)}
        heartbeats = {name.decode(): float(score) for name, score in beats}
        return BrokerState(depths, int(unacked), heartbeats)

    def beat(self, worker: str) -> None:
        now = time.time()
        with self.client.pipeline(transaction=False) as pipe:
            pipe.zadd(HEARTBEATS_KEY, {worker: now})
            # The lost workers' members, long stale, go: the set holds the live ones and the recently lost.
            pipe.zremrangebyscore(HEARTBEATS_KEY, "-inf", now - 100 * heartbeat_ttl())
            pipe.execute()

    def gone(self, worker: str) -> None:
        self.client.zrem(HEARTBEATS_KEY, worker)


class FolderBroker:
    """`make run`'s broker: a message is a file `<time>_<id>.<queue>.msg` in its folder (kombu's filesystem
    transport, which has no acknowledgements to count); a heartbeat is a file per worker beside it."""

    def __init__(self, messages: Path, heartbeats: Path) -> None:
        self.messages, self.heartbeats = messages, heartbeats

    def state(self, queues: list[str]) -> BrokerState:
        depths = dict.fromkeys(queues, 0)
        # kombu's rule (filesystem.Channel._size): what follows a file name's first dot is `<queue>.msg`.
        for name in os.listdir(self.messages):
            queue = name.partition(".")[2].removesuffix(".msg")
            if name.endswith(".msg") and queue in depths:
                depths[queue] += 1
        oldest = time.time() - heartbeat_ttl()
        heartbeats = {}
        for path in self.heartbeats.glob("*") if self.heartbeats.is_dir() else []:
            beat = path.stat().st_mtime
            if beat >= oldest:
                heartbeats[unquote(path.name)] = beat
        return BrokerState(depths, None, heartbeats)

    def _file(self, worker: str) -> Path:
        return self.heartbeats / quote(worker, safe="@-_")

    def beat(self, worker: str) -> None:
        self.heartbeats.mkdir(parents=True, exist_ok=True)
        self._file(worker).touch()

    def gone(self, worker: str) -> None:
        self._file(worker).unlink(missing_ok=True)


def broker() -> Broker | None:
    """The broker the settings name, or None for one Assay does not read (an AMQP server, say)."""
    url = str(settings.CELERY_BROKER_URL)
    if url.startswith(("redis://", "rediss://")):
        return RedisBroker(url)
    if url.startswith("filesystem://"):
        messages = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]))
        return FolderBroker(messages, messages.parent / "heartbeats")
    return None
