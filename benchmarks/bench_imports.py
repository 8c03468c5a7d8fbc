"""Golden-file imports: refusals on the web page; the preview, confirmation and undo of 10,000 queries, what
a rater's grade save waits meanwhile, before and after they stopped writing under the set's lock.

- **Refusals.** A file of 100,000 rows in each format the import page reads (written by assay.convert's
  writers; BEIR zipped, TREC qrels with topics), as 20,000 queries of 5 judgments and as 1,000 queries of
  100, posted to the page (`/sets/<slug>/import-golden/`) by the set's reviewer through Django's test
  client (DEBUG off, PostgreSQL): seconds to the worded refusal, the median of 3.
- **10,000 queries.** A golden file of 10,000 queries of 5 judgments into a set of 100 documents that has
  no query yet ("new"), then a file of the same queries with every grade changed ("regraded": 50,000
  labels changed), each previewed then confirmed, then both undone (the regrade first, then the import
  that created the queries: 10,000 queries and their 50,000 labels and pool candidates deleted), on
  PostgreSQL and on SQLite (`make run`'s WAL file). Meanwhile a probe on its own connection tries the
  lock every 10 ms without waiting (PostgreSQL: the set's row as imports, undos and freezes take it,
  `SELECT ... FOR NO KEY UPDATE NOWAIT`; SQLite: the database's write lock, `BEGIN IMMEDIATE`), and a
  rater saves a grade every 0.1 s through `labeling.services.judgment_submit` on another connection (on
  SQLite a save waits for the write lock up to `ASSAY_SQLITE_TIMEOUT`, 20 s, then fails "database is
  locked"). The lock's figure is the longest stretch the probe found it held.
- **Before and after.** The same measurement runs against the code of commit `BEFORE` (the import whose
  confirmation and undo wrote every row under the set's lock, the undo deleting through Django's
  cascade), extracted with `git archive` next to this one, in the same run: each twice, the two codes'
  order alternating (the load of a shared machine moves while they run).
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks import bench_grading
from benchmarks._report import measure_in_django, write_section

REPO = Path(__file__).resolve().parent.parent
# The code before: the import whose confirmation and undo wrote under the set's lock (the last commit
# without this).
BEFORE = "cafa7d148c8ac895a4f18ab5e2a9f5712e1dc50b"
QUERIES, PER_QUERY, DOCUMENTS = 10_000, 5, 100
SHAPES = ((20_000, 5), (1_000, 100))  # 100,000 rows each
PROBE_EVERY_S, SAVE_EVERY_S = 0.01, 0.1
REFUSAL_REPEAT = 3
ROUNDS = 2
FIGURES = ("seconds", "lock_longest", "save_max")
STEPS = ("preview", "confirm", "undo")


def bench_database_url() -> str:
    return bench_grading.bench_database_url().replace("_bench_grading", "_bench_imports")


# --- inside the Django process (`python -m benchmarks.bench_imports measure <part>`) ----------------------


def _seed() -> dict[str, Any]:
    """The set (100 documents, no query), its reviewer, and a rater with a query of 20 candidates."""
    from django.contrib.auth.models import Group, User

    from labeling.models import Assignment, Candidate, Document, GoldenSet, Query, Rubric

    rubric = Rubric.objects.create(
        name="bench", grades=[{"grade": g, "label": str(g), "meaning": str(g)} for g in (3, 2, 1, 0)]
    )
    golden_set = GoldenSet.objects.create(slug="bench", name="Bench", surface="bench", rubric=rubric)
    reviewer = User.objects.create_user("reviewer", password="-")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    golden_set.reviewers.add(reviewer)
    rater = User.objects.create_user("rater", password="-")
    rater.groups.add(Group.objects.get(name="raters"))
    golden_set.raters.add(rater)
    docs = Document.objects.bulk_create(
        [
            Document(golden_set=golden_set, doc_id=f"d{i}", title=f"Article {i}", content_hash=f"h{i}")
            for i in range(DOCUMENTS)
        ]
    )
    # The rater's query is not in the files: their saves and the import touch different rows.
    query = Query.objects.create(golden_set=golden_set, external_id="rater-1", text="rater's query")
    candidates = Candidate.objects.bulk_create(
        [
            Candidate(query=query, document=doc, provenance=[{"system": "bm25", "rank": r}], best_rank=r)
            for r, doc in enumerate(docs[:20], start=1)
        ]
    )
    assignment = Assignment.objects.create(query=query, rater=rater)
    return {
        "set": golden_set.pk,
        "rater": rater.pk,
        "assignment": assignment.pk,
        "candidates": [c.pk for c in candidates],
    }


def _golden(queries: int, per_query: int, shift: int = 0, docs: int | None = None) -> Any:
    from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale

    return GoldenFile(
        version=f"bench-{shift}",
        queries=tuple(
            GoldenQuery(
                f"q-{i:06d}",
                f"query number {i}",
                tuple(
                    Judgment(f"d{(i + j) % docs}" if docs else f"d{i}-{j}", (j + shift) % 4)
                    for j in range(per_query)
                ),
            )
            for i in range(queries)
        ),
        k=10,
        relevant_min_grade=1,
        scale=Scale(0, 3),
        rubric="bench@1",
    )


class _Probe(threading.Thread):
    """Tries the lock every PROBE_EVERY_S without waiting; keeps the stretches it found it held."""

    def __init__(self, set_pk: int) -> None:
        super().__init__(daemon=True)
        from django.db import connection

        self.settings = dict(connection.settings_dict)
        self.vendor = connection.vendor
        self.set_pk = set_pk
        self.stop = threading.Event()
        self.longest = 0.0
        self.total = 0.0

    def _connect(self) -> Callable[[], bool]:
        """A function answering whether the lock is held now."""
        s = self.settings
        if self.vendor == "sqlite":
            db = sqlite3.connect(s["NAME"], timeout=0, isolation_level=None)

            def held_sqlite() -> bool:
                try:
                    db.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError:
                    return True
                db.execute("ROLLBACK")
                return False

            return held_sqlite
        import psycopg

        pg = psycopg.connect(
            host=s["HOST"], port=s["PORT"] or 5432, user=s["USER"], password=s["PASSWORD"], dbname=s["NAME"]
        )

        def held_pg() -> bool:
            try:
                with pg.transaction():
                    pg.execute(
                        "SELECT id FROM labeling_goldenset WHERE id = %s FOR NO KEY UPDATE NOWAIT",
                        [self.set_pk],
                    )
            except psycopg.errors.LockNotAvailable:
                return True
            return False

        return held_pg

    def run(self) -> None:
        held = self._connect()
        since: float | None = None
        while not self.stop.is_set():
            now = time.perf_counter()
            if held():
                since = now if since is None else since
            elif since is not None:
                self.longest = max(self.longest, now - since)
                self.total += now - since
                since = None
            self.stop.wait(PROBE_EVERY_S)
        if since is not None:
            self.longest = max(self.longest, time.perf_counter() - since)
            self.total += time.perf_counter() - since


class _Rater(threading.Thread):
    """Saves a grade every SAVE_EVERY_S on its own connection; keeps each save's seconds and failures."""

    def __init__(self, ids: dict[str, Any]) -> None:
        super().__init__(daemon=True)
        self.ids = ids
        self.stop = threading.Event()
        self.saves: list[float] = []
        self.failures: list[str] = []

    def run(self) -> None:
        from django.contrib.auth.models import User
        from django.db import connection

        from labeling.services import judgment_submit

        rater = User.objects.get(pk=self.ids["rater"])
        candidates = self.ids["candidates"]
        n = 0
        try:
            while not self.stop.is_set():
                started = time.perf_counter()
                try:
                    judgment_submit(
                        assignment_id=self.ids["assignment"],
                        rater=rater,
                        candidate_id=candidates[n % len(candidates)],
                        grade=n % 4,
                    )
                    self.saves.append(time.perf_counter() - started)
                except Exception as exc:  # a save refused ("database is locked"): counted, not raised
                    self.failures.append(f"{type(exc).__name__}: {exc}"[:80])
                    self.saves.append(time.perf_counter() - started)
                n += 1
                self.stop.wait(SAVE_EVERY_S)
        finally:
            connection.close()


@contextmanager
def _watched(ids: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The probe and the rater running around the block; their figures in the dict afterwards."""
    probe, rater = _Probe(ids["set"]), _Rater(ids)
    probe.start()
    rater.start()
    time.sleep(0.3)  # both going before the step starts
    figures: dict[str, Any] = {}
    started = time.perf_counter()
    try:
        yield figures
    finally:
        figures["seconds"] = time.perf_counter() - started
        time.sleep(0.2)
        probe.stop.set()
        rater.stop.set()
        probe.join()
        rater.join()
        saves = sorted(rater.saves)
        figures |= {
            "lock_longest": probe.longest,
            "saves": len(saves),
            "failed": len(rater.failures),
            "failure": rater.failures[0] if rater.failures else "",
            "save_median": statistics.median(saves) if saves else None,
            "save_max": saves[-1] if saves else None,
        }


def _imports(ids: dict[str, Any]) -> list[dict[str, Any]]:
    """The new and the regraded file, each previewed then confirmed, then both undone (latest first),
    watched."""
    from assay.golden.format import dump_json
    from golden_io import services
    from labeling.models import FrozenLabel, GoldenSet

    rows = []
    for scenario, shift in (("new", 0), ("regraded", 1)):
        data = dump_json(_golden(QUERIES, PER_QUERY, shift, DOCUMENTS))
        golden_set = GoldenSet.objects.get(pk=ids["set"])
        with _watched(ids) as preview:
            report, changes, record = services.golden_import_preview(
                golden_set=golden_set, data=data, source=f"{scenario}.json", by=None
            )
        if record is None or changes is None:
            raise SystemExit(f"{scenario}: the preview was refused: {report.problems[:3]}")
        with _watched(ids) as confirm:
            written, _ = services.golden_import_confirm(record=record, digest=changes.digest())
        if not written.ok:
            raise SystemExit(f"{scenario}: the confirmation was refused: {written.problems[:3]}")
        labels = FrozenLabel.objects.filter(query__golden_set_id=ids["set"]).count()
        rows += [
            {"scenario": scenario, "step": "preview", **preview},
            {"scenario": scenario, "step": "confirm", "labels": labels, **confirm},
        ]
    for scenario in ("regraded", "new"):
        record = services.import_undoable(golden_set=GoldenSet.objects.get(pk=ids["set"]))
        assert record is not None
        with _watched(ids) as undo:
            undone, _ = services.golden_import_undo(record=record, by=None)
        if not undone.ok:
            raise SystemExit(f"{scenario}: the undo was refused: {undone.problems[:3]}")
        labels = FrozenLabel.objects.filter(query__golden_set_id=ids["set"]).count()
        rows.append({"scenario": scenario, "step": "undo", "labels": labels, **undo})
    return rows


def _as_upload(golden: Any, name: str, folder: Path) -> tuple[bytes, dict[str, Any]]:
    """The file in format `name` as the page takes it: its bytes and the form's other fields."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from assay.convert.formats import FORMATS
    from assay.convert.options import Options

    spec = FORMATS[name]
    out = folder / name
    topics = folder / "topics.tsv" if name == "trec-qrels" else None
    files = spec.write(golden, out / "judgments" if spec.folder else out, Options(topics=topics))
    form: dict[str, Any] = {"format": name, "mode": "merge"}
    if spec.folder:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for path, body in files.items():
                archive.writestr(str(path.relative_to(out)), body)
        return buffer.getvalue(), form
    if topics is not None:
        form["topics"] = SimpleUploadedFile("topics.tsv", files[topics])
    return files[out], form


def _refusals(ids: dict[str, Any]) -> list[dict[str, Any]]:
    """Each format's 100,000-row files posted to the page: seconds to the refusal (median of 3)."""
    from django.contrib.auth.models import User
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    from assay.convert.formats import upload_formats

    client = Client()
    client.force_login(User.objects.get(username="reviewer"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in upload_formats():
            row: dict[str, Any] = {"format": fmt.name}
            for queries, per_query in SHAPES:
                folder = Path(tmp) / f"{fmt.name}-{queries}"
                folder.mkdir()
                data, form = _as_upload(_golden(queries, per_query), fmt.name, folder)
                times = []
                for _ in range(REFUSAL_REPEAT):
                    posted = dict(form, file=SimpleUploadedFile(f"ratings-{fmt.name}", data))
                    if "topics" in form:
                        posted["topics"] = SimpleUploadedFile("topics.tsv", form["topics"].read())
                        form["topics"].seek(0)
                    started = time.perf_counter()
                    response = client.post("/sets/bench/import-golden/", posted)
                    times.append(time.perf_counter() - started)
                    text = response.content.decode()
                    if response.status_code != 400 or "the file holds more than" not in text:
                        raise SystemExit(f"{fmt.name}: not refused for its size ({response.status_code})")
                row[f"{queries}x{per_query}"] = statistics.median(times)
                row[f"{queries}x{per_query} MB"] = len(data) / 1e6
            rows.append(row)
    return rows


def measure(part: str) -> None:
    """Migrate, seed, measure `part` (refusals or imports); print the figures as JSON on stdout."""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    ids = _seed()
    rows = _refusals(ids) if part == "refusals" else _imports(ids)
    print(json.dumps({"rows": rows}))


# --- the driver (`make bench`) -----------------------------------------------------------------------


@contextmanager
def _before_tree() -> Iterator[Path | None]:
    """The repository at BEFORE, with this script in it (None when this clone lacks the commit)."""
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{BEFORE}^{{commit}}"], check=False)
    if known.returncode:
        yield None
        return
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", BEFORE], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        shutil.copy(Path(__file__), Path(tmp) / "benchmarks" / "bench_imports.py")
        yield Path(tmp)


def _run(part: str, database_url: str, tree: Path) -> tuple[list[dict[str, Any]], float, float]:
    if database_url.startswith("postgres"):
        bench_grading.recreate_database(database_url)
    result, before, after = measure_in_django(
        "benchmarks.bench_imports", database_url, tree=tree, args=[part]
    )
    rows: list[dict[str, Any]] = result["rows"]
    return rows, before, after


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}" if value < 10 else f"{value:.0f}"


def _imports_measured(pg: str, loads: list[float]) -> list[dict[str, Any]]:
    """Every (database, code) measured ROUNDS times, the codes' order alternating between rounds so
    that neither always runs first."""
    rows: list[dict[str, Any]] = []
    with _before_tree() as before, tempfile.TemporaryDirectory() as var:
        trees = [("after", REPO)] + ([("before", before)] if before is not None else [])
        for round_ in range(ROUNDS):
            for database, url in (("PostgreSQL", pg), ("SQLite", f"sqlite:///{var}/bench.sqlite3")):
                for code, tree in trees if round_ % 2 == 0 else trees[::-1]:
                    Path(f"{var}/bench.sqlite3").unlink(missing_ok=True)
                    measured, *load = _run("imports", url, tree)
                    loads += load
                    rows += [{"database": database, "code": code, "round": round_, **row} for row in measured]
    return rows


def _cells(rows: list[dict[str, Any]], code: str, figure: str) -> str:
    """One figure of one code over the rounds, "first, second"."""
    found = sorted((row["round"], row[figure]) for row in rows if row["code"] == code)
    return ", ".join(_seconds(value) for _, value in found) or "-"


def main() -> None:
    pg = bench_database_url()
    loads: list[float] = []
    refusals, *load = _run("refusals", pg, REPO)
    loads += load
    imports = _imports_measured(pg, loads)
    lines = [
        "## Golden-file imports: refusals, the preview, the confirmation and the undo",
        "",
        f"`benchmarks/bench_imports.py`: {__doc__.split(chr(10), 2)[2].strip()}",
        "",
        f"Load average (1 min) between {min(loads):.1f} and {max(loads):.1f} while measuring, on a machine"
        " shared with whatever else runs on it: compare the figures with each other.",
        "",
        "**A file of 100,000 rows is refused on the page** (`ASSAY_WEB_GOLDEN_MAX_QUERIES` 10,000 and"
        " `ASSAY_WEB_GOLDEN_MAX_JUDGMENTS` 50,000; the count stops once past one), seconds:",
        "",
        "| format | 20,000 queries x 5 | 1,000 queries x 100 | file MB |",
        "| --- | ---: | ---: | ---: |",
    ]
    for row in refusals:
        a, b = (f"{q}x{n}" for q, n in SHAPES)
        lines.append(
            f"| {row['format']} | {row[a]:.2f} | {row[b]:.2f} | {row[a + ' MB']:.1f}, {row[b + ' MB']:.1f} |"
        )
    lines += [
        "",
        f"**10,000 queries of {PER_QUERY} judgments**, seconds, each cell the {ROUNDS} rounds in order; the"
        " lock is the set's row on PostgreSQL and the database's write lock on SQLite; the longest a rater's"
        " save took during the step:",
        "",
        "| database | file | step | seconds after | before | lock held after | before | longest save after"
        " | before |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    steps = sorted(
        {(row["database"], row["scenario"], row["step"]) for row in imports},
        key=lambda key: (key[0], key[1] != "new", STEPS.index(key[2])),
    )
    for database, scenario, step in steps:
        rows = [r for r in imports if (r["database"], r["scenario"], r["step"]) == (database, scenario, step)]
        cells = [_cells(rows, code, figure) for figure in FIGURES for code in ("after", "before")]
        lines.append(f"| {database} | {scenario} | {step} | {' | '.join(cells)} |")
    saves = sum(row["saves"] for row in imports)
    failures = [row for row in imports if row["failed"]]
    lines += ["", f"The rater saved {saves:,} grades in all;"]
    if failures:
        said = sorted({row["failure"] for row in failures})
        lines[-1] += (
            f" {sum(row['failed'] for row in failures)} saves failed, all with the code"
            f" {' and '.join(sorted({row['code'] for row in failures}))}: "
            + "; ".join(f"`{f}`" for f in said)
            + "."
        )
    else:
        lines[-1] += " none failed."
    if not any(row["code"] == "before" for row in imports):
        lines += ["", f"The code before (commit {BEFORE[:7]}) is not in this clone: measured after only."]
    write_section("imports", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:2] == ["measure"]:
        measure(sys.argv[2])
    else:
        main()
