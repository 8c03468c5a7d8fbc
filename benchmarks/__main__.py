"""`make bench`: run every benchmarks/bench_*.py (or those named on the command line)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    names = argv or sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))
    for name in names:
        print(f"== {name}", flush=True)
        importlib.import_module(f"benchmarks.{name}").main()


if __name__ == "__main__":
    main(sys.argv[1:])
