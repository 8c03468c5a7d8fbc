"""`make run`'s filesystem broker, with each message written whole before a consumer can see it.

Kombu's filesystem transport creates a message's file under its final name and then writes it; a consumer
lists the folder, moves the file away and reads it without taking the writer's lock, so it can read a file
still empty or half written. The JSON decode error that follows kills the worker (seen in a burst of
experiment chunks on `make run`'s stack). Here a message is written under a name no consumer takes (a
leading dot: kombu matches what follows the first dot against `<queue>.msg`) and renamed to its final name
once complete; a rename within one folder is atomic, so a consumer sees the whole message or none.
Selected by CELERY_BROKER_TRANSPORT in config/settings.py whenever the broker URL is `filesystem://`.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    # kombu's stubs give the two base classes different signatures; this is the filesystem one's.
    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]
        """Put `payload` onto `queue`: written under a hidden name, then renamed to kombu's."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(partial, "wb") as f:
                f.write(dumps(payload).encode())
            os.replace(partial, final)
        except OSError as exc:
            if os.path.exists(partial):
                os.remove(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
