"""`assay score`: a run file (TREC or JSONL) scored offline against the golden file (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from assay.artifacts import artifact_bytes, write_atomic
from assay.cli.files import DEFAULT_OUT, load_golden_columns
from assay.cli.runfile import beside, read_run_file
from assay.memory import gc_paused, no_huge_pages


@gc_paused()  # builds a report of 10^5 small acyclic objects
def cmd_score(args: argparse.Namespace) -> int:
    no_huge_pages()
    with beside(read_run_file, args.run) as reading:  # forked before the imports below: it needs none
        golden = load_golden_columns(args.golden)
        # What the scoring needs, while the run is still being read (the golden file is mostly done first).
        from assay.ranked import match_table
        from assay.report import build_report

        known = {q.id for q in golden.queries}
        run = reading()

    run_block: dict[str, Any] = {"source": "score", "run_file": args.run, "golden_file": args.golden}
    run_block["format"] = run.format
    if run.format == "trec":
        run_block["tags"] = list(run.tags)
    table, results = run.table, run.results
    if table is not None:
        scored: Any = match_table(golden, table)
        unknown = scored.unknown
        answered = len(table.topics) - len(unknown)
    else:
        unknown = [qid for qid in results if qid not in known]
        scored = {qid: r for qid, r in results.items() if qid in known}
        answered = len(scored)
    if unknown:
        shown = ", ".join(unknown[:20]) + (f" and {len(unknown) - 20} more" if len(unknown) > 20 else "")
        print(
            f"warning: {len(unknown)} run queries are not in the golden file and were not scored "
            f"(listed under unknown_queries): {shown}",
            file=sys.stderr,
        )
    missing = len(known) - answered
    if missing:
        print(
            f"note: {missing} golden queries are not in the run: they count as returning nothing",
            file=sys.stderr,
        )
    report = build_report(
        golden,
        scored,
        run=run_block,
        extra_queries=unknown if table is None else (),
        compact_ranks=args.compact_ranks,
    )
    out = Path(args.out)
    write_atomic(out, artifact_bytes(report))
    errors = len(report["flags"]["errors"])
    print(f"{answered} queries scored; artifact written to {out}", file=sys.stderr)
    if errors:
        print(
            f"{errors} queries carry an error: recorded in the artifact, the gate will fail closed",
            file=sys.stderr,
        )
        return 1
    return 0


def add_parsers(commands: Any) -> None:
    """`score` on the `assay` command's subparsers."""
    score = commands.add_parser("score", help="score a TREC run file or JSONL results offline")
    score.add_argument("--golden", required=True, metavar="FILE")
    score.add_argument("--run", required=True, metavar="FILE", help="TREC run or JSONL {query_id, ids}")
    score.add_argument("--out", default=DEFAULT_OUT, metavar="FILE")
    score.add_argument(
        "--compact-ranks",
        action="store_true",
        help="keep per-query ranks and grades of graded documents in the top k only (a smaller artifact)",
    )
    score.set_defaults(handler=cmd_score)
