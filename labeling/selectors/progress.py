"""How often a progress fragment asks again (a run's page, a judge job's page)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

# Often while the work is young (a small run or judge job is over in about a second, and the page shows
# its result at the first poll after that), then once a second.
POLL_FAST_MS = 200
POLL_FAST_FOR = timedelta(seconds=30)
POLL_MS = 1000


def poll_ms(created: datetime) -> int:
    """Milliseconds until a page showing the progress of work created at `created` asks again."""
    return POLL_FAST_MS if timezone.now() - created < POLL_FAST_FOR else POLL_MS
