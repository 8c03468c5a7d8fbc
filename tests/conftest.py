"""Root fixtures: the cast every permission test uses (healthchecks' alice / bob / charlie).

alice and bob are raters, rita is a reviewer, charlie is an outsider with no group. `golden_set` is
a set rita reviews and alice and bob rate; `assignment` is alice's, on a query with a five-document
pool whose first document carries a frozen grade of 3.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import Group, User

from labeling.models import Assignment, GoldenSet
from tests import factories
from tests.support.parallel import isolate_redis, worker_index

# The shared fixture modules, for every test directory: a test names a fixture as a parameter and
# imports nothing for it (fixtures of one app's tests only live in that directory's conftest.py). A module
# comes before those importing it (evaluation imports runs), so pytest rewrites the asserts of each.
pytest_plugins = [
    "tests.support.runs",
    "tests.support.evaluation",
    "tests.support.demo_once",
    "tests.support.fixtures",
    "tests.support.golden_sets",
    "tests.support.workers",
    "tests.support.oidc",
]

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent
PASSWORD = "correct horse battery staple"

# Git exports may write only below the allowed roots (assay.secrets); the tests' repositories live in
# pytest's temporary directories. Set before any worker process is started, which inherits it.
os.environ.setdefault("ASSAY_GIT_EXPORT_ROOTS", tempfile.gettempdir())
# The servers the tests start (search, judge, webhook, git) listen on loopback, which outbound addresses
# may reach only when the operator allows private ones (assay.netpolicy); tests of that policy turn it off
# for themselves.
os.environ.setdefault("ASSAY_TARGET_ALLOW_PRIVATE", "true")
# Under pytest-xdist each worker has a Redis database of its own (tests/support/parallel.py).
isolate_redis(django_settings, os.environ, worker_index())


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """PBKDF2's million rounds cost most of a test's setup here; tests do not test the hasher."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _user(username: str, group: str | None) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD, email=f"{username}@example.org")
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def alice(db: None) -> User:
    return _user("alice", "raters")


@pytest.fixture
def bob(db: None) -> User:
    return _user("bob", "raters")


@pytest.fixture
def rita(db: None) -> User:
    return _user("rita", "reviewers")


@pytest.fixture
def charlie(db: None) -> User:
    return _user("charlie", None)


@pytest.fixture
def golden_set(alice: User, bob: User, rita: User) -> GoldenSet:
    return factories.GoldenSetFactory.create(slug="help-center", raters=[alice, bob], reviewers=[rita])


@pytest.fixture
def assignment(golden_set: GoldenSet, alice: User) -> Assignment:
    query = factories.pooled_query(golden_set, 5, external_id="q-0471", text="refund policy for annual plan")
    first = query.candidates.order_by("best_rank").first()
    assert first is not None
    factories.FrozenLabelFactory.create(query=query, document=first.document, grade=3)
    return factories.AssignmentFactory.create(query=query, rater=alice)
