"""The GitHub Action (`action.yml`, docs/cli.md "GitHub Action") run here as a runner runs a composite
action: each step's script by `bash --noprofile --norc -eo pipefail`, its `env` with the `${{ }}`
expressions filled in from the inputs, `github.action_path` and earlier steps' outputs, and the
`GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`, `RUNNER_TEMP` files and folders. GitHub's runner itself cannot
run here: this runner knows only those expressions and refuses any other, so an action that needed more
would fail this test rather than pass it untried.

Against the demo search service on loopback: the baseline is the rewriter off; the action with the
rewriter off passes, with it on fails (the demo's story, demo/README.md).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.assay.test_cli import assay
from tests.support.package_copy import package_copy
from tests.support.processes import REPO, serving

pytestmark = pytest.mark.integration

ACTION = yaml.safe_load((REPO / "action.yml").read_text())
GOLDEN, BUDGETS = REPO / "demo" / "golden.json", REPO / "demo" / "budgets.json"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class Outcome:
    returncode: int
    stdout: str
    outputs: dict[str, str]  # the action's outputs
    step_summary: str


def _lines(path: Path) -> dict[str, str]:
    """A GITHUB_OUTPUT file's `name=value` lines (the action writes no multi-line value)."""
    text = path.read_text() if path.exists() else ""
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def run_action(inputs: dict[str, str], *, action_path: Path, workdir: Path, runner_temp: Path) -> Outcome:
    declared = ACTION["inputs"]
    assert set(inputs) <= set(declared), set(inputs) - set(declared)
    missing = [name for name, spec in declared.items() if spec.get("required") and name not in inputs]
    assert not missing, f"required inputs not given: {missing}"
    values = {name: str(spec.get("default", "")) for name, spec in declared.items()} | inputs
    steps: dict[str, dict[str, str]] = {}

    def fill(text: str) -> str:
        def value(match: re.Match[str]) -> str:
            expression = match.group(1)
            if expression == "github.action_path":
                return str(action_path)
            if m := re.fullmatch(r"inputs\.([\w-]+)", expression):
                return values[m.group(1)]
            if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression):
                return steps.get(m.group(1), {}).get(m.group(2), "")
            raise AssertionError(f"this runner does not know the expression {expression!r}")

        return EXPRESSION.sub(value, text)

    assert ACTION["runs"]["using"] == "composite"
    summary_file = runner_temp / "step-summary.md"
    summary_file.touch()
    printed: list[str] = []
    returncode = 0
    for number, step in enumerate(ACTION["runs"]["steps"]):
        assert "if" not in step and step["shell"] == "bash", step  # every step runs, in bash
        assert not EXPRESSION.search(step["run"]), "inputs reach the scripts as environment variables only"
        output_file = runner_temp / f"output-{number}"
        script = runner_temp / f"step-{number}.sh"
        script.write_text(step["run"])
        env = {
            **os.environ,
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(action_path),
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_STEP_SUMMARY": str(summary_file),
            "RUNNER_TEMP": str(runner_temp),
            # The demo search service listens on loopback, a private address (docs/cli.md).
            "ASSAY_TARGET_ALLOW_PRIVATE": "true",
            **{name: fill(str(text)) for name, text in step.get("env", {}).items()},
        }
        env.pop("PYTHONPATH", None)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        printed.append(done.stdout)
        if "id" in step:
            steps[step["id"]] = _lines(output_file)
        if done.returncode:
            printed.append(done.stderr)
            returncode = done.returncode
            break
    outputs = {name: fill(spec["value"]) for name, spec in ACTION["outputs"].items()}
    return Outcome(returncode, "".join(printed), outputs, summary_file.read_text())


@pytest.fixture(scope="module")
def search_url() -> Iterator[str]:
    with serving(
        ["-m", "demo.search_service", "--corpus", str(REPO / "demo" / "corpus.jsonl"), "--port", "0"]
    ) as url:
        yield f"{url}/search"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The action's checkout (`github.action_path`): the package's sources, and the action."""
    root = package_copy(tmp_path_factory.mktemp("action") / "assay")
    (root / "action.yml").write_bytes((REPO / "action.yml").read_bytes())
    return root


@pytest.fixture(scope="module")
def runner_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One RUNNER_TEMP for the module's runs: the second install finds the first's venv."""
    return tmp_path_factory.mktemp("runner-temp")


@pytest.fixture(scope="module")
def baseline(search_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The approved baseline: the rewriter off."""
    path = tmp_path_factory.mktemp("baseline") / "relevance.json"
    made = assay(
        "run", "--golden", str(GOLDEN), "--search-url", search_url, "--out", str(path), "--quiet",
        env={"ASSAY_TARGET_ALLOW_PRIVATE": "true"},
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return path


def _inputs(search_url: str, baseline: Path, **more: str) -> dict[str, str]:
    return {
        "golden": str(GOLDEN),
        "search-url": search_url,
        "baseline": str(baseline),
        "budgets": str(BUDGETS),
        **more,
    }


def test_the_same_configuration_passes_and_the_summary_is_left_for_a_later_step(
    search_url: str, baseline: Path, checkout: Path, runner_temp: Path, tmp_path: Path
) -> None:
    # The params as a YAML block gives them: one a line, blank and CRLF lines among them; a value that
    # looks like a shell command stays a string.
    params = "rewrite=false\r\n\n  tag=ci run  \nnote=$(touch pwned)\n"
    outcome = run_action(
        _inputs(search_url, baseline, params=params, summary="out/summary.md"),
        action_path=checkout,
        workdir=tmp_path,
        runner_temp=runner_temp,
    )
    assert outcome.returncode == 0, outcome.stdout
    assert outcome.outputs == {
        "verdict": "pass",
        "artifact": "artifacts/relevance.json",
        "summary": "out/summary.md",
    }
    artifact = json.loads((tmp_path / "artifacts" / "relevance.json").read_text())
    assert artifact["run"]["params"] == {"rewrite": False, "tag": "ci run  ", "note": "$(touch pwned)"}
    assert not (tmp_path / "pwned").exists() and not (checkout / "pwned").exists()
    assert "**pass**" in (tmp_path / "out" / "summary.md").read_text()
    assert "**pass**" in outcome.step_summary
    assert "::error" not in outcome.stdout


def test_a_regression_fails_the_step_with_annotations_and_a_summary(
    search_url: str, baseline: Path, checkout: Path, runner_temp: Path, tmp_path: Path
) -> None:
    outcome = run_action(
        _inputs(search_url, baseline, params="rewrite=true"),
        action_path=checkout,
        workdir=tmp_path,
        runner_temp=runner_temp,
    )
    assert outcome.returncode == 1, outcome.stdout
    assert outcome.outputs["verdict"] == "fail"
    assert "Relevance gate: FAIL" in outcome.stdout
    assert re.search(r"^::error ", outcome.stdout, re.MULTILINE)
    summary = (tmp_path / "artifacts" / "relevance-summary.md").read_text()
    assert "**fail**" in summary and summary in outcome.step_summary


def test_an_unusable_input_stops_before_the_gate(
    search_url: str, baseline: Path, checkout: Path, runner_temp: Path, tmp_path: Path
) -> None:
    outcome = run_action(
        _inputs(search_url, baseline, golden=str(tmp_path / "missing.json")),
        action_path=checkout,
        workdir=tmp_path,
        runner_temp=runner_temp,
    )
    assert outcome.returncode == 2
    assert "missing.json" in outcome.stdout and outcome.outputs["verdict"] == ""
    assert not (tmp_path / "artifacts").exists()


def _docs_workflow() -> dict[str, Any]:
    section = (REPO / "docs" / "cli.md").read_text().split("## GitHub Action\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    workflow: dict[str, Any] = yaml.safe_load(block.group(1))
    return workflow


def test_the_documented_workflow_gives_the_action_inputs_it_declares() -> None:
    workflow = _docs_workflow()
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    using = [s for s in steps if str(s.get("uses", "")).split("@")[0].endswith("/assay")]
    assert len(using) == 1
    given = set(using[0]["with"])
    declared = ACTION["inputs"]
    assert given <= set(declared), given - set(declared)
    assert {name for name, spec in declared.items() if spec.get("required")} <= given
    # A later step reads the outputs it names from the action's declared outputs.
    later = json.dumps(steps[steps.index(using[0]) + 1 :])
    named = set(re.findall(rf"steps\.{using[0]['id']}\.outputs\.([\w-]+)", later))
    assert named and named <= set(ACTION["outputs"])


# --- the workflow and action files against GitHub's schemas --------------------------------------------
#
# check-jsonschema (the dev extra) validates the files offline against the schemas it ships (SchemaStore's
# workflow and action schemas), which catches misspelt or misplaced keys, missing required ones and wrong
# value types; actionlint checks them beside it (tests/integration/test_actionlint.py).


def _docs_workflows() -> list[str]:
    """Every workflow in docs/cli.md: its YAML blocks that hold `jobs`."""
    blocks = re.findall(r"```yaml\n(.*?)```", (REPO / "docs" / "cli.md").read_text(), re.DOTALL)
    return [block for block in blocks if "jobs" in (yaml.safe_load(block) or {})]


def _check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_documented_workflows_and_the_action_pass_the_schemas(tmp_path: Path) -> None:
    workflows = _docs_workflows()
    assert len(workflows) == 2  # with the action, and without it
    files = []
    for number, text in enumerate(workflows):
        (tmp_path / f"workflow-{number}.yml").write_text(text)
        files.append(tmp_path / f"workflow-{number}.yml")
    checked = _check_jsonschema("vendor.github-workflows", *files)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "validation done" in checked.stdout
    action = _check_jsonschema("vendor.github-actions", REPO / "action.yml")
    assert action.returncode == 0, action.stdout + action.stderr


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("runs-on: ubuntu-latest", "runs_on: ubuntu-latest", "'runs-on' is a required property"),
        ("    steps:", "    step:", "'step' was unexpected"),
    ],
)
def test_a_broken_workflow_is_reported(old: str, new: str, said: str, tmp_path: Path) -> None:
    text = _docs_workflows()[0]
    assert old in text
    (tmp_path / "broken.yml").write_text(text.replace(old, new, 1))
    checked = _check_jsonschema("vendor.github-workflows", tmp_path / "broken.yml")
    assert checked.returncode == 1
    assert "broken.yml::$.jobs.relevance" in checked.stdout and said in checked.stdout


def test_a_broken_action_is_reported(tmp_path: Path) -> None:
    text = (REPO / "action.yml").read_text()
    # A composite action's step must say its shell: a misspelt key is unexpected.
    (tmp_path / "action.yml").write_text(text.replace("shell: bash", "shel: bash", 1))
    checked = _check_jsonschema("vendor.github-actions", tmp_path / "action.yml")
    assert checked.returncode == 1
    assert "'shel' was unexpected" in checked.stdout
