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
from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale
from golden_io import selectors as golden_selectors
from golden_io import services
from golden_io.foreign import JudgmentsFormat
from golden_io.models import GoldenImport
from golden_io.services import import_planning
from labeling.models import Assignment, GoldenSet
from labeling.models import Judgment as Grade
from tests import factories
from tests.golden_io.test_import_merge import as_file, partial
from tests.support.evaluation import page_text
from tests.support.rich_set import dump, rich_set
from tests.support.threads import backend_state, grade_saved_while

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
    convert, parse = import_planning.golden_from_format, import_planning.parse

    def converting(**kwargs: Any) -> bytes | None:
        calls.append(kwargs["source"])
        return convert(**kwargs)

    def parsing(data: bytes) -> Any:
        calls.append("parse")
        return parse(data)

    monkeypatch.setattr(import_planning, "golden_from_format", converting)
    monkeypatch.setattr(import_planning, "parse", parsing)
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


# --------------------------------------------------------------------------------------------- 100,000 rows


def _rows(golden_set: GoldenSet, queries: int, per_query: int) -> GoldenFile:
    """A file of `queries` x `per_query` rows, every row a judgment."""
    rubric = golden_set.rubric
    return GoldenFile(
        version="big",
        queries=tuple(
            GoldenQuery(
                f"q-{i:06d}",
                f"query number {i}",
                tuple(Judgment(f"d{i}-{j}", j % 4) for j in range(per_query)),
            )
            for i in range(queries)
        ),
        k=golden_set.k,
        relevant_min_grade=golden_set.relevant_min_grade,
        scale=Scale(rubric.scale_min, rubric.scale_max),
        rubric=str(rubric),
    )


@pytest.fixture(scope="module")
def hundred_thousand_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, Any, str]]:
    """One file of 100,000 rows (1,000 queries of 100 judgments) in each format the page reads, written
    by assay.convert's writers."""
    from labeling.models import Rubric

    rubric = Rubric(name="four", version=1)
    golden_set = GoldenSet(slug="big", k=10, relevant_min_grade=1, rubric=rubric)
    golden = _rows(golden_set, 1_000, 100)
    files = {}
    for name in READ:
        files[name] = as_file(golden, name, tmp_path_factory.mktemp(name.replace("-", "_")))
    return files


@pytest.mark.parametrize("name", READ)
def test_a_file_of_100000_rows_in_every_format_is_refused_on_the_page_in_words(
    client: Client,
    gset: GoldenSet,
    rita: User,
    name: str,
    hundred_thousand_rows: dict[str, tuple[bytes, Any, str]],
) -> None:
    """With the page's default limits: refused in words naming the limit, its setting and the command,
    and nothing is written or kept."""
    gset.reviewers.add(rita)
    client.force_login(rita)
    data, fmt, source = hundred_thousand_rows[name]
    form: dict[str, Any] = {"file": SimpleUploadedFile(source, data), "format": name, "mode": "merge"}
    if fmt.topics:
        form["topics"] = SimpleUploadedFile(fmt.topics[0], fmt.topics[1])
    before = dump(gset)

    response = client.post(reverse("golden_io:golden_import", args=[gset.slug]), form)

    assert response.status_code == 400
    command = f"python manage.py import_golden {gset.slug} <file>"
    if name not in GOLDEN_FORMATS:
        command += f" --from {name}" + (" --topics <topics file>" if fmt.topics else "")
    assert (
        "the file holds more than 50,000 judgments; a file uploaded here may hold at most 50,000 "
        "(ASSAY_WEB_GOLDEN_MAX_JUDGMENTS), so that it is checked and written within one web request. "
        f"Import it on the server with: {command}"
    ) in page_text(response)
    assert dump(gset) == before
    assert not GoldenImport.objects.exists()


# --------------------------------------------------------------------------------------------- no lock


def _pause(event: threading.Event, released: threading.Event, seen: dict[str, Any]) -> None:
    """Record the calling connection's backend and whether it is in a transaction, then wait."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        seen["pid"] = cursor.fetchone()[0]
    seen["atomic"] = connection.in_atomic_block
    event.set()
    assert released.wait(timeout=60)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("stage", ["converting", "checking against the next freeze"])
def test_a_grade_saved_while_an_import_is_previewed_waits_for_nothing(
    golden_set: GoldenSet,
    assignment: Assignment,
    stage: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """On PostgreSQL, two connections: the preview's (a thread) is held while it converts the file, or
    while it checks the set as the changes would leave it against the next freeze (in memory), and the
    test's saves a rater's grade with a lock timeout of one second. The preview's connection holds no
    lock and no transaction meanwhile, so the grade is saved; then the preview goes on and is shown. The
    functions paused are the real ones, called after the pause."""
    reached, released = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}
    if stage == "converting":
        convert = import_planning.golden_from_format

        def converting(**kwargs: Any) -> bytes | None:
            _pause(reached, released, seen)
            return convert(**kwargs)

        monkeypatch.setattr(import_planning, "golden_from_format", converting)
    else:
        build = golden_selectors.working_golden_raw

        def checking(**kwargs: Any) -> GoldenFile:
            if kwargs.get("unwritten") is not None:  # the set as the changes would leave it
                _pause(reached, released, seen)
            return build(**kwargs)

        monkeypatch.setattr(golden_selectors, "working_golden_raw", checking)
    candidate = assignment.query.candidates.order_by("best_rank").first()
    assert candidate is not None
    csv = b"query,docid,rating\nrefund policy for annual plan,%s,1\n" % candidate.document.doc_id.encode()
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
        assert reached.wait(timeout=60)
        state = backend_state(seen["pid"])
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE pid = %s AND locktype <> 'virtualxid'", [seen["pid"]]
            )
            locks = cursor.fetchone()[0]
        saved_while_held = grade_saved_while(thread, assignment, candidate)
    finally:
        released.set()
        thread.join(timeout=120)
    assert (state, locks, seen["atomic"], saved_while_held) == ("idle", 0, False, True)
    assert Grade.objects.get(assignment=assignment, document=candidate.document).grade == 2
    assert "error" not in result, result.get("error")
    assert result["ok"] and not result["changes"].empty


@pytest.mark.parametrize("broken", [False, True])
def test_the_freeze_check_runs_before_any_transaction_in_preview_confirm_and_undo(
    gset: GoldenSet, broken: bool, rita: User, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The set is read as it is and as the changes would leave it, outside any transaction, for the
    preview, the confirmation and the undo: their transactions hold only the re-check and the writes.
    Each build of the working golden file records whether it ran inside a transaction."""
    if broken:  # a critical query without a judgment: the next freeze refuses the set already
        factories.QueryFactory.create(golden_set=gset, external_id="q-0900", text="lost", critical=True)
    calls: list[tuple[bool, bool]] = []
    build = golden_selectors.working_golden_raw
    test_blocks = len(connection.atomic_blocks)  # the test's own transaction

    def recorded(**kwargs: Any) -> GoldenFile:
        calls.append((kwargs.get("unwritten") is not None, len(connection.atomic_blocks) > test_blocks))
        return build(**kwargs)

    monkeypatch.setattr(golden_selectors, "working_golden_raw", recorded)
    data, fmt, source = as_file(partial(gset), "golden", tmp_path)

    report, changes, record = services.golden_import_preview(
        golden_set=gset, data=data, source=source, by=None, fmt=fmt
    )
    assert report.ok and record is not None and changes is not None, report.problems
    written, _ = services.golden_import_confirm(record=record, digest=changes.digest())
    assert written.ok, written.problems
    undone, _ = services.golden_import_undo(record=record, by=rita)
    assert undone.ok, undone.problems

    # Each step: the set as it is, then as its changes would leave it; never inside a transaction.
    assert calls == [(False, False), (True, False)] * 3
