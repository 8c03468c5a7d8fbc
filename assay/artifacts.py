"""Writing the artifacts the `assay` command and the server produce: atomically, as strict JSON.

orjson writes them (a 20,000-query report in a fraction of the standard module's time): the same text
but for how some floats are spelled (1e-05 as 1e-5), the same content read back, keys in insertion order.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write `text` to `path` through a temporary file in the same directory and a rename, so a reader
    (or a crash mid-write) never sees a partial file. Parent directories are created."""
    write_all_atomic({path: text})


def write_all_atomic(files: Mapping[Path, str | bytes]) -> None:
    """Write several files all or nothing, as far as a file system allows: every one to a temporary file
    beside it first (a full disk or a read-only folder fails there, with nothing in place), then each
    renamed into place."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            staged.append((tmp, path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8") if isinstance(text, str) else text)
                handle.flush()
                os.fsync(handle.fileno())
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise


def artifact_bytes(report: Mapping[str, Any]) -> bytes:
    """The artifact as UTF-8 JSON, 2-space indent, trailing newline. orjson cannot write NaN or Infinity
    (it writes null; docs/metrics.md never lets a non-finite value into an artifact: undefined is null)."""
    return orjson.dumps(report, option=_OPTIONS)


def dump_artifact(report: Mapping[str, Any]) -> str:
    return artifact_bytes(report).decode("utf-8")
