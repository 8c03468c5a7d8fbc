"""`assay convert`: judgments from one format to another through a validated golden file
(assay.convert; docs/cli.md)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from assay.artifacts import write_all_atomic
from assay.options import UsageError
from assay.problems import capped, more_text


def cmd_convert(args: argparse.Namespace) -> int:
    """Judgments from one format to another through a validated golden file (assay.convert); every file
    is computed first, then all are written together (`write_all_atomic`)."""
    from assay.convert.beir import documents_jsonl
    from assay.convert.core import ConvertError, GradeReading, parse_map_options, parse_scale_option
    from assay.convert.formats import FORMATS, GOLDEN_FORMATS, convert
    from assay.convert.options import Options

    foreign = args.source not in GOLDEN_FORMATS
    if not foreign and (args.scale or args.map):
        raise UsageError(
            "--scale and --map read a foreign format's ratings: a golden file's grades are already grades"
        )
    try:
        source = parse_scale_option(args.scale) if args.scale else None
    except ValueError as exc:
        raise UsageError(f"--scale {exc}") from None
    try:
        mapping = parse_map_options(args.map, GradeReading().target)
    except ValueError as exc:
        raise UsageError(f"--map {exc}") from None
    grades = GradeReading(source=source, mapping=mapping)
    used = (args.source, args.target)
    if args.topics is not None and "trec-qrels" not in used:
        raise UsageError("--topics applies to trec-qrels only")
    if args.split is not None and "beir" not in used:
        raise UsageError("--split applies to beir only")
    if args.documents is not None and "beir" not in used:
        raise UsageError("--documents applies to beir only")
    if args.documents is not None and args.source == args.target:
        raise UsageError("--documents: from beir to beir, the corpus goes along as it is")
    if args.split is not None and not _SPLIT.match(args.split):
        raise UsageError(f"--split {args.split!r}: a split name is letters, digits, - and _")
    options = Options(
        grades=grades,
        version=args.golden_version,
        topics=Path(args.topics) if args.topics else None,
        split=args.split,
        documents=Path(args.documents) if args.documents and args.target == "beir" else None,
    )
    output = Path(args.output)
    if FORMATS[args.target].folder and output.exists() and not output.is_dir():
        raise UsageError(f"{output}: exists and is not a folder ({args.target} writes a folder)")
    if not FORMATS[args.target].folder and output.is_dir():
        raise UsageError(f"{output}: is a folder, expected a file name")
    try:
        converted, files = convert(args.source, args.target, Path(args.input), output, options)
    except ConvertError as exc:
        count = len(exc.problems)
        if count == 1:
            raise UsageError(f"{exc.problems[0]} (nothing written)") from None
        lines = "\n".join(f"  {problem}" for problem in capped(exc.problems))
        if more := more_text(count):
            lines += f"\n  {more}"
        raise UsageError(f"{args.input}: {count} problems, nothing written:\n{lines}") from None
    if converted.documents is not None and args.target != "beir":
        documents = (
            Path(args.documents) if args.documents else output.with_name(f"{output.stem}.documents.jsonl")
        )
        files[documents] = documents_jsonl(converted.documents)
    write_all_atomic(files)
    golden = converted.golden
    judgments = sum(len(q.judgments) for q in golden.queries)
    print(
        f"{args.input} ({args.source}) -> {output} ({args.target}): "
        f"{_count(len(golden.queries), 'query', 'queries')}, {_count(judgments, 'judgment', 'judgments')}"
    )
    for path in files:
        if path != output and path.parent != output and path.parent.parent != output:
            print(f"also wrote {path}")
    return 0


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


_SPLIT = re.compile(r"^[A-Za-z0-9_-]+$")


def add_parsers(commands: Any) -> None:
    """`convert` on the `assay` command's subparsers."""
    from assay.convert.formats import FORMATS

    convert = commands.add_parser(
        "convert", help="convert judgments between the golden file and other tools' formats (docs/cli.md)"
    )
    readable = [name for name, f in FORMATS.items() if f.reader is not None]

    def source(name: str) -> str:
        # Before the choices: an export-only format is named as such, not as unknown.
        if name in FORMATS and name not in readable:
            raise argparse.ArgumentTypeError(f"{name} is export only (it has no query texts to read)")
        return name

    convert.add_argument(
        "--from",
        dest="source",
        required=True,
        type=source,
        choices=readable,
        metavar="FORMAT",
        help=f"one of {', '.join(readable)}",
    )
    convert.add_argument(
        "--to",
        dest="target",
        required=True,
        choices=list(FORMATS),
        metavar="FORMAT",
        help=f"one of {', '.join(FORMATS)}",
    )
    convert.add_argument("input", metavar="INPUT", help="the file (a folder for beir) to read")
    convert.add_argument("output", metavar="OUTPUT", help="the file (a folder for beir) to write")
    convert.add_argument(
        "--scale",
        metavar="MIN..MAX",
        help="the input's rating range, read linearly onto the golden scale 0..3",
    )
    convert.add_argument(
        "--map", action="append", default=[], metavar="FROM=TO", help="read rating FROM as grade TO"
    )
    convert.add_argument("--topics", metavar="FILE", help="trec-qrels: qid<TAB>text lines (read or written)")
    convert.add_argument(
        "--split", metavar="NAME", help="beir: the qrels split (default: the only one; test)"
    )
    convert.add_argument(
        "--documents",
        metavar="FILE",
        help="from beir with a corpus: where the documents go; to beir: the documents for corpus.jsonl",
    )
    convert.add_argument(
        "--golden-version", metavar="V", help="the golden file's version (default: imported)"
    )
    convert.set_defaults(handler=cmd_convert)
