"""Each benchmark writes its own section of docs/benchmarks.md, between markers, leaving the rest."""

from __future__ import annotations

import platform
import re
from datetime import UTC, datetime
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = """# Benchmarks

Measured by `make bench` (each section by its own script in `benchmarks/`), side by side with the named
peers in one run on the same machine. Tests never assert wall-clock times; these figures are what the
issues' performance targets are judged by. Each section says when and where it was measured.
"""


def machine() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}"


def write_section(name: str, markdown: str) -> None:
    """Replace (or append) the section `name`, stamped with the date and machine."""
    text = DOC.read_text() if DOC.exists() else HEADER
    stamp = f"_Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}._\n\n"
    block = f"<!-- bench:{name} -->\n{stamp}{markdown.strip()}\n<!-- /bench:{name} -->"
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else f"{text.rstrip()}\n\n{block}\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)
