"""The demo (`demo_load`) loaded once for all the tests of a module, each of which may still change it.

Loading it costs seconds. `demo_once` loads it in a transaction opened for the module; each test's own
transaction (pytest-django's `db`) is then a savepoint inside it, rolled back after the test, so every
test starts from the freshly loaded demo, and the module's transaction is rolled back at its end. For
tests with `django_db` (not `transaction=True`, which commits: those load the demo themselves).

Registered for every test by `pytest_plugins` in tests/conftest.py: a test takes `demo_once` by name.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import override_settings
from pytest_django import DjangoDbBlocker


@pytest.fixture(name="demo_once", scope="module")
def demo_once_fixture(
    django_db_setup: None, django_db_blocker: DjangoDbBlocker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The demo loaded for the module; yields the VAR_DIR its logins were kept in."""
    var_dir = tmp_path_factory.mktemp("demo-var")
    # The root conftest's fast hasher is per test; the demo's users are made before any test starts.
    faster = override_settings(
        VAR_DIR=var_dir, PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]
    )
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            with faster:
                call_command("demo_load", stdout=io.StringIO())
        except BaseException as error:
            transaction.set_rollback(True)
            outer.__exit__(type(error), error, error.__traceback__)
            raise
    try:
        yield var_dir
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
