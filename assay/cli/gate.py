"""`assay gate`: an artifact compared with a baseline under budgets (assay.drift), optionally on the
baseline re-scored against a new golden version, or (`--suggest-budgets`) the noise floor of runs of one
configuration and budgets above it (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.artifacts import artifact_bytes, write_atomic
from assay.cli.files import load_golden, read_json
from assay.options import UsageError, int_at_least


def _rescored_baseline(args: argparse.Namespace, current: Any, baseline: Any) -> Any:
    """`--rescore-baseline`: the baseline's stored lists re-scored against `--golden` (`assay.rescore`),
    or the baseline itself when it is already on that version."""
    import getpass

    from assay.rescore import RescoreError, rescore_report, rescored_at

    if not args.rescore_baseline or not args.golden:
        raise UsageError("--rescore-baseline and --golden FILE (the new version's golden file) go together")
    golden = load_golden(args.golden)
    scored_on = current.get("golden_version") if isinstance(current, dict) else None
    if isinstance(scored_on, str) and scored_on != golden.version:
        raise UsageError(
            f"--golden {args.golden} is version {golden.version} but --current was scored on {scored_on}: "
            "re-score the baseline on the current run's version"
        )
    if isinstance(baseline, dict) and baseline.get("golden_version") == golden.version:
        print(
            f"note: the baseline is already on version {golden.version}: nothing to re-score", file=sys.stderr
        )
        return baseline
    try:
        by: str | None = getpass.getuser()
    except (OSError, KeyError):  # no login name in this environment (a bare container)
        by = None
    try:
        rescored = rescore_report(
            baseline, golden, by=by, at=rescored_at(datetime.now(UTC)), source=args.baseline
        )
    except RescoreError as exc:
        raise UsageError(f"--baseline {args.baseline}: cannot re-score: {exc}") from None
    if args.rescore_out:
        write_atomic(Path(args.rescore_out), artifact_bytes(rescored))
    print(
        f"note: baseline {args.baseline} re-scored from version {rescored['rescored']['from_version']} on "
        f"{golden.version} ({len(rescored['per_query'])} queries in both)"
        + (f"; written to {args.rescore_out}" if args.rescore_out else ""),
        file=sys.stderr,
    )
    return rescored


def cmd_gate(args: argparse.Namespace) -> int:
    from assay.drift import ArtifactError, compare, github_annotations, render_markdown, render_text

    if args.suggest_budgets is not None:
        return _suggest_budgets(args)
    if not args.current or not args.baseline:
        raise UsageError("--current and --baseline are both required (or --suggest-budgets REPORT ...)")
    if args.noise_out:
        raise UsageError("--noise-out goes with --suggest-budgets (it writes the floor measured there)")
    current = read_json(args.current, "--current")
    baseline = read_json(args.baseline, "--baseline")
    if args.rescore_baseline or args.golden or args.rescore_out:
        baseline = _rescored_baseline(args, current, baseline)
    budgets = _budgets_option(args.budgets)
    noise_floor = _noise_option(args.noise, current)
    try:
        result = compare(
            current, baseline, budgets, rebaseline=args.rebaseline, top_n=args.top, noise_floor=noise_floor
        )
    except ArtifactError as exc:
        raise UsageError(_one_line(exc)) from None

    print(render_text(result).rstrip("\n"))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for annotation in github_annotations(result):
            print(annotation)
    if args.summary or os.environ.get("GITHUB_STEP_SUMMARY"):
        markdown = render_markdown(result).rstrip("\n") + "\n"
        if args.summary:
            write_atomic(Path(args.summary), markdown)
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            with open(step_summary, "a", encoding="utf-8") as handle:
                handle.write(markdown)
    return int(result.exit_code)


def _one_line(exc: Exception) -> str:
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())


def _budgets_option(path: str | None) -> Any:
    """`--budgets FILE` loaded (`assay.budgets.load_budgets`), or the defaults without one."""
    from assay.budgets import BudgetsError, load_budgets

    data = read_json(path, "--budgets") if path else None
    if path and data is None:
        # load_budgets(None) means "the defaults": a file holding `null` must not silently mean that.
        raise UsageError(f"--budgets {path}: expected a JSON object of budgets, got null")
    try:
        return load_budgets(data)
    except BudgetsError as exc:
        raise UsageError(f"--budgets {path}: {_one_line(exc)}") from None


def _noise_option(path: str | None, current: Any) -> Any:
    """`--noise FILE`: a noise floor written by `--suggest-budgets --noise-out` (`assay.noise`), or None."""
    from assay.noise import NoiseError, NoiseFloor

    if not path:
        return None
    try:
        floor = NoiseFloor.from_dict(read_json(path, "--noise"), where=f"--noise {path}")
    except NoiseError as exc:
        raise UsageError(_one_line(exc)) from None
    version = current.get("golden_version") if isinstance(current, dict) else None
    if isinstance(version, str) and version != floor.golden_version:
        print(
            f"warning: --noise {path} was measured on golden version {floor.golden_version}, the current "
            f"report is on {version}: measure the noise again on this version",
            file=sys.stderr,
        )
    return floor


def _suggest_budgets(args: argparse.Namespace) -> int:
    """`assay gate --suggest-budgets REPORT ...`: the noise floor of runs of one configuration on stderr,
    suggested budgets (a budgets file) on stdout, the floor itself in `--noise-out` (docs/cli.md)."""
    from assay.drift import ArtifactError, validate_artifact
    from assay.noise import NoiseError, noise_floor, render_floor, suggest_budgets

    given = [
        option
        for option, value in (
            ("--current", args.current),
            ("--baseline", args.baseline),
            ("--noise", args.noise),
            ("--summary", args.summary),
            ("--rescore-baseline", args.rescore_baseline),
        )
        if value
    ]
    if given:
        raise UsageError(f"--suggest-budgets measures runs and compares none: leave out {', '.join(given)}")
    budgets = _budgets_option(args.budgets)
    reports = []
    for path in args.suggest_budgets:
        report = read_json(path, "--suggest-budgets")
        try:
            validate_artifact(report, role=path)
        except ArtifactError as exc:
            raise UsageError(_one_line(exc)) from None
        reports.append(report)
    try:
        floor = noise_floor(reports, names=args.suggest_budgets)
    except NoiseError as exc:
        raise UsageError(_one_line(exc)) from None
    suggested = suggest_budgets(floor, budgets)
    if args.noise_out:
        write_atomic(Path(args.noise_out), json.dumps(floor.to_dict(), indent=2) + "\n")
    print(render_floor(floor, budgets, suggested).rstrip("\n"), file=sys.stderr)
    print(json.dumps(suggested.to_dict(), indent=2))
    return 0


def add_parsers(commands: Any) -> None:
    """`gate` on the `assay` command's subparsers."""
    gate = commands.add_parser("gate", help="compare an artifact with a baseline under budgets")
    gate.add_argument("--current", metavar="FILE", help="the artifact of this run (required)")
    gate.add_argument("--baseline", metavar="FILE", help="the approved baseline artifact (required)")
    gate.add_argument(
        "--budgets", metavar="FILE", help="budgets JSON (default: the table in docs/metrics.md)"
    )
    gate.add_argument("--rebaseline", action="store_true", help="accept a new floor: mismatches become notes")
    gate.add_argument("--summary", metavar="FILE", help="write the markdown summary (PR comment) here")
    gate.add_argument("--top", type=int_at_least(0), default=10, metavar="N", help="top losers shown")
    gate.add_argument(
        "--rescore-baseline",
        action="store_true",
        help="re-score the baseline's stored result lists against --golden (a new golden version) first",
    )
    gate.add_argument(
        "--golden", metavar="FILE", help="with --rescore-baseline: the new version's golden file"
    )
    gate.add_argument("--rescore-out", metavar="FILE", help="write the re-scored baseline artifact here")
    gate.add_argument("--noise", metavar="FILE", help="a noise floor (--noise-out): warn on budgets below it")
    gate.add_argument(
        "--suggest-budgets",
        nargs="+",
        metavar="REPORT",
        help="instead of gating: the noise floor of these runs of one configuration and budgets above it",
    )
    gate.add_argument("--noise-out", metavar="FILE", help="with --suggest-budgets: write the floor here")
    gate.set_defaults(handler=cmd_gate)
