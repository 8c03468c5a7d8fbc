"""What the `fast` extra (pyarrow) costs and buys: `assay score` of a large TREC run with and without it.

The golden file and run of bench_score.py (20,000 queries, a run 100 deep: 60 MB) scored by `assay score`
as installed here (with pyarrow), and by the same command with pyarrow hidden (`sys.modules["pyarrow"] =
None` before it starts, which is what the core install without the extra sees: the line-by-line
reading). Best of 3 alternating runs, wall time, peak memory of the process tree, CPU; the two artifacts
must be identical (`score` records no time in them). The cost is pyarrow's installed size, summed from
its distribution's file list.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from importlib.metadata import distribution
from pathlib import Path

from benchmarks._report import write_section
from benchmarks.bench_score import ASSAY, timed, write_files

QUERIES = 20_000
REPEATS = 3
HIDDEN = "import sys; sys.modules['pyarrow'] = None; from assay.cli import main; sys.exit(main())"


def installed_mb(name: str) -> float:
    """A distribution's files on disk, in MB (its RECORD: what `pip install` wrote)."""
    dist = distribution(name)
    return sum(Path(str(dist.locate_file(f))).stat().st_size for f in dist.files or []) / 2**20


def main() -> None:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        golden, run = write_files(QUERIES, directory)
        run_mb = run.stat().st_size / 2**20
        outs = {"with pyarrow": directory / "fast.json", "without (core install)": directory / "slim.json"}
        score = ["score", "--golden", str(golden), "--run", str(run), "--out"]
        commands = {
            "with pyarrow": [*ASSAY, *score, str(outs["with pyarrow"])],
            "without (core install)": [
                sys.executable,
                "-c",
                HIDDEN,
                *score,
                str(outs["without (core install)"]),
            ],
        }
        best: dict[str, tuple[float, float, float]] = {}
        for _ in range(REPEATS):
            for name, command in commands.items():
                wall, peak, cpu, _out = timed(command, directory)
                old = best.get(name, (float("inf"), 0.0, float("inf")))
                best[name] = (min(old[0], wall), max(old[1], peak), min(old[2], cpu))
        same = json.loads(outs["with pyarrow"].read_text()) == json.loads(
            outs["without (core install)"].read_text()
        )
        assert same, "the artifacts differ with and without pyarrow"
    load_after = os.getloadavg()
    fast, slim = best["with pyarrow"], best["without (core install)"]
    rows = "\n".join(
        f"| {name} | {wall:.2f} | {peak:.0f} | {cpu:.2f} |" for name, (wall, peak, cpu) in best.items()
    )
    write_section(
        "fast_extra",
        f"""## The `fast` extra (pyarrow): `assay score` of a large TREC run

{QUERIES:,} queries, a run 100 deep ({run_mb:.0f} MB) and its golden file (bench_score.py's files),
best of {REPEATS} alternating runs. pyarrow installed here: {installed_mb("pyarrow"):.0f} MB. Identical
artifacts both ways. Load average {load_before[0]:.2f} before, {load_after[0]:.2f} after.

| `assay score` | wall s | peak MB | CPU s |
| --- | ---: | ---: | ---: |
{rows}

With pyarrow: {slim[0] / fast[0]:.1f}x faster, {slim[1] / fast[1]:.1f}x less memory. A run file under
1 MB is read line by line either way (docs/cli.md, "Install").
""",
    )


if __name__ == "__main__":
    main()
