"""Files as people save them: a byte-order mark does not change what a file is, a UTF-16 file gets a hint,
and a version name git cannot tag is refused by `assay validate`, not at export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.golden.format import GoldenFormatError, from_dict
from tests.assay.test_cli import assay, no_traceback

GOLDEN = {"version": "v1", "queries": [{"id": "q1", "text": "t", "judgments": [{"doc_id": "d", "grade": 2}]}]}


def test_a_jsonl_run_file_with_a_byte_order_mark_is_read_as_jsonl(tmp_path: Path) -> None:
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(GOLDEN))
    run = tmp_path / "run.jsonl"
    run.write_bytes(b"\xef\xbb\xbf" + b'{"query_id": "q1", "ids": ["d"]}\n')
    proc = assay("score", "--golden", str(golden), "--run", str(run), "--out", str(tmp_path / "r.json"))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["run"]["format"] == "jsonl"


def test_a_utf16_file_gets_a_hint(tmp_path: Path) -> None:
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(GOLDEN))
    run = tmp_path / "run.jsonl"
    run.write_bytes('{"query_id": "q1", "ids": ["d"]}\n'.encode("utf-16"))
    proc = assay("score", "--golden", str(golden), "--run", str(run), "--out", str(tmp_path / "r.json"))
    no_traceback(proc)
    assert proc.returncode == 2
    assert "not UTF-8 text" in proc.stderr and "it looks like UTF-16: save it as UTF-8" in proc.stderr


@pytest.mark.parametrize(
    "version",
    [
        "v1..2",
        "v~1",
        "v^1",
        "v:1",
        "v?1",
        "v*1",
        "v[1",
        "v\\1",
        "v@{1",
        "v1.",
        "v1.lock",
        ".v1",
        "a//b",
        "a/.b",
    ],
)
def test_a_version_git_cannot_tag_is_refused(version: str) -> None:
    with pytest.raises(GoldenFormatError) as caught:
        from_dict({**GOLDEN, "version": version})
    (problem,) = caught.value.problems
    assert problem.where == "version" and "cannot be a git tag name" in problem.message


@pytest.mark.parametrize(
    "version", ["2026-12-01", "2026-12-01.2", "help-center_v3", "release/2026.1", "v1@2"]
)
def test_a_version_git_can_tag_is_accepted(version: str) -> None:
    assert from_dict({**GOLDEN, "version": version}).version == version


def test_version_says_the_installed_version_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    from assay.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code in (0, None)
    assert capsys.readouterr().out == f"assay {version('assay')}\n"
