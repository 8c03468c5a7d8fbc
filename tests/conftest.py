"""Root fixtures: the cast every permission test uses (healthchecks' alice / bob / charlie).

alice and bob are raters, rita is a reviewer, charlie is an outsider with no group.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent
PASSWORD = "correct horse battery staple"


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
