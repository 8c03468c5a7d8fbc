"""The core's lists of its own modules match the tree: every top-level module and package of `assay` is
named in `assay/__init__.py`'s docstring and in docs/architecture.md's table of the core, and neither
names one that is not there."""

from __future__ import annotations

import pkgutil
import re

import assay
from tests.support.processes import REPO

MODULES = {f"assay.{m.name}" for m in pkgutil.iter_modules(assay.__path__)}
NAMED = re.compile(r"`(assay\.[a-z_]+)")


def test_assay_init_names_every_core_module() -> None:
    assert assay.__doc__ is not None
    assert set(NAMED.findall(assay.__doc__)) == MODULES


def test_the_architecture_table_names_every_core_module() -> None:
    text = (REPO / "docs" / "architecture.md").read_text()
    table = text.split("The core's modules and packages", 1)[1].split("\n\n", 2)[1]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `assay.")]
    assert {name for row in rows for name in NAMED.findall(row)} == MODULES
