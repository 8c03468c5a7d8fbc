"""`assay run`'s progress line and its imports on a helper thread (assay/preload.py), in-process."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from assay.cli.progress import Progress
from assay.preload import import_in_background
from assay.results import QueryResult


class _Stream(io.StringIO):
    def __init__(self, *, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _feed(progress: Progress, total: int) -> None:
    for i in range(total):
        if i % 7 == 3:
            progress(QueryResult(query_id=f"q-{i}", error="HTTP 503 (text/html, 10 bytes)", attempts=4))
        else:
            progress(QueryResult(query_id=f"q-{i}", ids=("d1",), attempts=2 if i % 5 == 0 else 1))


def test_a_ci_log_gets_a_line_every_tenth_and_the_last() -> None:
    stream = _Stream(tty=False)

    _feed(Progress(25, stream), 25)

    lines = stream.getvalue().splitlines()
    assert [line.split(" ")[0] for line in lines] == [
        "3/25", "5/25", "8/25", "10/25", "13/25", "15/25", "18/25", "20/25", "23/25", "25/25"
    ]  # fmt: skip
    # 4 errored queries (3 retries each) and 4 retried once: the counts are whole at every line.
    assert lines[-1] == "25/25 queries (100%), 4 errors, 16 retries"


def test_a_terminal_line_is_redrawn_in_place_and_ends_with_the_total(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = _Stream(tty=True)
    # Redraws are spaced in time; with a long spacing only the first and the last are drawn.
    monkeypatch.setattr(Progress, "REDRAW_S", 3600.0)

    _feed(Progress(25, stream), 25)

    assert (
        stream.getvalue()
        == "\r1/25 queries (4%), 0 errors, 1 retries\r25/25 queries (100%), 4 errors, 16 retries\n"
    )


def test_a_module_imported_in_the_background_is_there_after_join() -> None:
    code = (
        "import sys; from assay.preload import import_in_background; "
        "t = import_in_background('assay.harness'); t.join(); print('assay.harness' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_an_import_that_fails_in_the_background_fails_again_where_the_caller_imports_it() -> None:
    thread = import_in_background("assay.no_such_module")
    thread.join()

    assert not thread.is_alive()
    with pytest.raises(ModuleNotFoundError, match=r"assay\.no_such_module"):
        __import__("assay.no_such_module")
