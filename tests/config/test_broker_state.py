"""The broker's part of /metrics (config/broker_state.py): queue depths, messages taken and not
acknowledged, and the workers' heartbeats, on the suite's real Redis and on `make run`'s broker folder,
as kombu itself writes and counts them."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from kombu import Connection

from config.broker_state import HEARTBEATS_KEY, FolderBroker, RedisBroker, broker, heartbeat_ttl
from tests.support.workers import needs_redis_broker

needs_redis = needs_redis_broker()


def _publish(url: str, queue: str, priorities: list[int], **transport: Any) -> None:
    """Messages put on `queue` by kombu itself, at these priorities."""
    with Connection(url, transport_options=transport) as connection:
        sent = connection.SimpleQueue(queue)
        for priority in priorities:
            sent.put({"n": priority}, priority=priority)
        sent.close()


@needs_redis
def test_redis_queue_depths_count_every_priority_as_kombu_does() -> None:
    url = settings.CELERY_BROKER_URL
    queue, empty = f"metrics-{uuid.uuid4().hex}", f"metrics-{uuid.uuid4().hex}"
    _publish(url, queue, [0, 0, 5, 9])
    found = RedisBroker(url)
    try:
        assert found.state([queue, empty]).queues == {queue: 4, empty: 0}
        with Connection(url) as connection:
            assert connection.SimpleQueue(queue).qsize() == 4  # kombu's own count agrees
    finally:
        found.client.delete(*RedisBroker._keys(queue))


@needs_redis
def test_redis_counts_the_messages_taken_and_not_acknowledged() -> None:
    url = settings.CELERY_BROKER_URL
    queue = f"metrics-{uuid.uuid4().hex}"
    _publish(url, queue, [0, 0, 0])
    found = RedisBroker(url)
    before = found.state([queue]).unacked
    assert before is not None
    with Connection(url) as connection:
        taken = connection.SimpleQueue(queue)
        first, second = taken.get(timeout=5), taken.get(timeout=5)
        assert found.state([queue]).unacked == before + 2
        assert found.state([queue]).queues == {queue: 1}
        first.ack()
        second.ack()
        assert found.state([queue]).unacked == before
        taken.close()
    found.client.delete(*RedisBroker._keys(queue))


@needs_redis
def test_redis_heartbeats_are_seen_until_they_are_stale_or_the_worker_goes(settings: Any) -> None:
    settings.ASSAY_WORKER_HEARTBEAT_S = 0.2  # up for 0.6 s after a beat
    found = RedisBroker(settings.CELERY_BROKER_URL)
    one, two = f"one-{uuid.uuid4().hex}@host", f"two-{uuid.uuid4().hex}@host"
    found.beat(one)
    found.beat(two)
    seen = found.state([]).heartbeats
    assert {one, two} <= set(seen) and abs(seen[one] - time.time()) < 5
    found.gone(two)
    assert one in found.state([]).heartbeats and two not in found.state([]).heartbeats
    time.sleep(heartbeat_ttl() + 0.2)
    assert one not in found.state([]).heartbeats  # stale: lost, no longer up
    assert found.client.zscore(HEARTBEATS_KEY, one) is not None  # kept a while, for the record
    found.gone(one)


def test_the_folder_broker_counts_what_kombus_filesystem_transport_wrote(tmp_path: Path) -> None:
    messages = tmp_path / "in"
    messages.mkdir()
    options = {"data_folder_in": str(messages), "data_folder_out": str(messages)}
    _publish("filesystem://", "celery", [0, 0, 0], **options)
    _publish("filesystem://", "other", [0], **options)
    (messages / ".123_x.celery.msg.part").write_text("{")  # a message still being written (config/broker.py)
    found = FolderBroker(messages, tmp_path / "heartbeats")
    state = found.state(["celery", "other", "idle"])
    assert state.queues == {"celery": 3, "other": 1, "idle": 0}
    assert state.unacked is None


def test_the_folder_broker_keeps_heartbeats_beside_its_messages(tmp_path: Path, settings: Any) -> None:
    settings.ASSAY_WORKER_HEARTBEAT_S = 10.0
    found = FolderBroker(tmp_path, tmp_path / "heartbeats")
    found.beat("w1@laptop")
    found.beat("odd/name@laptop")
    assert set(found.state([]).heartbeats) == {"w1@laptop", "odd/name@laptop"}
    stale = time.time() - heartbeat_ttl() - 1
    os.utime(found._file("w1@laptop"), (stale, stale))
    assert set(found.state([]).heartbeats) == {"odd/name@laptop"}
    found.gone("odd/name@laptop")
    assert found.state([]).heartbeats == {}


def test_the_broker_is_the_one_the_settings_name(settings: Any, tmp_path: Path) -> None:
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/3"
    assert isinstance(broker(), RedisBroker)
    settings.CELERY_BROKER_URL = "filesystem://localhost//"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(tmp_path / "in")}
    folder = broker()
    assert isinstance(folder, FolderBroker) and folder.heartbeats == tmp_path / "heartbeats"
    settings.CELERY_BROKER_URL = "amqp://guest@localhost//"
    assert broker() is None
