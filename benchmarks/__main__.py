"""`make bench`: run every benchmarks/bench_*.py, or the sections named on the command line.

    python -m benchmarks                 # every section, in one run (what `make bench` does)
    python -m benchmarks harness runs    # only these: bench_harness.py and bench_runs.py

A section is named by its script, with or without the `bench_` prefix. Each writes its own section of
docs/benchmarks.md (benchmarks/_report.py), stamped with the date and stating the load average it saw.
"""

from __future__ import annotations

import compileall
import importlib
import os
import sys
import time
from pathlib import Path

from benchmarks._report import STARTED


def sections() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in Path(__file__).parent.glob("bench_*.py"))


def main(argv: list[str]) -> None:
    known = sections()
    names = [name.removeprefix("bench_").removesuffix(".py") for name in argv] or known
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"unknown benchmark {', '.join(unknown)}: choose from {', '.join(known)}")
    # Assay's bytecode compiled first, as an installed package's is: where PYTHONDONTWRITEBYTECODE is set
    # (this machine sets it) every timed process would otherwise compile each module from its source.
    os.environ.setdefault(STARTED, str(time.time()))  # sections saved since then are this run's
    compileall.compile_dir(Path(__file__).resolve().parent.parent / "assay", quiet=1)
    for name in names:
        print(f"== bench_{name}", flush=True)
        importlib.import_module(f"benchmarks.bench_{name}").main()


if __name__ == "__main__":
    main(sys.argv[1:])
