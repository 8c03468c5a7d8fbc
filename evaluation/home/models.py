"""When each person last looked at their home page, so it can say what finished since their last visit
(docs/runs.md, "What waits for you"). Imported by the registry, `evaluation/models.py`, so Django finds
the model in the `evaluation` app; the write is `evaluation.home.services.home_visit`.

A visit is a run of home page views with no gap of `VISIT_GAP` or more between two of them (the web's
usual 30 minutes): reloading the page, or coming back to it from a run a minute later, is the same visit
and keeps showing what was new when it began.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models

VISIT_GAP = timedelta(minutes=30)


class HomeSeen(models.Model):
    """One person's visits to the home page: the last view, and where what is new for this visit begins
    (the last view of the visit before; null on the first visit)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="home_seen")
    seen_at = models.DateTimeField(help_text="the last view of the home page")
    since = models.DateTimeField(null=True, blank=True, help_text="the end of the visit before this one")

    def __str__(self) -> str:
        return f"home of {self.user_id}, seen {self.seen_at:%Y-%m-%d %H:%M}"

    def view(self, now: datetime) -> None:
        """A view at `now`: one after a quiet `VISIT_GAP` begins a new visit, whose news begin where the
        previous visit ended."""
        if now - self.seen_at >= VISIT_GAP:
            self.since = self.seen_at
        self.seen_at = max(now, self.seen_at)
