"""Grade saving under 20 concurrent raters against PostgreSQL, through gunicorn on a loopback port.

The app runs as in production (gunicorn, DEBUG off) against a PostgreSQL database made for this run.
Each of 20 simulated raters logs in through the login form, opens the grading page of each of its
assignments (40 candidates each) and saves a grade for every candidate through the same endpoint the
page uses (JSON POST with the CSRF header). Every fourth rater also has a second "tab" that saves the
same document at the same moment with another grade. Three load shapes:

- solo: one rater saving as fast as answers come: the service time without queueing;
- paced: each rater saves a grade every 0.5-1.5 s (random, not in step; faster than a person who reads
  the result before grading it);
- flat out: each rater saves the next grade as soon as the previous answer arrives (a stress test).

Afterwards the database is counted: one judgment per (assignment, document) acknowledged as saved, none
lost, none duplicated, and one history event per acknowledged change, each judgment's grade being its
last event's. Target: p95 save latency under 50 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from benchmarks._report import write_section

REPO = Path(__file__).resolve().parent.parent
RATERS = 20
CANDIDATES = 40
RACING_EVERY = 4  # every fourth rater races a second tab
PASSWORD = "bench-rater-password"
# name -> raters, assignments (of 40 candidates) each, pause between a rater's saves, description
SHAPES: dict[str, dict[str, Any]] = {
    "solo": {"raters": 1, "queries": 2, "pause": 0.0, "label": "1 rater, no pause (service time)"},
    "paced": {
        "raters": RATERS,
        "queries": 1,
        "pause": 1.0,
        "label": "20 raters, a grade every 0.5-1.5 s each (not in step)",
    },
    "flat out": {"raters": RATERS, "queries": 2, "pause": 0.0, "label": "20 raters, no pause (stress)"},
}
WORKERS = 8
THREADS = 1


def bench_database_url() -> str:
    """A database of its own next to the suite's (DATABASE_URL, as `make bench` sets it)."""
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/assay")
    parts = urlsplit(base)
    if not parts.scheme.startswith("postgres"):
        raise SystemExit(f"bench_grading needs PostgreSQL; DATABASE_URL is {parts.scheme}")
    name = parts.path.lstrip("/") or "assay"
    return urlunsplit(parts._replace(path=f"/{name}_bench_grading", query="conn_max_age=60"))


def _admin_dsn(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/postgres", query="")), parts.path.lstrip("/")


def recreate_database(url: str) -> None:
    import psycopg

    dsn, name = _admin_dsn(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _django_env(url: str) -> dict[str, str]:
    env = dict(os.environ, DATABASE_URL=url, DJANGO_DEBUG="false", DJANGO_SETTINGS_MODULE="config.settings")
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    return env


def _manage(url: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=REPO, env=_django_env(url), capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


# --- run inside a Django process (subcommands of this module) -------------------------------------


def _setup_django() -> None:
    import django

    django.setup()


def seed(shape: str) -> None:
    """The golden set, 20 raters, and per rater its assignments on fresh 40-candidate queries."""
    _setup_django()
    from django.contrib.auth.models import Group, User

    from labeling.models import Assignment, Candidate, Document, GoldenSet, Query, Rubric

    rubric, _ = Rubric.objects.get_or_create(
        name="bench",
        version=1,
        defaults={"grades": [{"grade": g, "label": str(g), "meaning": str(g)} for g in (3, 2, 1, 0)]},
    )
    golden_set, _ = GoldenSet.objects.get_or_create(
        slug="bench", defaults={"name": "Bench", "surface": "bench", "rubric": rubric}
    )
    raters = Group.objects.get(name="raters")
    n_queries = SHAPES[shape]["queries"]
    n_raters = SHAPES[shape]["raters"]
    prefix = shape.replace(" ", "-")
    for r in range(n_raters):
        user, created = User.objects.get_or_create(username=f"{prefix}-rater{r:02d}")
        if created:
            user.set_password(PASSWORD)
            user.save()
            user.groups.add(raters)
        golden_set.raters.add(user)  # a rater grades only the sets whose raters list holds them
        for q in range(int(n_queries)):
            query = Query.objects.create(
                golden_set=golden_set, external_id=f"{prefix}-{r}-{q}", text=f"query {r} {q}", locale="en-US"
            )
            docs = Document.objects.bulk_create(
                [
                    Document(
                        golden_set=golden_set,
                        doc_id=f"{prefix}-{r}-{q}-{d}",
                        title=f"Document {d} for query {r}/{q}",
                        snippet="A short snippet. " * 3,
                        content_hash="-",
                    )
                    for d in range(CANDIDATES)
                ]
            )
            Candidate.objects.bulk_create(
                [
                    Candidate(query=query, document=doc, provenance=[{"system": "bench", "rank": i + 1}])
                    for i, doc in enumerate(docs)
                ]
            )
            Assignment.objects.create(query=query, rater=user)


def count() -> None:
    """What the database holds, as JSON on stdout."""
    _setup_django()
    from django.db.models import Count

    from labeling.models import Candidate, Judgment, JudgmentEvent
    from labeling.selectors import candidate_token

    duplicates = (
        Judgment.objects.values("assignment_id", "document_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    candidate_of = {
        (query, document): candidate
        for candidate, query, document in Candidate.objects.values_list("id", "query_id", "document_id")
    }
    rows = Judgment.objects.values_list("assignment_id", "assignment__query_id", "document_id", "grade")
    # Keyed as the load generator keys its saves: by the token the grading page names the candidate by.
    judgments = {
        f"{a}:{candidate_token(assignment_id=a, candidate_id=candidate_of[(query, document)])}": grade
        for a, query, document, grade in rows
    }
    last_event: dict[int, int | None] = {}
    for judgment_id, grade in JudgmentEvent.objects.order_by("id").values_list("judgment_id", "new_grade"):
        if judgment_id is not None:  # an event of a cleared grade or a can't-judge mark names no judgment
            last_event[judgment_id] = grade
    grade_of = dict(Judgment.objects.values_list("id", "grade"))
    mismatched = sum(1 for jid, grade in grade_of.items() if last_event.get(jid) != grade)
    print(
        json.dumps(
            {
                "judgments": judgments,
                "duplicates": duplicates,
                "events": JudgmentEvent.objects.count(),
                "grade_not_last_event": mismatched,
            }
        )
    )


# --- the load generator ---------------------------------------------------------------------------


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    saved: dict[str, int] = field(default_factory=dict)  # "assignment:candidate" -> last acknowledged grade
    raced: set[str] = field(default_factory=set)
    changes: int = 0
    errors: list[str] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def gunicorn(url: str) -> Iterator[str]:
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi:application",
        f"--bind=127.0.0.1:{port}",
        f"--workers={WORKERS}",
        "--worker-class=gthread",
        f"--threads={THREADS}",
        "--keep-alive=75",
        "--log-level=warning",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, env=_django_env(url))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/health/", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not come up")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


async def _login(client: httpx.AsyncClient, username: str) -> str:
    page = await client.get("/accounts/login/")
    token = client.cookies["csrftoken"]
    form = {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token}
    response = await client.post("/accounts/login/", data=form, headers={"Referer": str(page.url)})
    if response.status_code != 302:
        raise RuntimeError(f"login of {username} failed: {response.status_code}")
    return str(client.cookies["csrftoken"])


async def _save(
    client: httpx.AsyncClient, tally: Tally, token: str, assignment: int, candidate: str, grade: int
) -> None:
    body = {"candidate": candidate, "grade": grade, "time_spent_ms": 900}
    started = time.perf_counter()
    try:
        response = await client.post(
            f"/assignments/{assignment}/grades/", json=body, headers={"X-CSRFToken": token}
        )
    except httpx.TransportError as exc:
        tally.errors.append(f"transport: {exc!r}")
        return
    tally.latencies_ms.append((time.perf_counter() - started) * 1000)
    if response.status_code != 200:
        tally.errors.append(f"{response.status_code} {response.text[:120]}")
        return
    data = response.json()
    tally.saved[f"{assignment}:{candidate}"] = data["grade"]
    tally.changes += bool(data["changed"])


@dataclass
class RaterSession:
    index: int
    tab: httpx.AsyncClient
    token: str
    work: list[tuple[int, list[str]]]  # (assignment, candidate tokens in page order)


async def _open_session(base: str, shape: str, index: int) -> RaterSession:
    """Log in and open each assignment's grading page, as a rater does before grading."""
    tab = httpx.AsyncClient(
        base_url=base, trust_env=False, timeout=30, limits=httpx.Limits(max_connections=2)
    )
    token = await _login(tab, f"{shape.replace(' ', '-')}-rater{index:02d}")
    queue = await tab.get("/queue/")
    work = []
    for assignment in dict.fromkeys(int(a) for a in re.findall(r'href="/assignments/(\d+)/"', queue.text)):
        page = await tab.get(f"/assignments/{assignment}/")
        work.append((assignment, re.findall(r'data-candidate="([0-9a-f]+)"', page.text)))
    return RaterSession(index=index, tab=tab, token=token, work=work)


async def _grade(session: RaterSession, tally: Tally, pause: float) -> None:
    rng = random.Random(session.index)
    racing = session.index % RACING_EVERY == RACING_EVERY - 1  # raters 3, 7, 11...; the solo rater never
    if pause:
        # People do not grade in lockstep: each starts somewhere in the first pause, and each pause varies
        # by +-50% around its mean (same seed, same schedule).
        await asyncio.sleep(rng.uniform(0, pause))
    for assignment, candidates in session.work:
        for candidate in candidates:
            grade = rng.randint(0, 3)
            if racing and rng.random() < 0.5:
                # The same session in a second tab saves the same document at the same moment.
                tally.raced.add(f"{assignment}:{candidate}")
                await asyncio.gather(
                    _save(session.tab, tally, session.token, assignment, candidate, grade),
                    _save(session.tab, tally, session.token, assignment, candidate, (grade + 1) % 4),
                )
            else:
                await _save(session.tab, tally, session.token, assignment, candidate, grade)
            if pause:
                await asyncio.sleep(rng.uniform(0.5 * pause, 1.5 * pause))


async def _load(base: str, shape: str) -> tuple[Tally, float]:
    """All raters log in and open their pages first (PBKDF2 logins are deliberately slow and are not
    what is measured); then all start grading at once and only the saves are timed."""
    sessions = await asyncio.gather(*(_open_session(base, shape, i) for i in range(SHAPES[shape]["raters"])))
    tally = Tally()
    pause = float(SHAPES[shape]["pause"])
    started = time.perf_counter()
    try:
        await asyncio.gather(*(_grade(session, tally, pause) for session in sessions))
    finally:
        for session in sessions:
            await session.tab.aclose()
    return tally, time.perf_counter() - started


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def run_shape(url: str, base: str, shape: str) -> dict[str, Any]:
    _manage(url, "-m", "benchmarks.bench_grading", "seed", shape)
    before = json.loads(_manage(url, "-m", "benchmarks.bench_grading", "count"))
    load_before = os.getloadavg()[0]
    tally, wall = asyncio.run(_load(base, shape))
    load_after = os.getloadavg()[0]
    after = json.loads(_manage(url, "-m", "benchmarks.bench_grading", "count"))
    new = {k: v for k, v in after["judgments"].items() if k not in before["judgments"]}
    lost = sorted(set(tally.saved) - set(new))
    unexpected = sorted(set(new) - set(tally.saved))
    # A document saved by one tab at a time must hold exactly the last grade the server acknowledged.
    wrong = [k for k, grade in tally.saved.items() if k not in tally.raced and new.get(k) != grade]
    return {
        "shape": shape,
        "load": f"{load_before:.1f} / {load_after:.1f}",
        "saves": len(tally.latencies_ms),
        "raced": len(tally.raced),
        "errors": len(tally.errors),
        "error_sample": tally.errors[:3],
        "wall": wall,
        "p50": _percentile(tally.latencies_ms, 50),
        "p95": _percentile(tally.latencies_ms, 95),
        "p99": _percentile(tally.latencies_ms, 99),
        "max": max(tally.latencies_ms),
        "mean": statistics.fmean(tally.latencies_ms),
        "acknowledged": len(tally.saved),
        "judgments": len(new),
        "lost": len(lost),
        "unexpected": len(unexpected),
        "wrong_grade": len(wrong),
        "duplicates": after["duplicates"],
        "events": after["events"] - before["events"],
        "changes": tally.changes,
        "grade_not_last_event": after["grade_not_last_event"],
    }


def main() -> None:
    url = bench_database_url()
    recreate_database(url)
    _manage(url, "manage.py", "migrate", "--noinput", "-v0")
    with gunicorn(url) as base:
        asyncio.run(_warm_up(base))
        results = [run_shape(url, base, shape) for shape in SHAPES]
    for r in results:
        print(json.dumps({k: v for k, v in r.items() if k != "error_sample"}), flush=True)
        if r["error_sample"]:
            print("errors:", r["error_sample"], flush=True)
    write_section("grading", _markdown(results))


async def _warm_up(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, trust_env=False) as client:
        for _ in range(WORKERS * THREADS):
            await client.get("/health/")


def _markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "## Grade saving: 20 concurrent raters, PostgreSQL",
        "",
        f"`benchmarks/bench_grading.py`: gunicorn ({WORKERS} workers x {THREADS} threads, DEBUG off) on a "
        "loopback port against a PostgreSQL database of its own (persistent connections, `conn_max_age=60`). "
        "Simulated raters (httpx), each logged in through the form and with its grading pages open, save a "
        f"grade for each of the {CANDIDATES} candidates of their assignments through the page's JSON "
        "endpoint with the CSRF header; every fourth rater races a second tab on half of its documents "
        "(two saves of the same document at once, different grades). Latency is measured by the client, "
        "per request. The load generator, gunicorn and PostgreSQL share this machine's "
        f"{os.cpu_count()} CPUs with whatever else runs on it: the load average (1 min) before and after "
        "each run is in the table.",
        "",
        "| load | saves | raced pairs | wall (s) | saves/s | p50 ms | p95 ms | p99 ms | max ms | errors "
        "| load avg |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        lines.append(
            f"| {SHAPES[r['shape']]['label']} | {r['saves']:,} | {r['raced']} | {r['wall']:.1f} | "
            f"{r['saves'] / r['wall']:,.0f} | {r['p50']:.1f} | **{r['p95']:.1f}** | {r['p99']:.1f} | "
            f"{r['max']:.1f} | {r['errors']} | {r['load']} |"
        )
    lines += [
        "",
        "Counted in the database afterwards:",
        "",
        "| load | documents acknowledged | judgments | lost | unexpected | duplicates | not the last "
        "acknowledged grade | history events | acknowledged changes | grade differs from its last event |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r['shape']} | {r['acknowledged']:,} | {r['judgments']:,} | {r['lost']} | "
            f"{r['unexpected']} | {r['duplicates']} | {r['wrong_grade']} | {r['events']:,} | "
            f"{r['changes']:,} | {r['grade_not_last_event']} |"
        )
    paced = next(r for r in results if r["shape"] == "paced")
    intact = all(
        not (r["lost"] or r["unexpected"] or r["duplicates"] or r["wrong_grade"] or r["grade_not_last_event"])
        and r["events"] == r["changes"]
        for r in results
    )
    lines += [
        "",
        f"Target: p95 under 50 ms with 20 concurrent raters, and zero lost or duplicated judgments. Latency: "
        f"the paced run's p95 is {paced['p95']:.1f} ms, which {'meets' if paced['p95'] < 50 else 'misses'} "
        f"the target on this machine. Integrity: {'every run is intact' if intact else 'NOT intact'} (no "
        "judgment lost, unexpected or duplicated; every document holds the last grade acknowledged to a "
        "single tab, every raced document its last event's grade; one history event per acknowledged "
        "change). The solo run is the service time without queueing; the flat-out run shows where the "
        "machine saturates, its latency being queueing for CPUs shared by client, server and database.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "seed":
        seed(sys.argv[2])
    elif len(sys.argv) > 1 and sys.argv[1] == "count":
        count()
    else:
        main()
