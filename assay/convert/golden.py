"""Assay's own golden file, JSON and JSONL (docs/golden-format.md): read and written by assay.golden."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from assay.convert.core import ConvertError, Problems, read_bytes
from assay.convert.options import Converted, Options
from assay.golden.format import GoldenFormatError, dump_json, dump_jsonl, from_dict, parse, to_dict
from assay.golden.model import GoldenFile


def read_golden(path: Path, options: Options) -> Converted:
    """Either form (the parser tells JSON from JSONL); `--golden-version` renames the version."""
    problems = Problems()
    raw = read_bytes(path, problems, options.data)
    problems.check()
    assert raw is not None
    try:
        golden = parse(raw)
    except GoldenFormatError as exc:
        for problem in exc.problems:
            problems.add(path, problem.where, problem.message)
        problems.check()
        raise  # unreachable: a GoldenFormatError always names a problem
    if options.version is not None:
        try:
            golden = from_dict(to_dict(replace(golden, version=options.version)))
        except GoldenFormatError as exc:
            raise ConvertError([f"--golden-version: {problem}" for problem in exc.problems]) from None
    return Converted(golden)


def write_golden(golden: GoldenFile, path: Path, options: Options) -> dict[Path, bytes]:
    return {path: dump_json(golden)}


def write_golden_jsonl(golden: GoldenFile, path: Path, options: Options) -> dict[Path, bytes]:
    return {path: dump_jsonl(golden)}
