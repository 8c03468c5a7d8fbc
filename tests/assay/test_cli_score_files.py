"""`assay score` / `assay validate` on files large enough for the fast readers (orjson, pyarrow), through
the installed console script: the same artifacts and the same messages as the careful readers, the orjson
artifact equal to the standard module's, and `--compact-ranks` artifacts the gate still compares."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from assay.artifacts import artifact_bytes
from assay.cli import runfile
from assay.golden import trec
from assay.golden.format import from_dict, parse, parse_columns
from assay.golden.trec import read_run
from assay.ranked import match_table
from assay.report import build_report
from assay.results import QueryResult
from tests.support.processes import REPO

ASSAY = Path(sys.executable).with_name("assay")
QUERIES = 2_000
DEPTH = 30


def assay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ASSAY), *args], capture_output=True, text=True, timeout=300, cwd=REPO)


def golden_data() -> dict[str, Any]:
    return {
        "version": "files-1",
        "k": 10,
        "queries": [
            {
                "id": f"q{i}",
                "text": f"query {i}",
                "judgments": [{"doc_id": f"d{(i * 7 + j) % 97}", "grade": (i + j) % 4} for j in range(12)],
            }
            for i in range(QUERIES)
        ],
    }


def run_text() -> str:
    """Over 1 MB, so `read_run` takes the pyarrow path; ties on score in every topic."""
    return "".join(
        f"q{i} Q0 d{(i * 5 + r) % 97} {r + 1} {(DEPTH - r) // 2} tag-a\n"
        for i in range(QUERIES)
        for r in range(DEPTH)
    )


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    golden, run = tmp_path / "golden.json", tmp_path / "run.trec"
    golden.write_text(json.dumps(golden_data(), indent=2))
    run.write_text(run_text())
    assert run.stat().st_size > trec._ARROW_MIN_CHARS
    return golden, run


def careful_run(text: str, monkeypatch: pytest.MonkeyPatch) -> trec.TrecRun:
    with monkeypatch.context() as patch:
        patch.setattr(trec, "_ARROW_MIN_CHARS", len(text) + 1)  # the line-by-line reading, whatever the size
        return read_run(text)


def test_the_pyarrow_reading_of_a_large_run_equals_the_line_by_line_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = run_text()
    fast = read_run(text)
    slow = careful_run(text, monkeypatch)
    assert list(fast.items()) == list(slow.items()) and fast.tags == slow.tags == ("tag-a",)


def test_score_writes_the_artifact_the_careful_readers_and_the_json_module_would(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden, run = files
    out = tmp_path / "artifact.json"

    proc = assay("score", "--golden", str(golden), "--run", str(run), "--out", str(out))

    assert proc.returncode == 0, proc.stderr
    careful_golden = from_dict(json.loads(golden.read_text()))
    assert parse(golden.read_bytes()) == careful_golden
    ranked = careful_run(run.read_text(), monkeypatch)
    results = {qid: QueryResult(query_id=qid, ids=ids) for qid, ids in ranked.items()}
    block = {
        "source": "score",
        "run_file": str(run),
        "golden_file": str(golden),
        "format": "trec",
        "tags": ["tag-a"],
    }
    report = build_report(careful_golden, results, run=block)
    old = json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    assert json.loads(out.read_text()) == json.loads(old) == report
    assert out.read_bytes() == artifact_bytes(report)


def test_orjson_artifacts_equal_the_json_modules_on_awkward_values() -> None:
    report = {
        "floats": [0.1, 1e-05, 1e16, 123456789.123, -0.0, 5e-324, 1.7976931348623157e308, 2.0],
        "text": 'naïve \u2028 "quoted" \\ 日本',
        "empty": {"list": [], "dict": {}},
        "nested": [{"b": 1, "a": None}, [True, False]],
    }
    text = artifact_bytes(report).decode()
    assert json.loads(text) == json.loads(json.dumps(report, indent=2, ensure_ascii=False)) == report
    assert list(json.loads(text)["nested"][0]) == ["b", "a"]  # insertion order, as before
    assert text.endswith("}\n")


def test_bad_lines_deep_in_a_large_run_get_the_careful_messages(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    golden, run = files
    lines = run.read_text().splitlines(keepends=True)
    lines[40_000] = "q5 Q0 d3 1 high tag-a\n"
    lines[50_000] = "q6 Q0 d3 1\n"
    lines[55_000] = "q7 Q0 d4 1 nan tag-a\n"
    run.write_text("".join(lines))

    proc = assay("score", "--golden", str(golden), "--run", str(run), "--out", str(tmp_path / "o.json"))

    assert proc.returncode == 2
    assert "line 40001: score 'high' is not a number" in proc.stderr
    assert "line 50001: expected at least 6 columns" in proc.stderr
    assert "line 55001: score 'nan' is not a number" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "o.json").exists()


def deep_run(path: Path) -> Path:
    """A run past the size `assay score` reads in a forked process: 2,000 topics x 320 documents."""
    with path.open("w") as out:
        for i in range(QUERIES):
            out.write("".join(f"q{i} Q0 x{r} {r + 1} {320 - r} tag-a\n" for r in range(320)))
    assert path.stat().st_size >= runfile.FORK_MIN_BYTES
    return path


def test_a_bad_golden_file_beside_a_forked_run_reader_is_named_and_the_reader_ends(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    # The run is read by a forked process while the golden file is decoded: the golden file's error is
    # the command's, and the reading process does not outlive it.
    golden, _ = files
    run = deep_run(tmp_path / "deep.trec")
    data = golden_data()
    data["queries"][7]["judgments"][0]["grade"] = 9
    golden.write_text(json.dumps(data))
    out = tmp_path / "o.json"

    proc = assay("score", "--golden", str(golden), "--run", str(run), "--out", str(out))

    assert proc.returncode == 2 and "grade: 9 is outside the scale 0..3" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()
    assert not _processes_naming(str(golden))  # a forked process keeps the command line it was forked with


def test_a_forked_run_reader_gives_the_same_artifact_and_the_same_messages(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    golden, _ = files
    run = deep_run(tmp_path / "deep.trec")
    out = tmp_path / "artifact.json"

    proc = assay("score", "--golden", str(golden), "--run", str(run), "--out", str(out))

    assert proc.returncode == 0, proc.stderr
    table = trec.read_run_table(str(run))  # read here, in this process
    assert table is not None
    block = {"source": "score", "run_file": str(run), "golden_file": str(golden)}
    columns = parse_columns(golden.read_bytes())
    expected = build_report(
        columns, match_table(columns, table), run={**block, "format": "trec", "tags": ["tag-a"]}
    )
    assert json.loads(out.read_text()) == json.loads(artifact_bytes(expected))

    with run.open("a") as lines:
        lines.write("q1 Q0 x0 1 high tag-a\n")
    proc = assay("score", "--golden", str(golden), "--run", str(run), "--out", str(tmp_path / "o.json"))
    assert proc.returncode == 2 and f"line {2_000 * 320 + 1}: score 'high' is not a number" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "o.json").exists()


def test_a_threaded_caller_reads_a_large_run_without_forking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forking beside another thread may copy a lock that thread holds, and the child then waits forever:
    # a caller running threads gets the thread reader.
    run = deep_run(tmp_path / "deep.trec")
    monkeypatch.setattr(multiprocessing, "get_context", lambda *_: pytest.fail("forked beside a thread"))
    with ThreadPoolExecutor(1) as busy:
        busy.submit(lambda: None).result()  # its thread stays alive until the block ends
        with runfile.beside(runfile.read_run_file, str(run)) as reading:
            table = reading().table
    assert table is not None and table.topics[:2] == ["q0", "q1"]


def _processes_naming(text: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue  # ended meanwhile
    return found


def test_validate_names_a_problem_deep_in_a_large_golden_file_as_before(tmp_path: Path) -> None:
    data = golden_data()
    data["queries"][1500]["judgments"][3]["grade"] = 7
    data["queries"][1700]["judgments"][0]["doc_id"] = "d 1"
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(data))

    proc = assay("validate", "--golden", str(golden))

    assert proc.returncode == 2
    assert 'queries[1500].judgments[3].grade: 7 is outside the scale 0..3 (query "q1500")' in proc.stderr
    assert 'queries[1700].judgments[0].doc_id: "d 1" contains whitespace' in proc.stderr


def test_compact_ranks_keep_the_top_k_and_the_gate_compares_such_artifacts(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    golden, run = files
    full, compact = tmp_path / "full.json", tmp_path / "compact.json"
    assert assay("score", "--golden", str(golden), "--run", str(run), "--out", str(full)).returncode == 0
    proc = assay(
        "score", "--golden", str(golden), "--run", str(run), "--out", str(compact), "--compact-ranks"
    )
    assert proc.returncode == 0, proc.stderr

    a, b = json.loads(full.read_text()), json.loads(compact.read_text())
    assert compact.stat().st_size < full.stat().st_size
    for row_full, row_compact in zip(a["per_query"], b["per_query"], strict=True):
        top = {d: r for d, r in row_full["ranks"].items() if r is not None and r <= 10}
        assert row_compact["ranks"] == top
        assert row_compact["grades"] == {d: row_full["grades"][d] for d in top}
        assert {k: v for k, v in row_compact.items() if k not in ("ranks", "grades")} == {
            k: v for k, v in row_full.items() if k not in ("ranks", "grades")
        }
    assert {k: v for k, v in a.items() if k != "per_query"} == {
        k: v for k, v in b.items() if k != "per_query"
    }

    for current, baseline in ((compact, full), (full, compact), (compact, compact)):
        gate = assay("gate", "--current", str(current), "--baseline", str(baseline))
        assert gate.returncode == 0, gate.stdout + gate.stderr
        assert "Traceback" not in gate.stderr
