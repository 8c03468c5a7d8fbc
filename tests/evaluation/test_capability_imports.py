"""Evaluation's three capabilities import one way (docs/architecture.md, "Inside evaluation"): side-by-side
studies and experiments build on runs, runs know neither, and studies and experiments do not import each
other. Where a run's end or a promotion must reach a study, runs announce it (evaluation/runs/hooks.py)
and studies listen (evaluation/studies/receivers.py).

Held twice: by reading the import graph here (grimp, the graph import-linter reads), and by
pyproject.toml's contracts, run here as `make lint` runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.support.processes import REPO

RUNS = "evaluation.runs"
BUILT_ON_RUNS = ("evaluation.studies", "evaluation.experiments")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("evaluation", cache_dir=None)


def chains(graph: grimp.ImportGraph, importer: str, imported: str) -> set[tuple[str, ...]]:
    """Every shortest chain of imports from a module of `importer` to one of `imported`, direct or not."""
    return graph.find_shortest_chains(importer=importer, imported=imported, as_packages=True)


@pytest.mark.parametrize("capability", BUILT_ON_RUNS)
def test_runs_import_neither_studies_nor_experiments(graph: grimp.ImportGraph, capability: str) -> None:
    assert chains(graph, RUNS, capability) == set(), f"{RUNS} reaches {capability}"


def test_studies_and_experiments_do_not_import_each_other(graph: grimp.ImportGraph) -> None:
    studies, experiments = BUILT_ON_RUNS
    assert chains(graph, studies, experiments) == set()
    assert chains(graph, experiments, studies) == set()


@pytest.mark.parametrize("capability", BUILT_ON_RUNS)
def test_studies_and_experiments_do_build_on_runs(graph: grimp.ImportGraph, capability: str) -> None:
    assert chains(graph, capability, RUNS)


def test_an_import_of_studies_from_runs_is_found() -> None:
    """The check above sees an indirect import too: runs importing the models' registry, which imports
    the studies' models, is a chain from runs to studies."""
    graph = grimp.build_graph("evaluation", cache_dir=None)
    graph.add_import(importer="evaluation.runs.selectors", imported="evaluation.models")
    found = chains(graph, RUNS, "evaluation.studies")
    assert ("evaluation.runs.selectors", "evaluation.models", "evaluation.studies.models") in found


def test_the_contracts_hold() -> None:
    """pyproject.toml's contracts for the direction, as `make lint` runs them."""
    lint = Path(sys.executable).with_name("lint-imports")
    for contract in ("runs-know-neither", "studies-experiments-apart"):
        done = subprocess.run(
            [str(lint), "--contract", contract, "--no-cache"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 kept, 0 broken" in done.stdout


def test_studies_and_experiments_listen_to_what_runs_announce() -> None:
    """Each of runs' announcements has its listeners once the app is ready (evaluation/apps.py); what
    they do is held by the capabilities' own tests (a pending study made when its runs finish:
    tests/evaluation/studies/test_study_targets.py; a run's page showing its studies and its adoption:
    test_studies.py, tests/evaluation/experiments/test_experiment_adoption.py)."""
    from evaluation.runs import hooks

    for signal in (hooks.run_finished, hooks.baseline_checks, hooks.baseline_promoted, hooks.run_page_panels):
        assert signal.has_listeners(), signal
    listeners = {uid for (uid, _), _, _ in hooks.run_page_panels.receivers}
    assert listeners == {"studies.run_page_panels", "experiments.run_page_panels"}
