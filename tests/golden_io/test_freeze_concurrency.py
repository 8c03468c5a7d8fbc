"""Two freezes at once, each in its own thread, connection and transaction (needs real row locks).

They yield two distinct versions (the second names itself after the first and takes it as its parent),
or, asked for the same explicit name or with nothing changed in between, one version and one refusal;
never a mix of both freezes' content.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from golden_io import services
from golden_io.models import GoldenVersion
from labeling import selectors as labeling_selectors
from labeling.models import FrozenLabel, GoldenSet
from tests.support.golden_sets import (
    ConsolidatedStub,
    build_set,
)
from tests.support.threads import race

pytestmark = pytest.mark.django_db(transaction=True)

DAY = dt.date(2026, 8, 1)
SPEC = {
    "q-1": {"labels": {"d-1": 3, "d-2": 0}},
    "q-2": {"labels": {"d-2": 1, "d-3": 2}},
}


@pytest.fixture
def slow(consolidated: ConsolidatedStub, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the labels takes a while, so the second freeze surely arrives while the first holds the set."""

    def slowly(*, golden_set: GoldenSet, unwritten: object = None) -> Any:
        time.sleep(0.3)
        return consolidated(golden_set=golden_set, unwritten=unwritten)

    monkeypatch.setattr(labeling_selectors, "labels_consolidated", slowly)


def _at_once(n: int, work: Callable[[int], Any]) -> list[Any]:
    """work(0..n-1) in n threads released together; each result or the exception it raised."""
    return race([functools.partial(work, i) for i in range(n)])


def test_two_freezes_at_once_make_two_distinct_chained_versions(
    golden_set: GoldenSet,
    rita: User,
    bob: User,
    consolidated: ConsolidatedStub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = build_set(golden_set, SPEC)
    users = [rita, bob]
    reads = []

    def regraded_in_between(*, golden_set: GoldenSet, unwritten: object = None) -> Any:
        """As `slow`, and a label changes after the first read, so the second freeze has a change."""
        reads.append(golden_set.pk)
        if len(reads) == 2:
            consolidated.grade(built.queries["q-1"], built.docs["d-2"], 1)
        time.sleep(0.3)
        return consolidated(golden_set=golden_set, unwritten=unwritten)

    monkeypatch.setattr(labeling_selectors, "labels_consolidated", regraded_in_between)

    results = _at_once(
        2, lambda i: services.golden_version_freeze(golden_set=golden_set, by=users[i], on=DAY)
    )

    if connection.vendor == "sqlite":  # `make run`: the database, not the row, is locked: one refusal
        _assert_one_version_and_one_refusal(golden_set, results, "nothing was frozen; try again")
        return
    assert all(isinstance(r, GoldenVersion) for r in results), results
    versions = sorted(GoldenVersion.objects.filter(golden_set=golden_set), key=lambda v: v.name)
    assert [v.name for v in versions] == ["2026-08-01", "2026-08-01.2"]
    first, second = versions
    assert first.parent is None and second.parent == first
    assert first.golden().version == "2026-08-01" and second.golden().version == "2026-08-01.2"
    # Each is one read of the labels, whole: the second holds the regrade, the first does not.
    assert [j.grade for j in first.golden().query("q-1").judgments] == [3, 0]
    assert [j.grade for j in second.golden().query("q-1").judgments] == [3, 1]
    # The frozen labels are one version's, whole: never some rows from each.
    assert set(
        FrozenLabel.objects.filter(query__golden_set=golden_set).values_list("version", flat=True)
    ) == {"2026-08-01.2"}
    golden_set.refresh_from_db()
    assert golden_set.frozen_version == "2026-08-01.2"


def test_two_identical_freezes_at_once_make_one_version_and_one_refusal_naming_it(
    golden_set: GoldenSet, rita: User, bob: User, consolidated: ConsolidatedStub, slow: None
) -> None:
    build_set(golden_set, SPEC)
    users = [rita, bob]

    results = _at_once(
        2, lambda i: services.golden_version_freeze(golden_set=golden_set, by=users[i], on=DAY)
    )

    # The second waited for the first and compared with it: nothing changed in between.
    expected = (
        "nothing was frozen; try again"
        if connection.vendor == "sqlite"
        else "nothing changed since version 2026-08-01: not frozen"
    )
    _assert_one_version_and_one_refusal(golden_set, results, expected)


def test_two_freezes_with_the_same_name_make_one_version_and_one_refusal(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub, slow: None
) -> None:
    build_set(golden_set, SPEC)

    results = _at_once(2, lambda i: services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1"))

    expected = (
        "nothing was frozen; try again" if connection.vendor == "sqlite" else "already has a version 'v1'"
    )
    _assert_one_version_and_one_refusal(golden_set, results, expected)


def _assert_one_version_and_one_refusal(golden_set: GoldenSet, results: list[Any], reason: str) -> None:
    made = [r for r in results if isinstance(r, GoldenVersion)]
    refused = [r for r in results if isinstance(r, services.FreezeError)]
    assert (len(made), len(refused)) == (1, 1), results
    assert reason in str(refused[0])
    assert GoldenVersion.objects.filter(golden_set=golden_set).count() == 1
    # The frozen labels are the one version's, whole.
    assert set(
        FrozenLabel.objects.filter(query__golden_set=golden_set).values_list("version", flat=True)
    ) == {made[0].name}
