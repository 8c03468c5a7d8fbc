"""Writing the artifacts the `assay` command and the server produce: atomically, as strict JSON."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same directory and a rename, so a reader
    (or a crash mid-write) never sees a partial file. Parent directories are created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dump_artifact(report: Mapping[str, Any]) -> str:
    # allow_nan=False: docs/metrics.md never lets NaN into an artifact (undefined values are null).
    return json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
