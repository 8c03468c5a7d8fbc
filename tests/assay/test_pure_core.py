"""The core is pure: importing any module of `assay` in a fresh interpreter loads no Django, Celery, DRF,
settings or app module, so the `assay` command and plain-pytest tests never start the web stack."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import assay

FORBIDDEN = ("django", "celery", "kombu", "rest_framework", "config", "labeling", "golden_io", "evaluation")
MODULES = sorted(m.name for m in pkgutil.walk_packages(assay.__path__, prefix="assay."))


def test_every_core_module_is_listed() -> None:
    assert {"assay.cli", "assay.metrics", "assay.golden.format", "assay.labels.agreement"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_importing_a_core_module_loads_no_django_celery_or_app(module: str) -> None:
    probe = (
        f"import sys, {module}\n"
        f"bad = sorted({{k.split('.')[0] for k in sys.modules}} & set({FORBIDDEN!r}))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "", f"{module} loads {out.stdout.strip()}"
