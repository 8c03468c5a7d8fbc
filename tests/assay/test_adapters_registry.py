"""The adapters are registered once (assay.adapters.ADAPTERS): the command's `--adapter` choices, the
target checks, docs/cli.md and `make_adapter` follow the registry (the target model's choices:
tests/evaluation/runs/test_adapter_choices.py)."""

from __future__ import annotations

import pytest

from assay.adapters import ADAPTER_NAMES, ADAPTERS, AdapterError, make_adapter
from assay.cli import build_parser
from assay.paths import BASE_DIR
from assay.targets import TargetSpec, spec_problems


def test_the_command_offers_exactly_the_registered_adapters() -> None:
    run = build_parser()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr,index]
    adapter = next(a for a in run._actions if a.dest == "adapter")
    assert adapter.choices == list(ADAPTER_NAMES)
    assert adapter.default == "http_json"


def test_the_docs_row_lists_the_registered_adapters() -> None:
    docs = (BASE_DIR / "docs" / "cli.md").read_text()
    names = ", ".join(f"`{name}`" for name in ADAPTER_NAMES)
    assert f"| `--adapter NAME` | `http_json` | {names} (below) |" in docs
    for name in ADAPTER_NAMES:
        assert f"- `{name}`" in docs or f"`{name}` /" in docs or f"/ `{name}`" in docs, name


@pytest.mark.parametrize("name", ADAPTER_NAMES)
def test_every_registered_adapter_is_made_under_its_name(name: str) -> None:
    assert make_adapter(name).name == name


def test_a_template_is_refused_for_an_adapter_that_takes_none() -> None:
    for name, kind in ADAPTERS.items():
        if kind.templated:
            assert make_adapter(name, template={"query": "{{q}}"}).name == name
        else:
            with pytest.raises(AdapterError, match=f"applies to elasticsearch/opensearch, not {name}$"):
                make_adapter(name, template={"query": "{{q}}"})
    with pytest.raises(
        AdapterError, match=r"unknown adapter 'bing' \(known: http_json, elasticsearch, opensearch, solr\)"
    ):
        make_adapter("bing")


def _adapter_problems(name: str) -> list[str]:
    spec = TargetSpec(name="t", url="http://127.0.0.1:9/s", adapter=name)
    return [p for p in spec_problems(spec) if p.startswith("adapter")]


def test_the_target_checks_accept_every_registered_adapter_and_no_other() -> None:
    for name in ADAPTER_NAMES:
        assert _adapter_problems(name) == []
    assert _adapter_problems("bing") == [
        "adapter: 'bing' is not one of http_json, elasticsearch, opensearch, solr"
    ]
