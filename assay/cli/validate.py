"""`assay validate`: check a golden file, its problems (exit 2, the first MAX_SHOWN listed, every one with
`--problems-csv`) or its warnings (docs/cli.md)."""

from __future__ import annotations

import argparse
from typing import Any

from assay.cli.files import load_golden_columns
from assay.memory import gc_paused, no_huge_pages
from assay.problems import MAX_SHOWN


@gc_paused()
def cmd_validate(args: argparse.Namespace) -> int:
    # Problems -> UsageError (exit 2), the first MAX_SHOWN listed; warnings printed there.
    no_huge_pages()
    golden = load_golden_columns(args.golden, args.problems_csv, canonical=False)
    tiers: dict[str, int] = {}
    for query in golden.queries:
        tiers[query.tier] = tiers.get(query.tier, 0) + 1
    split = ", ".join(f"{n} {tier}" for tier, n in sorted(tiers.items()))
    print(
        f"{args.golden}: valid golden file version {golden.version}: "
        f"{len(golden.queries)} queries ({split}), "
        f"{len(golden.doc_ids)} judgments, k={golden.k}, relevant_min_grade={golden.relevant_min_grade}, "
        f"scale {golden.scale}"
    )
    return 0


def add_parsers(commands: Any) -> None:
    """`validate` on the `assay` command's subparsers."""
    validate = commands.add_parser("validate", help="check a golden file: problems (exit 2) or warnings")
    validate.add_argument("--golden", required=True, metavar="FILE")
    validate.add_argument(
        "--problems-csv",
        metavar="FILE",
        help=f"write every problem as CSV here (the output lists the first {MAX_SHOWN})",
    )
    validate.set_defaults(handler=cmd_validate)
