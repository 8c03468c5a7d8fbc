"""The import page's limits in every format it reads (docs/labeling.md, "Imports"): a file of more queries
or judgments than the page takes is refused in words naming the limit's setting and the command to use
instead, before anything converts or checks it, and nothing is written; a file at the limits imports; and
the conversion and planning run outside any transaction, so a rater's grade saved meanwhile waits for
nothing."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.urls import reverse

from assay.convert.formats import GOLDEN_FORMATS, upload_formats
from golden_io import services
from golden_io.foreign import JudgmentsFormat
from golden_io.services import imports
from labeling import services as labeling_services
from labeling.models import Assignment, GoldenSet, Judgment
from tests import factories
from tests.golden_io.test_import_merge import as_file, partial
from tests.support.evaluation import page_text
from tests.support.rich_set import dump, rich_set

pytestmark = pytest.mark.django_db

READ = [f.name for f in upload_formats()]
# partial(): two queries, six judgments.
QUERIES, JUDGMENTS = 2, 6


@pytest.fixture
def gset() -> GoldenSet:
    return rich_set()


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files converted (another format) or parsed (a golden file) by the import: the real
    functions, wrapped to record each call."""
    calls: list[str] = []
    convert, parse = imports.golden_from_format, imports.parse

    def converting(**kwargs: Any) -> bytes | None:
        calls.append(kwargs["source"])
        return convert(**kwargs)

    def parsing(data: bytes) -> Any:
        calls.append("parse")
        return parse(data)

    monkeypatch.setattr(imports, "golden_from_format", converting)
    monkeypatch.setattr(imports, "parse", parsing)
    return calls


@pytest.mark.parametrize(
    ("limit", "code", "setting"),
    [
        ({"ASSAY_WEB_GOLDEN_MAX_QUERIES": QUERIES - 1}, "too_many_queries", "ASSAY_WEB_GOLDEN_MAX_QUERIES"),
        (
            {"ASSAY_WEB_GOLDEN_MAX_JUDGMENTS": JUDGMENTS - 1},
            "too_many_judgments",
            "ASSAY_WEB_GOLDEN_MAX_JUDGMENTS",
        ),
    ],
)
@pytest.mark.parametrize("name", READ)
def test_a_file_past_a_web_limit_is_refused_before_it_is_converted(
    gset: GoldenSet,
    name: str,
    limit: dict[str, int],
    code: str,
    setting: str,
    settings: Any,
    tmp_path: Path,
    conversions: list[str],
) -> None:
    for key, value in limit.items():
        setattr(settings, key, value)
    before = dump(gset)
    data, fmt, source = as_file(partial(gset), name, tmp_path)

    report, changes, record = services.golden_import_preview(
        golden_set=gset, data=data, source=source, by=None, fmt=fmt, web_limits=True
    )

    assert [p.code for p in report.problems] == [code]
    what = code.removeprefix("too_many_")
    most = getattr(settings, setting)
    command = f"python manage.py import_golden {gset.slug} <file>"
    if name not in GOLDEN_FORMATS:
        command += f" --from {name}" + (" --topics <topics file>" if name == "trec-qrels" else "")
    assert report.problems[0].message == (
        f"the file holds more than {most} {what}; a file uploaded here may hold at most {most} ({setting}), "
        f"so that it is checked and written within one web request. Import it on the server with: {command}"
    )
    assert conversions == []  # refused on the count: never converted, never parsed
    assert (changes, record) == (None, None)
    assert dump(gset) == before


@pytest.mark.parametrize("name", READ)
def test_a_file_at_the_web_limits_imports(
    gset: GoldenSet, name: str, settings: Any, tmp_path: Path, conversions: list[str]
) -> None:
    settings.ASSAY_WEB_GOLDEN_MAX_QUERIES, settings.ASSAY_WEB_GOLDEN_MAX_JUDGMENTS = QUERIES, JUDGMENTS
    data, fmt, source = as_file(partial(gset), name, tmp_path)

    report = services.golden_import(golden_set=gset, data=data, source=source, fmt=fmt, web_limits=True)

    assert report.ok, report.problems
    assert report.counts["labels added"] == 3 and report.counts["queries created"] == 1
    assert conversions  # read in full once admitted


def test_the_page_refuses_a_file_past_the_judgment_limit_in_words(
    client: Client, gset: GoldenSet, rita: User, settings: Any, tmp_path: Path
) -> None:
    gset.reviewers.add(rita)
    client.force_login(rita)
    settings.ASSAY_WEB_GOLDEN_MAX_JUDGMENTS = 5
    data, _, _ = as_file(partial(gset), "quepid-csv", tmp_path)
    before = dump(gset)

    response = client.post(
        reverse("golden_io:golden_import", args=[gset.slug]),
        {"file": SimpleUploadedFile("ratings.csv", data), "format": "quepid-csv", "mode": "merge"},
    )

    assert response.status_code == 400
    text = page_text(response)
    assert "the file holds more than 5 judgments; a file uploaded here may hold at most 5" in text
    assert "(ASSAY_WEB_GOLDEN_MAX_JUDGMENTS)" in text
    assert f"python manage.py import_golden {gset.slug} <file> --from quepid-csv" in text
    assert dump(gset) == before


@pytest.mark.django_db(transaction=True)
def test_a_grade_saved_while_an_import_converts_waits_for_nothing(
    golden_set: GoldenSet, assignment: Assignment, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On PostgreSQL, two connections: the import's (a thread) is held inside its conversion while the
    test's saves a rater's grade with a lock timeout of one second. The import's connection holds no lock
    and no transaction meanwhile, so the grade is saved; then the import goes on and is previewed."""
    converting, graded = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}
    convert = imports.golden_from_format

    def held(**kwargs: Any) -> bytes | None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            seen["pid"] = cursor.fetchone()[0]
        seen["atomic"] = connection.in_atomic_block
        converting.set()
        assert graded.wait(timeout=60)
        return convert(**kwargs)

    monkeypatch.setattr(imports, "golden_from_format", held)
    csv = b"query,docid,rating\nrefund policy for annual plan,%s,1\n" % (
        assignment.query.candidates.order_by("best_rank").first().document.doc_id.encode()  # type: ignore[union-attr]
    )
    result: dict[str, Any] = {}

    def preview() -> None:
        try:
            report, changes, _ = services.golden_import_preview(
                golden_set=GoldenSet.objects.get(pk=golden_set.pk),
                data=csv,
                source="ratings.csv",
                by=None,
                fmt=JudgmentsFormat("quepid-csv"),
                web_limits=True,
            )
            result["ok"], result["changes"] = report.ok, changes
        except Exception as exc:  # reported below, not lost in the thread
            result["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=preview)
    thread.start()
    try:
        assert converting.wait(timeout=60)
        with connection.cursor() as cursor:
            cursor.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", [seen["pid"]])
            state = cursor.fetchone()[0]
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE pid = %s AND locktype <> 'virtualxid'", [seen["pid"]]
            )
            locks = cursor.fetchone()[0]
            cursor.execute("SET lock_timeout = '1s'")
        candidate = assignment.query.candidates.order_by("best_rank").first()
        assert candidate is not None
        labeling_services.judgment_submit(
            assignment_id=assignment.pk, rater=assignment.rater, candidate_id=candidate.pk, grade=2
        )
    finally:
        graded.set()
        thread.join(timeout=120)
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert (state, locks, seen["atomic"]) == ("idle", 0, False)
    assert Judgment.objects.get(assignment=assignment, document=candidate.document).grade == 2
    assert "error" not in result, result.get("error")
    assert result["ok"] and not result["changes"].empty


@pytest.mark.parametrize("broken", [False, True])
def test_a_set_the_next_freeze_takes_is_checked_once_under_the_lock(
    gset: GoldenSet, broken: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The freeze check of the set before the writes runs outside the transaction; only a set that has
    reasons to be refused already is checked again under the lock (so a reason mended meanwhile is not
    taken for one it had). Each call records whether it ran inside the transaction."""
    if broken:  # a critical query without a judgment: the next freeze refuses the set already
        factories.QueryFactory.create(golden_set=gset, external_id="q-0900", text="lost", critical=True)
    under_lock: list[bool] = []
    check = imports._freeze_problems
    test_blocks = len(connection.atomic_blocks)  # the test's own transaction

    def recorded(golden_set: GoldenSet) -> list[str]:
        under_lock.append(len(connection.atomic_blocks) > test_blocks)
        return check(golden_set)

    monkeypatch.setattr(imports, "_freeze_problems", recorded)
    data, fmt, source = as_file(partial(gset), "golden", tmp_path)

    report, _, record = services.golden_import_preview(
        golden_set=gset, data=data, source=source, by=None, fmt=fmt
    )

    assert report.ok and record is not None, report.problems
    assert under_lock == ([False, True, True] if broken else [False, True])
