"""A copy of what `pip install <checkout>` builds from, so a test installs the package without writing a
build folder into the checkout (and sees only the package's own files)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.processes import REPO

# The build configuration, the readme it names, and the packages setuptools looks for (pyproject.toml),
# the web app's templates, static files and docs among them.
SOURCES = (
    "pyproject.toml",
    "README.md",
    "assay",
    "config",
    "labeling",
    "golden_io",
    "evaluation",
    "demo",
    "templates",
    "static",
    "docs",
)


def package_copy(destination: Path) -> Path:
    """`destination` (created) holding a copy of the package's sources; returned."""
    destination.mkdir(parents=True)
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, destination / name)
    return destination
