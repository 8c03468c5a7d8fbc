"""`make run`'s filesystem broker hands a consumer whole messages only (config/broker.py): a message being
written is invisible to consumers, and a burst of large messages written while a consumer reads arrives
complete and once each. Kombu's own transport let a consumer take a file still being written, and the
worker died on the JSON error."""

from __future__ import annotations

import threading
from pathlib import Path
from queue import Empty

from kombu import Connection

from config.broker import Channel, Transport


def _connection(folder: Path) -> Connection:
    for sub in ("in", "processed", "control"):
        (folder / sub).mkdir()
    return Connection(
        "filesystem://localhost//",
        transport=Transport,
        transport_options={
            "data_folder_in": str(folder / "in"),
            "data_folder_out": str(folder / "in"),
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"),
            "store_processed": False,
        },
    )


def test_a_message_being_written_is_not_taken(tmp_path: Path) -> None:
    with _connection(tmp_path) as conn:
        channel: Channel = conn.default_channel  # type: ignore[assignment]
        # What a write in progress looks like in the folder: a partial file under the hidden name.
        partial = tmp_path / "in" / ".1_0.work.msg.part"
        partial.write_bytes(b'{"half": ')
        channel._put("work", {"whole": True})
        assert channel._get("work") == {"whole": True}
        assert partial.exists()  # left alone, not read as a message
        assert [p.name for p in (tmp_path / "in").iterdir()] == [partial.name]


def test_a_burst_of_large_messages_arrives_whole_and_once_each(tmp_path: Path) -> None:
    count, writers = 120, 3
    body = "x" * 200_000
    with _connection(tmp_path) as conn:
        reader: Channel = conn.channel()  # type: ignore[assignment]

        def write(start: int) -> None:
            with conn.clone() as mine:
                channel: Channel = mine.default_channel  # type: ignore[assignment]
                for n in range(start, count, writers):
                    channel._put("work", {"n": n, "body": body})

        threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
        for thread in threads:
            thread.start()
        seen: list[int] = []
        while len(seen) < count:
            try:
                message = reader._get("work")
            except Empty:  # the writers have not caught up
                continue
            assert message["body"] == body
            seen.append(message["n"])
        for thread in threads:
            thread.join()
    assert sorted(seen) == list(range(count))
    assert not any((tmp_path / "in").iterdir())
