"""One convention for the apps' models, services and selectors packages (docs/architecture.md, "Inside each
app"): the package re-exports every public name of every module in it, so `services.judgment_submit(...)`
reads the same whichever module the service lives in, and a new module's names are re-exported when it is
added. Public means defined at the module's top level without a leading underscore: each function and
class, and each constant in capitals (a type alias or a logger is not an export)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.support.processes import REPO

PACKAGES = [
    "labeling.models",
    "labeling.services",
    "labeling.selectors",
    "golden_io.services",
    "evaluation.runs.services",
    "evaluation.runs.selectors",
    "evaluation.studies.services",
    "evaluation.experiments.services",
]
CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*")


def public_names(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "TypeVar":
                continue
            names += [t.id for t in targets if isinstance(t, ast.Name) and CONSTANT.fullmatch(t.id)]
    return [name for name in names if not name.startswith("_")]


def modules_of(package: str) -> list[Path]:
    folder = REPO.joinpath(*package.split("."))
    return sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("package", PACKAGES)
def test_the_package_re_exports_every_public_name_of_its_modules(package: str) -> None:
    imported = importlib.import_module(package)
    exported = set(imported.__all__)
    missing: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    for path in modules_of(package):
        module = importlib.import_module(f"{package}.{path.stem}")
        for name in public_names(path):
            assert name not in where, f"{name} is defined in both {where[name]} and {path.name}"
            where[name] = path.name
            if name not in exported:
                missing.setdefault(path.name, []).append(name)
            else:
                assert getattr(imported, name) is getattr(module, name), f"{package}.{name}"
    assert not missing, f"not re-exported by {package}: {missing}"
    assert exported == set(where), f"{package}.__all__ names what no module defines: {exported - set(where)}"
