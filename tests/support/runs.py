"""Builders shared by the run tests (unit tests with eager Celery, and the worker-process integration
tests): golden versions, targets, and a golden file whose queries a stub server can answer by text."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import User

from assay.golden.format import dump_json
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from evaluation.models import EvaluationRun, QueryRunResult, SearchTarget
from evaluation.runs.services import run_create, target_create
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.stub_server import StubServer


def golden_file(
    n: int = 6,
    *,
    version: str = "2026-08-01",
    strata: Sequence[str] = ("billing", "docs"),
    keys: bool = False,
    **extra: Any,
) -> GoldenFile:
    """Queries q-1..q-n with texts `query 1`.. and judgments d1=3, d2=2, d4=1 (the stub's default reply is
    d1, d2, d3); strata alternate. With `keys`, each judgment carries the key `key:<doc id>`."""
    queries = []
    for i in range(1, n + 1):
        judgments = tuple(
            Judgment(doc, grade, key=f"key:{doc}" if keys else None)
            for doc, grade in (("d1", 3), ("d2", 2), ("d4", 1))
        )
        queries.append(
            GoldenQuery(
                id=f"q-{i}",
                text=f"query {i}",
                judgments=judgments,
                stratum=strata[(i - 1) % len(strata)] if strata else None,
                locale="en-US",
                filters={"product": "billing"} if i % 2 else {},
            )
        )
    return GoldenFile(version=version, queries=tuple(queries), rubric="help-center@1", **extra)


def make_version(
    golden_set: GoldenSet, golden: GoldenFile | None = None, name: str | None = None
) -> GoldenVersion:
    golden = golden or golden_file()
    content = dump_json(golden)
    return GoldenVersion.objects.create(
        golden_set=golden_set,
        name=name or golden.version,
        content=content,
        sha256=hashlib.sha256(content).hexdigest(),
        rubric_name="help-center",
        rubric_version=1,
        k=golden.k,
        relevant_min_grade=golden.relevant_min_grade,
        scale_min=golden.scale.min,
        scale_max=golden.scale.max,
        counts={
            "queries": {"core": len(golden.queries)},
            "judgments": sum(len(q.judgments) for q in golden.queries),
        },
    )


def make_target(
    url: str, golden_set: GoldenSet, *, name: str = "staging", owner: User | None = None, **settings: Any
) -> SearchTarget:
    settings.setdefault("timeout", 5.0)
    settings.setdefault("retries", 0)
    settings.setdefault("concurrency", 4)
    return target_create(name=name, url=url, owner=owner, golden_sets=[golden_set], **settings)


@contextmanager
def eager_celery() -> Iterator[None]:
    """Run tasks in-process (unit tests only: integration tests use real workers, tests/integration/)."""
    from config.celery import app

    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    try:
        yield
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = before


# --- fixtures: registered for every test by `pytest_plugins` in tests/conftest.py; each is named
# *_fixture with its short name given to pytest, so the module's own names never clash with a parameter.

RunFactory = Callable[..., EvaluationRun]


@pytest.fixture(name="stub")
def stub_fixture() -> Iterator[StubServer]:
    """A loopback stub engine answering every query with d1, d2, d3."""
    with StubServer() as server:
        yield server


@pytest.fixture(name="version")
def version_fixture(golden_set: GoldenSet) -> GoldenVersion:
    return make_version(golden_set)


@pytest.fixture(name="target")
def target_fixture(stub: StubServer, golden_set: GoldenSet) -> SearchTarget:
    return make_target(f"{stub.url}/search", golden_set)


@pytest.fixture(name="finished")
def finished_fixture(
    django_capture_on_commit_callbacks: Any, version: GoldenVersion, target: SearchTarget, rita: User
) -> RunFactory:
    """Create a run (default: `version` on `target`, by rita) and let it go all the way in-process."""

    def run(**kwargs: Any) -> EvaluationRun:
        kwargs.setdefault("golden_version", version)
        kwargs.setdefault("target", target)
        kwargs.setdefault("triggered_by", rita)
        with eager_celery(), django_capture_on_commit_callbacks(execute=True):
            created = run_create(**kwargs)
        created.refresh_from_db()
        return created

    return run


def failing_run(golden_set: GoldenSet, target: SearchTarget, **fields: Any) -> EvaluationRun:
    """A finished run of a new version of the set on `target` with verdict fail (one gate failure): what a
    notification is sent for, without running anything."""
    fields.setdefault("golden_version", make_version(golden_set, name=f"v-{EvaluationRun.objects.count()}"))
    return EvaluationRun.objects.create(
        target=target,
        status=EvaluationRun.Status.SUCCEEDED,
        verdict=EvaluationRun.Verdict.FAIL,
        gate={"failures": [{"kind": "errors", "message": "q-2 errored"}], "warnings": [], "notes": []},
        **fields,
    )


def run_finished(run: EvaluationRun) -> bool:
    """Whether the run's status is final (the row read again)."""
    run.refresh_from_db()
    return run.status in EvaluationRun.FINAL


def one_result_per_query(run: EvaluationRun) -> list[str]:
    """The run's result rows' query ids in number order (q-2 before q-10), asserting none repeats."""
    ids = list(QueryRunResult.objects.filter(run=run).values_list("query_id", flat=True))
    assert len(ids) == len(set(ids)), "a query has more than one result"
    return sorted(ids, key=lambda q: int(q.split("-")[1]))
