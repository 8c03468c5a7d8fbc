"""Many raters saving at the same moment on the embedded SQLite database (`make run`): every save lands.

A real server process on a real SQLite file (in-memory SQLite has no file lock to fight over), twenty
clients released together by a barrier. With deferred transactions and no retry most of them answered
500 `database is locked`; a save that still cannot get the lock answers a worded 503 to resend.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from labeling import services
from tests.support.processes import serving

RATERS = 20


def _grade(url: str, rater: dict, grade: int, barrier: threading.Barrier) -> httpx.Response:
    page = f"{url}/assignments/{rater['assignment']}/"
    with httpx.Client(cookies={"sessionid": rater["session"]}, timeout=60) as client:
        assert client.get(page).status_code == 200  # sets the CSRF cookie, as the browser's page load does
        barrier.wait()
        return client.post(
            f"{page}grades/",
            json={"candidate": rater["candidates"][0], "grade": grade, "time_spent_ms": 100},
            headers={"X-CSRFToken": client.cookies["csrftoken"], "Accept": "application/json"},
        )


def test_twenty_simultaneous_grade_saves_on_sqlite_all_land(tmp_path: Path) -> None:
    db = tmp_path / "assay.sqlite3"
    env = {"DATABASE_URL": f"sqlite:///{db}", "ASSAY_VAR_DIR": str(tmp_path), "DJANGO_DEBUG": "false"}
    args = ["-m", "tests.support.sqlite_server", str(tmp_path), str(RATERS)]
    with serving(args, env=env, timeout=180) as url:
        raters = json.loads((tmp_path / "raters.json").read_text())
        barrier = threading.Barrier(RATERS)
        responses: list[httpx.Response | BaseException | None] = [None] * RATERS

        def run(i: int) -> None:
            try:
                responses[i] = _grade(url, raters[i], i % 4, barrier)
            except BaseException as exc:
                responses[i] = exc

        threads = [threading.Thread(target=run, args=(i,)) for i in range(RATERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    statuses = [r.status_code if isinstance(r, httpx.Response) else r for r in responses]
    assert statuses == [200] * RATERS
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        saved = dict(conn.execute("SELECT assignment_id, grade FROM labeling_judgment").fetchall())
    assert saved == {rater["assignment"]: i % 4 for i, rater in enumerate(raters)}


@contextmanager
def _one_rater(tmp_path: Path) -> Iterator[tuple[httpx.Client, str, dict[str, str], dict]]:
    """A server on a fresh SQLite file whose writes wait only 0.05 s for the lock, and its one rater's
    client with the grading page loaded (the CSRF cookie): (client, page URL, headers, rater)."""
    env = {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'assay.sqlite3'}",
        "ASSAY_VAR_DIR": str(tmp_path),
        "ASSAY_SQLITE_TIMEOUT": "0.05",
    }
    with serving(["-m", "tests.support.sqlite_server", str(tmp_path), "1"], env=env, timeout=180) as url:
        (rater,) = json.loads((tmp_path / "raters.json").read_text())
        page = f"{url}/assignments/{rater['assignment']}/"
        with httpx.Client(cookies={"sessionid": rater["session"]}, timeout=60) as client:
            assert client.get(page).status_code == 200
            headers = {"X-CSRFToken": client.cookies["csrftoken"], "Accept": "application/json"}
            yield client, page, headers, rater


def test_a_save_that_finds_the_database_locked_throughout_answers_503_and_lands_when_resent(
    tmp_path: Path,
) -> None:
    db = tmp_path / "assay.sqlite3"
    with _one_rater(tmp_path) as (client, page, headers, rater):
        body = {"candidate": rater["candidates"][0], "grade": 3}
        # Another writer holds the write lock for longer than the timeout and every retry.
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        busy = client.post(f"{page}grades/", json=body, headers=headers)
        holder.execute("ROLLBACK")
        holder.close()
        assert busy.status_code == 503
        assert busy.headers["Retry-After"] == "2"
        assert busy.json() == {"error": "busy", "message": services.BUSY_MESSAGE}
        # What the grading page does next: the same save again.
        again = client.post(f"{page}grades/", json=body, headers=headers)
    assert again.status_code == 200 and again.json()["grade"] == 3
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT grade FROM labeling_judgment").fetchall() == [(3,)]


def _grade_all(client: httpx.Client, page: str, headers: dict[str, str], rater: dict) -> None:
    """Every candidate graded: ready to be marked done."""
    for candidate in rater["candidates"]:
        saved = client.post(f"{page}grades/", json={"candidate": candidate, "grade": 2}, headers=headers)
        assert saved.status_code == 200, saved.text


def _status(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        ((status,),) = conn.execute("SELECT status FROM labeling_assignment").fetchall()
    return str(status)


def test_marking_done_while_the_database_stays_locked_answers_503_and_lands_when_resent(
    tmp_path: Path,
) -> None:
    db = tmp_path / "assay.sqlite3"
    with _one_rater(tmp_path) as (client, page, headers, rater):
        _grade_all(client, page, headers, rater)
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        busy = client.post(f"{page}done/", json={}, headers=headers)
        holder.execute("ROLLBACK")
        holder.close()
        assert busy.status_code == 503
        assert busy.headers["Retry-After"] == "2"
        assert busy.json() == {"error": "busy", "message": services.DONE_BUSY_MESSAGE}
        assert _status(db) == "open"
        # What the grading page does next: the same request again.
        again = client.post(f"{page}done/", json={}, headers=headers)
    assert again.status_code == 200 and again.json()["done"] is True
    assert _status(db) == "done"


def test_marking_done_waits_out_a_brief_lock_with_the_grades_retries(tmp_path: Path) -> None:
    db = tmp_path / "assay.sqlite3"
    with _one_rater(tmp_path) as (client, page, headers, rater):
        _grade_all(client, page, headers, rater)
        holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        # Held past the first two attempts (each waits 0.05 s; they are 0.1 s and 0.3 s apart), let go
        # before the third.
        release = threading.Timer(0.25, lambda: holder.execute("ROLLBACK"))
        release.start()
        done = client.post(f"{page}done/", json={}, headers=headers)
        release.join()
        holder.close()
    assert done.status_code == 200 and done.json()["done"] is True
    assert _status(db) == "done"
