"""A wheel of the project (a non-editable `pip install ".[server]"` installs one) ships what the web app
reads at run time beside its packages: every template, static file and doc (pyproject.toml,
`[tool.setuptools.packages.find]`), and the app finds them there, not in the checkout.

One wheel per module, built by pip from a copy of this checkout (the machine's pip configuration and
cache apply, so it takes seconds). Read as it is unpacked: a wheel is a zip that pip copies into
site-packages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.package_copy import package_copy
from tests.support.processes import REPO

pytestmark = pytest.mark.integration

RUN_TIME_FOLDERS = ("templates", "static", "docs")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    source = package_copy(root / "source")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(root / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=root,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (found,) = (root / "dist").glob("assay-*.whl")
    return found


def _checkout_files(folder: str) -> dict[str, bytes]:
    return {
        path.relative_to(REPO).as_posix(): path.read_bytes()
        for path in (REPO / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_wheel_holds_every_template_static_file_and_doc(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for folder in RUN_TIME_FOLDERS:
            files = _checkout_files(folder)
            assert files, folder
            assert set(files) <= names, sorted(set(files) - names)
            for name, body in files.items():
                assert archive.read(name) == body, name
    # What the pages need at the least, by name.
    for name in ("templates/base.html", "static/css/assay.css", "static/favicon.ico", "docs/cli.md"):
        assert name in names


def test_the_app_reads_its_templates_static_files_and_docs_from_the_installed_files(
    wheel: Path, tmp_path: Path
) -> None:
    installed = tmp_path / "site-packages"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(installed)
    # The unpacked wheel first on the path, so the checkout's packages cannot stand in for it.
    environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE")}
    environment |= {
        "PYTHONPATH": str(installed),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "ASSAY_VAR_DIR": str(tmp_path / "var"),
    }
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            """
import json
import django
django.setup()
import assay.paths
from django.contrib.staticfiles import finders
from django.template.loader import get_template
from assay.docs import doc_path
print(json.dumps({
    "base": str(assay.paths.BASE_DIR),
    "template": get_template("labeling/import.html").origin.name,
    "static": finders.find("css/assay.css"),
    "doc": str(doc_path("cli")),
}))
""",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=environment,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    assert json.loads(probe.stdout) == {
        "base": str(installed),
        "template": str(installed / "templates" / "labeling" / "import.html"),
        "static": str(installed / "static" / "css" / "assay.css"),
        "doc": str(installed / "docs" / "cli.md"),
    }
