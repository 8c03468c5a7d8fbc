"""A web server on a fresh SQLite file, as `make run` has it, with raters ready to grade.

`python -m tests.support.sqlite_server DIR [N]` migrates `DIR/assay.sqlite3` (DATABASE_URL and
ASSAY_VAR_DIR must point there: settings read them at import), gives N raters (default none) one
assignment each, writes `DIR/raters.json` (per rater: session cookie, assignment id, candidate ids) and
serves the project on a free loopback port (tests.support.web_server).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(directory: Path, n: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from tests import factories
    from tests.support.web_server import serve

    call_command("migrate", verbosity=0)
    # As in tests/conftest.py: PBKDF2's rounds for N users would be most of the start-up.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    raters = [factories.UserFactory.create(username=f"rater{i}", groups=["raters"]) for i in range(n)]
    golden_set = factories.GoldenSetFactory.create(slug="busy", raters=raters)
    found = []
    for rater in raters:
        query = factories.pooled_query(golden_set, 2)
        assignment = factories.AssignmentFactory.create(query=query, rater=rater)
        client = Client()
        client.force_login(rater)
        found.append(
            {
                "session": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "assignment": assignment.pk,
                "candidates": [
                    factories.token(assignment, c) for c in query.candidates.order_by("best_rank")
                ],
            }
        )
    (directory / "raters.json").write_text(json.dumps(found))
    serve(0)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
