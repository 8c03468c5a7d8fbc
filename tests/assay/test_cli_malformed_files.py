"""Every file a command reads, given a malformed file, makes it exit 2 with one worded line on stderr and
no traceback: deep nesting, UTF-16, latin-1, a huge integer, a truncated file, two files saved with a
byte-order mark run together, binary bytes, an empty file, a NUL inside a string, a directory, a file it
may not read. In-process through `assay.cli.main` for each command and file option, and once as a real
process. (`assay remote run` reads no file: its inputs are options and the server's answers,
tests/evaluation/runs/test_remote.py.)"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.cli import main
from tests.assay.test_cli import GOLDEN, assay, no_traceback

SEARCH = "http://127.0.0.1:9/search"  # never called: every case fails on its file first

CORPUS: dict[str, bytes] = {
    "deep nesting": b"[" * 100_000 + b"]" * 100_000,
    "UTF-16": json.dumps(GOLDEN).encode("utf-16"),
    "latin-1": '{"version": "caf\xe9", "queries": []}'.encode("latin-1"),
    "huge integer": b'{"version": "v", "k": ' + b"9" * 5000 + b', "queries": []}',
    "truncated": json.dumps(GOLDEN).encode()[:40],
    "two BOM files run together": b'\xef\xbb\xbf{"a": 1}\n\xef\xbb\xbf{"b": 2}\n',
    "binary": bytes(range(256)) * 4,
    "empty": b"",
    "NUL in a string": b'{"version": "v\x00"}',
}
SPECIAL = ("a directory", "unreadable")
# A write-only sysctl: reading it is refused even to root, for whom a chmod 000 file is readable.
WRITE_ONLY = Path("/proc/sys/vm/drop_caches")


@pytest.fixture
def good(tmp_path: Path) -> dict[str, Path]:
    """A valid golden file, run file and report, so that each case has exactly one bad file."""
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(GOLDEN))
    run = tmp_path / "run.jsonl"
    rows = [json.dumps({"query_id": q["id"], "ids": ["d1"]}) for q in GOLDEN["queries"]]
    run.write_text("\n".join(rows) + "\n")
    report = tmp_path / "report.json"
    assert main(["score", "--golden", str(golden), "--run", str(run), "--out", str(report)]) == 0
    return {"golden": golden, "run": run, "report": report, "out": tmp_path / "out.json"}


Argv = Callable[[dict[str, Path], str], list[str]]

# Every file option of every command, the others given good files.
SLOTS: dict[str, Argv] = {
    "run --golden": lambda g, f: ["run", "--golden", f, "--search-url", SEARCH, "--out", str(g["out"])],
    "run --template": lambda g, f: [
        *("run", "--golden", str(g["golden"]), "--search-url", SEARCH, "--out", str(g["out"])),
        *("--adapter", "elasticsearch", "--template", f),
    ],
    "score --golden": lambda g, f: ["score", "--golden", f, "--run", str(g["run"]), "--out", str(g["out"])],
    "score --run": lambda g, f: ["score", "--golden", str(g["golden"]), "--run", f, "--out", str(g["out"])],
    "gate --current": lambda g, f: ["gate", "--current", f, "--baseline", str(g["report"])],
    "gate --baseline": lambda g, f: ["gate", "--current", str(g["report"]), "--baseline", f],
    "gate --budgets": lambda g, f: [
        *("gate", "--current", str(g["report"]), "--baseline", str(g["report"]), "--budgets", f)
    ],
    "gate --noise": lambda g, f: [
        *("gate", "--current", str(g["report"]), "--baseline", str(g["report"]), "--noise", f)
    ],
    "gate --rescore-baseline --golden": lambda g, f: [
        *("gate", "--current", str(g["report"]), "--baseline", str(g["report"])),
        *("--rescore-baseline", "--golden", f),
    ],
    "gate --suggest-budgets": lambda g, f: ["gate", "--suggest-budgets", str(g["report"]), f],
    "validate --golden": lambda g, f: ["validate", "--golden", f],
}


def _bad_file(tmp_path: Path, name: str) -> str:
    if name == "a directory":
        return str(tmp_path)
    if name == "unreadable":
        path = tmp_path / "unreadable.json"
        path.write_text(json.dumps(GOLDEN))
        path.chmod(0)
        if os.access(path, os.R_OK):  # root reads it anyway
            if not WRITE_ONLY.exists():
                pytest.skip("running as root with no write-only file to read")
            return str(WRITE_ONLY)
        return str(path)
    path = tmp_path / "bad"
    path.write_bytes(CORPUS[name])
    return str(path)


@pytest.mark.parametrize(("slot", "name"), [(s, n) for s in SLOTS for n in (*CORPUS, *SPECIAL)])
def test_a_malformed_file_is_one_worded_line_and_exit_2(
    slot: str, name: str, good: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _bad_file(tmp_path / "bad-dir" if name == "a directory" else tmp_path, name)
    if name == "a directory":
        Path(bad).mkdir()
    code = main(SLOTS[slot](good, bad))
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert code == 2, out.err
    command = slot.split()[0]
    assert len(lines) == 1, out.err
    assert lines[0].startswith(f"assay {command}: error: ") and bad in lines[0], lines[0]
    assert not good["out"].exists()


def test_as_a_process_a_malformed_file_is_one_line_without_a_traceback(
    good: dict[str, Path], tmp_path: Path
) -> None:
    for name in ("UTF-16", "binary", "unreadable", "a directory"):
        bad = _bad_file(tmp_path / "dir" if name == "a directory" else tmp_path, name)
        if name == "a directory":
            Path(bad).mkdir()
        proc = assay(*SLOTS["score --run"](good, bad))
        no_traceback(proc)
        assert proc.returncode == 2, (name, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, (name, proc.stderr)


def test_a_file_saved_with_a_byte_order_mark_is_read(good: dict[str, Path], tmp_path: Path) -> None:
    """The mark is not a malformation: the file is read as if it had none."""
    for key in ("golden", "run", "report"):
        good[key].write_bytes(b"\xef\xbb\xbf" + good[key].read_bytes())
    assert main(["validate", "--golden", str(good["golden"])]) == 0
    assert main(SLOTS["score --run"](good, str(good["run"]))) == 0
    assert main(["gate", "--current", str(good["report"]), "--baseline", str(good["report"])]) == 0
