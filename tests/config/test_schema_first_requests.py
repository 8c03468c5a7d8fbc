"""The API schema answers every one of many simultaneous first requests (config/schema.py): drf-spectacular
loads its extensions lazily on its first generation, and threads generating at once saw a half-loaded
extension (500). Served by Django's threaded server in a process of its own, whose schema no request had
built before."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.support.processes import serving
from tests.support.threads import race

CALLERS = 16


def test_simultaneous_first_requests_for_the_schema_all_get_it(tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'assay.sqlite3'}", "ASSAY_VAR_DIR": str(tmp_path)}
    with serving(["-m", "tests.support.sqlite_server", str(tmp_path), "1"], env=env, timeout=300) as url:
        (rater,) = json.loads((tmp_path / "raters.json").read_text())
        cookies = {"sessionid": rater["session"]}  # a rater: any signed-in user may read the schema

        def fetch() -> tuple[int, bytes]:
            with httpx.Client(base_url=url, cookies=cookies, timeout=300) as client:
                reply = client.get("/api/schema/", headers={"Accept": "application/vnd.oai.openapi+json"})
                return reply.status_code, reply.content

        replies = race([fetch] * CALLERS, timeout=600)

    answers = [reply for reply in replies if isinstance(reply, tuple)]
    assert len(answers) == CALLERS, replies  # no caller raised
    assert [status for status, _body in answers] == [200] * CALLERS
    bodies = {body for _status, body in answers}
    assert len(bodies) == 1  # the same schema for everyone
    schema = json.loads(bodies.pop())
    assert schema["info"]["title"] == "Assay API" and "/api/v1/runs/" in schema["paths"]
