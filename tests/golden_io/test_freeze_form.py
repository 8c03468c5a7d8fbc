"""The freeze form says the name an empty field gives today, from the freeze's own naming rule."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from golden_io import services
from labeling.models import GoldenSet

pytestmark = pytest.mark.django_db


def test_the_name_hint_is_todays_next_version_name(golden_set: GoldenSet, rita: User) -> None:
    client = Client()
    client.force_login(rita)
    body = client.get(reverse("golden_io:freeze", args=[golden_set.slug])).content.decode()
    upcoming = services.version_name_next(golden_set=golden_set, on=timezone.localdate())
    assert upcoming.startswith(timezone.localdate().isoformat())
    assert f"leave empty for {upcoming} (today" in body
