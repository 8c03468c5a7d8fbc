"""The demo through the real tools: the search service in its own process, `assay run` twice, `assay gate`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.demo.conftest import DEMO

REPO = DEMO.parent
ASSAY = Path(sys.executable).with_name("assay")


@pytest.fixture(scope="module")
def service_url() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "demo.search_service", "--corpus", str(DEMO / "corpus.jsonl"), "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    try:
        assert line.startswith("listening on "), proc.stderr.read() if proc.stderr else line
        yield line.removeprefix("listening on ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _run(url: str, out: Path, *params: str) -> dict[str, Any]:
    args = [str(ASSAY), "run", "--golden", str(DEMO / "golden.json"), "--search-url", url + "/search"]
    args += ["--generation-header", "X-Index-Generation", "--out", str(out), "--quiet", *params]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(out.read_text()))


def test_it_fails_the_gate_on_the_billing_stratum_over_http(service_url: str, tmp_path: Path) -> None:
    baseline = _run(service_url, tmp_path / "baseline.json")
    current = _run(service_url, tmp_path / "current.json", "--param", "rewrite=true")
    assert baseline["tiers"]["core"]["error_rate"]["value"] == 0
    gate = subprocess.run(
        [
            str(ASSAY),
            "gate",
            "--current",
            str(tmp_path / "current.json"),
            "--baseline",
            str(tmp_path / "baseline.json"),
            "--budgets",
            str(DEMO / "budgets.json"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "stratum billing nDCG@k drop" in gate.stdout
    assert "q-0471" in gate.stdout
    assert "stratum account" not in gate.stdout.split("Core tier")[0]
    empty_rate = [r["slices"]["stratum"]["billing"]["empty_rate"]["value"] for r in (baseline, current)]
    assert empty_rate[1] > empty_rate[0]
