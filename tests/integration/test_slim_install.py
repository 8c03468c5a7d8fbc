"""The slim install: `pip install .` (no extras) into a fresh venv gives the `assay` command and the pure
core only, small enough for a CI job (pyproject.toml's `dependencies`, docs/cli.md "Install").

One venv per module: a real `pip install` of a copy of this checkout (the machine's pip configuration and
cache apply, so it takes seconds, not a download). The commands run from the venv's console script in a
directory outside the checkout, so nothing of the checkout's own packages or venv can stand in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.cli.runfile import FAST_HINT
from tests.support.package_copy import package_copy
from tests.support.processes import REPO, serving

pytestmark = pytest.mark.integration

MAX_MB = 200
MAX_DISTRIBUTIONS = 25
# What the server extra brings and the core must not: each must fail to import in the slim venv.
SERVER_ONLY = ("django", "celery", "kombu", "rest_framework", "sklearn", "psycopg", "dulwich")
# The core modules only the web app and its workers use: they import a distribution of the server extra
# at module level. Every other module of `assay` imports in the slim venv.
SERVER_SIDE_MODULES = {
    "assay.docs": "markdown_it",
    "assay.git_export": "dulwich",
    "assay.git_remote": "dulwich",
    "assay.git_repo": "dulwich",
    "assay.outbound": "urllib3",
    "assay.labels.agreement": "krippendorff",
    "assay.labels.agreement_pairs": "krippendorff",
    "assay.labels.calibration": "krippendorff",
    "assay.labels.disputes": "krippendorff",
    "assay.labels.judge_agreement": "krippendorff",
    "assay.labels.judge_verdicts": "krippendorff",
}


@pytest.fixture(scope="module")
def slim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding `pip install <copy of this checkout>`; its root."""
    root = tmp_path_factory.mktemp("slim")
    source = package_copy(root / "source")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=root,
        env=_environment(),
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    shutil.rmtree(source)  # the venv must stand on its own
    return venv


def _environment(**extra: str) -> dict[str, str]:
    # Nothing of the test run's own interpreter leaks in (PYTHONPATH would put the checkout on the path).
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE")
    environment = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("GITHUB_")}
    return {**environment, **extra}


def _python(venv: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=venv,
        env=_environment(),
    )


def _assay(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "assay"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        # The demo search service listens on loopback, a private address (docs/cli.md, "Target addresses").
        env=_environment(ASSAY_TARGET_ALLOW_PRIVATE="true"),
    )


def test_it_fits_the_budget_in_size_and_distributions(slim: Path) -> None:
    listed = subprocess.run(
        [str(slim / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_environment(),
        check=True,
    )
    names = sorted(d["name"].lower() for d in json.loads(listed.stdout))
    du = subprocess.run(["du", "-sm", str(slim)], capture_output=True, text=True, check=True)
    megabytes = int(du.stdout.split()[0])
    assert "assay" in names
    assert len(names) <= MAX_DISTRIBUTIONS, names
    assert megabytes <= MAX_MB, f"{megabytes} MB: {names}"


def test_the_server_and_the_fast_extra_are_not_installed(slim: Path) -> None:
    absent = (*SERVER_ONLY, "pyarrow")
    code = f"import importlib.util as u, json; print(json.dumps([n for n in {absent!r} if u.find_spec(n)]))"
    probe = _python(slim, code)
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == []
    for name in ("django", "celery", "rest_framework", "sklearn", "psycopg"):
        refused = _python(slim, f"import {name}")
        assert refused.returncode != 0 and "ModuleNotFoundError" in refused.stderr, name


def test_every_core_module_imports_but_the_server_side_ones(slim: Path) -> None:
    probe = _python(
        slim,
        """
import importlib, json, pkgutil, sys
import assay
failed = {}
for module in pkgutil.walk_packages(assay.__path__, "assay."):
    try:
        importlib.import_module(module.name)
    except ModuleNotFoundError as exc:
        failed[module.name] = exc.name
print(json.dumps({"failed": failed, "from": assay.__file__, "loaded": sorted(sys.modules)}))
""",
    )
    assert probe.returncode == 0, probe.stderr
    found: dict[str, Any] = json.loads(probe.stdout)
    assert found["from"].startswith(str(slim)), found["from"]  # the installed package, not the checkout
    assert {name: missing.split(".")[0] for name, missing in found["failed"].items()} == {
        name: missing for name, missing in SERVER_SIDE_MODULES.items() if name in found["failed"]
    }
    # The command's own modules are all among those that import, and so is the side-by-side analysis
    # (numpy only: it reuses agreement_alpha's batched alpha, which imports krippendorff only to call it).
    assert not {"assay.cli", "assay.harness", "assay.report", "assay.drift", "assay.remote"} & set(
        found["failed"]
    )
    assert not {"assay.sxs", "assay.sxs.analysis", "assay.labels.agreement_alpha"} & set(found["failed"])
    assert not {"django", "celery", "sklearn"} & {m.split(".")[0] for m in found["loaded"]}


@pytest.fixture(scope="module")
def search_url() -> Iterator[str]:
    """The demo search service (standard library only) on loopback."""
    corpus = REPO / "demo" / "corpus.jsonl"
    with serving(["-m", "demo.search_service", "--corpus", str(corpus), "--port", "0"]) as url:
        yield f"{url}/search"


def _trec_run(artifact: dict[str, Any], *, reverse: bool, padding: int) -> str:
    """The artifact's result lists as a TREC run, each list reversed or not and a list of k or more
    followed by `padding` unjudged documents (below k, so no figure moves; they make the file large)."""
    lines = []
    for query in artifact["per_query"]:
        ids = list(reversed(query["ids"])) if reverse else list(query["ids"])
        if len(ids) >= artifact["k"]:
            ids += [f"{query['id']}-pad-{n:05d}" for n in range(padding)]
        lines += [f"{query['id']} Q0 {doc} {rank} {1000 - rank} slim" for rank, doc in enumerate(ids, 1)]
    return "\n".join(lines) + "\n"


def test_the_command_runs_scores_gates_and_validates(slim: Path, search_url: str, tmp_path: Path) -> None:
    golden, budgets = REPO / "demo" / "golden.json", REPO / "demo" / "budgets.json"

    helped = _assay(slim, "--help", cwd=tmp_path)
    assert helped.returncode == 0
    for command in ("run", "score", "gate", "validate"):
        assert command in helped.stdout

    valid = _assay(slim, "validate", "--golden", str(golden), cwd=tmp_path)
    assert valid.returncode == 0, valid.stderr
    assert "valid golden file" in valid.stdout

    ran = _assay(
        slim, "run", "--golden", str(golden), "--search-url", search_url, "--out", "run.json", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    artifact = json.loads((tmp_path / "run.json").read_text())
    assert artifact["run"]["errors"] == 0 and artifact["ndcg"] > 0.5

    # The same lists scored offline, as a run file large enough to be read as columns when pyarrow is
    # there: without it the line-by-line reading gives the same figures, and the command says what
    # would be quicker (on stderr, not as an error).
    (tmp_path / "same.trec").write_text(_trec_run(artifact, reverse=False, padding=3000))
    assert (tmp_path / "same.trec").stat().st_size > 1 << 20
    scored = _assay(
        slim, "score", "--golden", str(golden), "--run", "same.trec", "--out", "same.json", cwd=tmp_path
    )
    assert scored.returncode == 0, scored.stderr
    assert FAST_HINT in scored.stderr.splitlines()
    same = json.loads((tmp_path / "same.json").read_text())
    assert same["ndcg"] == pytest.approx(artifact["ndcg"], abs=1e-12)
    assert same["mrr"] == pytest.approx(artifact["mrr"], abs=1e-12)

    # A small run file is read line by line anyway: no hint.
    (tmp_path / "worse.trec").write_text(_trec_run(artifact, reverse=True, padding=0))
    worse = _assay(
        slim, "score", "--golden", str(golden), "--run", "worse.trec", "--out", "worse.json", cwd=tmp_path
    )
    assert worse.returncode == 0, worse.stderr
    assert FAST_HINT not in worse.stderr

    passed = _assay(
        slim, "gate", "--current", "same.json", "--baseline", "run.json", "--budgets", str(budgets),
        "--summary", "pass.md", cwd=tmp_path,
    )  # fmt: skip
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "**pass**" in (tmp_path / "pass.md").read_text()

    failed = _assay(
        slim, "gate", "--current", "worse.json", "--baseline", "run.json", "--budgets", str(budgets),
        "--summary", "fail.md", cwd=tmp_path,
    )  # fmt: skip
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "**fail**" in (tmp_path / "fail.md").read_text()


def test_convert_and_sweep_run_in_the_slim_venv(slim: Path, search_url: str, tmp_path: Path) -> None:
    golden = REPO / "demo" / "golden.json"
    (tmp_path / "quepid.csv").write_text("query,docid,rating\nreset password,d1,3\nrefund,d3,2\n")
    converted = _assay(
        slim, "convert", "--from", "quepid-csv", "--to", "golden", "quepid.csv", "g.json", cwd=tmp_path
    )
    assert converted.returncode == 0, converted.stderr
    assert json.loads((tmp_path / "g.json").read_text())["queries"][0]["text"] == "reset password"
    # A BEIR folder with its corpus from the documents file, and back: the same documents.
    (tmp_path / "docs.jsonl").write_text('{"id": "d1", "title": "Reset", "body": "how to reset"}\n')
    out = _assay(
        slim, "convert", "--from", "golden", "--to", "beir", "--documents", "docs.jsonl", "g.json", "beir",
        cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    back = _assay(slim, "convert", "--from", "beir", "--to", "golden", "beir", "b.json", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "b.documents.jsonl").read_text() == (tmp_path / "docs.jsonl").read_text()
    bad = _assay(
        slim, "convert", "--from", "quepid-csv", "--to", "golden", "docs.jsonl", "x.json", cwd=tmp_path
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "docs.jsonl" in bad.stderr

    (tmp_path / "grid.json").write_text(json.dumps({"params": {"rewrite": [False, True]}}))
    swept = _assay(
        slim, "sweep", "--golden", str(golden), "--search-url", search_url, "--grid", "grid.json",
        "--out", "sweep.json", "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert swept.returncode == 0, swept.stderr
    assert len(json.loads((tmp_path / "sweep.json").read_text())["configs"]) == 2
