"""`assay run` and `assay sweep`: the commands that call a search system (assay.harness) for every golden
query, score what it answers and write the artifact (docs/cli.md)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.adapters import ADAPTER_NAMES, DEFAULT_ADAPTER
from assay.artifacts import artifact_bytes, write_atomic
from assay.cli.files import DEFAULT_OUT, load_golden, load_golden_columns, read_json
from assay.cli.progress import Progress
from assay.memory import gc_paused
from assay.options import UsageError, int_at_least, parse_headers, parse_params, positive_float
from assay.replies import MAX_REPLY_MB, MIB


def _harness_config(args: argparse.Namespace, golden: Any) -> Any:
    from assay.harness_config import HarnessConfig
    from assay.netpolicy import private_targets_allowed

    template = None
    if args.template:
        template = read_json(args.template, "--template")
    try:
        return HarnessConfig(
            url=args.search_url,
            adapter=args.adapter,
            size=golden.k,
            params=parse_params(args.param),
            headers=parse_headers(args.header, args.header_env, os.environ),
            # The --header-env values are the secrets: masked in whatever the engine answers.
            secrets=tuple(
                os.environ[item.partition("=")[2].strip()]
                for item in args.header_env
                if item.partition("=")[2].strip() in os.environ
            ),
            concurrency=args.concurrency,
            timeout=args.timeout,
            max_reply_bytes=args.max_reply_mb * MIB,
            retries=args.retries,
            rate_limit=args.rate_limit,
            generation_header=args.generation_header,
            generation_field=args.generation_field,
            model_id_header=args.model_id_header,
            model_id_field=args.model_id_field,
            es_template=template,
            solr_method=args.solr_method,
            trust_env=args.trust_env,
            # Whoever runs the command names the URL on their own machine (often a search service on
            # localhost in CI), so private addresses are allowed unless ASSAY_TARGET_ALLOW_PRIVATE says
            # false: a machine that runs the command for others (a shared runner) applies the server's
            # policy (assay.netpolicy) by setting it.
            allow_private=private_targets_allowed(default=True),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def cmd_run(args: argparse.Namespace) -> int:
    from assay.preload import import_in_background

    # The transport is imported beside the golden file's checks, the scoring while the requests are in
    # flight: neither waits for the other (assay/preload.py; docs/benchmarks.md measures the whole run).
    transport = import_in_background("assay.harness")
    try:
        # Columns, as `score` reads them: the harness reads only the queries' texts, filters and locales,
        # and build_report scores columns without building a judgment object per grade.
        golden = load_golden_columns(args.golden)
    finally:
        transport.join()
    from assay.harness import search_all_sync
    from assay.run_meta import run_meta

    config = _harness_config(args, golden)
    out = Path(args.out)
    progress = Progress(len(golden.queries), sys.stderr) if not args.quiet else None
    # With the report's modules, those numpy loads on first use (the bootstrap's generator, masked arrays):
    # imported while the requests are in flight, not after them.
    scoring = import_in_background("assay.report", "numpy.random", "numpy.ma")
    try:
        started_at = datetime.now(UTC)
        clock = time.perf_counter()
        results = search_all_sync(golden.queries, config, on_result=progress)
        duration = time.perf_counter() - clock
    finally:
        scoring.join()
    from assay.report import build_report

    errors = [r for r in results if not r.ok]
    if errors and all(r.status is None for r in results):
        # Not one HTTP answer: a wrong URL or a service that is down, not a measurement of the system.
        raise UsageError(
            f"no query got an answer from the search URL ({errors[0].error}); no artifact written"
        )
    run = run_meta(config, results, started_at=started_at, duration=duration)
    run["golden_file"] = args.golden
    with gc_paused():  # as in `assay score`: the report is many small acyclic objects
        report = build_report(golden, {r.query_id: r for r in results}, run=run)
    write_atomic(out, artifact_bytes(report))
    # What is left is to exit. The interpreter's last collection would walk every object this run built
    # (a tenth of a second on a loaded machine for 3,000 queries): frozen, they are freed without it. A
    # caller that goes on (a test calling `main`) frees them by reference counting only, so a cycle among
    # them stays until the process ends.
    import gc

    gc.freeze()
    print(
        f"{len(results)} queries in {duration:.1f} s: {len(results) - len(errors)} answered, "
        f"{len(errors)} errors, {run['retries']} retries; artifact written to {out}",
        file=sys.stderr,
    )
    if run["index_moved"]:
        print(
            f"warning: the index moved during the run (generations {', '.join(run['index_generations'])})",
            file=sys.stderr,
        )
    if run["model_changed"]:
        print(f"warning: the model changed during the run ({', '.join(run['model_ids'])})", file=sys.stderr)
    if errors:
        for result in errors[:10]:
            print(f"error: query {result.query_id}: {result.error}", file=sys.stderr)
        if len(errors) > 10:
            print(f"... and {len(errors) - 10} more (see flags.errors in {out})", file=sys.stderr)
        print(
            f"{len(errors)} of {len(results)} queries errored: they are recorded in the artifact, not "
            "counted as empty, and the gate will fail closed",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from assay.experiment import (
        SweepError,
        SweepSettings,
        grid_problems,
        parse_grid,
        split_queries,
        sweep_sync,
    )

    golden = load_golden(args.golden)
    grid_data = read_json(args.grid, "--grid")
    try:
        configs = parse_grid(grid_data)
    except SweepError as exc:
        raise UsageError(f"--grid {args.grid}: {exc}") from None
    config = _harness_config(args, golden)
    problems = grid_problems(config, configs)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"--grid {args.grid}: {problems[0]}{more}; nothing searched")
    settings = SweepSettings(
        fraction=args.split,
        seed=args.seed,
        top=args.top,
        metric=args.metric,
        alpha=args.alpha,
        coverage_margin=args.coverage_margin,
    )
    try:
        split_queries(golden.queries, settings.fraction, settings.seed)  # its problem before any request
    except SweepError as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out)

    def progress(phase: str, requests: int) -> Any:
        if args.quiet or not requests:
            return None
        print(f"{phase}: {requests} requests", file=sys.stderr)
        return Progress(requests, sys.stderr, noun="requests")

    try:
        sweep = sweep_sync(golden, config, configs, settings, progress=progress)
    except SweepError as exc:
        raise UsageError(str(exc)) from None
    tuned = [sweep["baseline"]["tuning"], *(c["tuning"] for c in sweep["configs"])]
    sweep["golden_file"] = args.golden
    write_atomic(out, artifact_bytes(sweep))
    best, metric = sweep["best"], sweep["metric"]
    errors = (
        sum(part["errors"] for part in tuned)
        + sweep["baseline"]["holdout"]["errors"]
        + sum(c["holdout"]["errors"] for c in sweep["configs"] if c["holdout"] is not None)
    )
    requests = sweep["requests"]
    print(
        f"{len(configs)} configurations and the baseline on {len(sweep['split']['tuning'])} tuning queries, "
        f"the top {min(args.top, len(configs))} on {len(sweep['split']['holdout'])} held-out: "
        f"{requests['sent']} requests sent ({requests['shared']} shared), "
        f"{sweep['run']['duration_s']:.1f} s; written to {out}",
        file=sys.stderr,
    )
    figures = (
        f"{metric} {_figure(best['holdout'][metric])} held out against the baseline's "
        f"{_figure(sweep['baseline']['holdout'][metric])} (p = {_figure(best['p_value'])}, adjusted "
        f"{_figure(best['p_adjusted'])}); optimism {_figure(sweep['optimism'])}"
    )
    if sweep["winner"] is not None:
        print(f"winner {best['params']}: {figures}", file=sys.stderr)
    else:
        print(
            f"no winner: no configuration beat the baseline on the held-out queries (a gain with p (Holm) "
            f"below {sweep['alpha']:g}); the best, {best['params']}: {figures}",
            file=sys.stderr,
        )
    if sweep["coverage"]["warning"]:
        print(f"the best, {best['params']}: {sweep['coverage']['warning']}", file=sys.stderr)
    for echo in sweep["echoes"]:
        print(echo["message"], file=sys.stderr)
    if errors:
        print(
            f"{errors} searches errored: counted in each configuration's error rate, never as empty",
            file=sys.stderr,
        )
        return 1
    return 0


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _add_target_options(parser: argparse.ArgumentParser) -> None:
    """The options that say where and how to search: `run`'s and `sweep`'s."""
    parser.add_argument("--search-url", required=True, metavar="URL", help="the engine's search endpoint")
    parser.add_argument(
        "--adapter",
        default=DEFAULT_ADAPTER,
        choices=list(ADAPTER_NAMES),
        help=f"wire format (default {DEFAULT_ADAPTER}; docs/cli.md)",
    )
    parser.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="extra request parameter (JSON value)"
    )
    parser.add_argument(
        "--header", action="append", default=[], metavar="NAME:VALUE", help="extra HTTP header"
    )
    parser.add_argument(
        "--header-env",
        action="append",
        default=[],
        metavar="NAME=VAR",
        help="HTTP header whose value is read from environment variable VAR (for secrets)",
    )
    parser.add_argument(
        "--concurrency", type=int_at_least(1), default=8, metavar="N", help="requests in flight"
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=10.0,
        metavar="S",
        help="seconds per request: connect, send and the whole reply",
    )
    parser.add_argument(
        "--max-reply-mb",
        type=int_at_least(1),
        default=MAX_REPLY_MB,
        metavar="MB",
        help=f"a larger reply is that query's error (default {MAX_REPLY_MB})",
    )
    parser.add_argument(
        "--retries", type=int_at_least(0), default=3, metavar="N", help="retries of transient failures"
    )
    parser.add_argument(
        "--rate-limit", type=positive_float, default=None, metavar="RPS", help="requests/second"
    )
    parser.add_argument("--template", metavar="FILE", help="elasticsearch/opensearch query template (JSON)")
    parser.add_argument("--solr-method", choices=["GET", "POST"], default="GET", help="solr only")
    parser.add_argument(
        "--generation-header", metavar="H", help="response header holding the index generation"
    )
    parser.add_argument(
        "--generation-field", metavar="F", help="dotted body field holding the index generation"
    )
    parser.add_argument("--model-id-header", metavar="H", help="response header holding the model id")
    parser.add_argument("--model-id-field", metavar="F", help="dotted body field holding the model id")
    parser.add_argument(
        "--trust-env",
        action="store_true",
        help="honour HTTP(S)_PROXY, NO_PROXY, SSL_CERT_FILE and SSL_CERT_DIR from the environment",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line")


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _share(text: str) -> float:
    value = _number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be between 0 and 1, exclusive")
    return value


def _margin(text: str) -> float:
    value = _number(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} must be from 0 to 1")
    return value


def add_parsers(commands: Any) -> None:
    """`run` and `sweep` on the `assay` command's subparsers."""
    run = commands.add_parser("run", help="call a search URL for every golden query and write the artifact")
    run.add_argument("--golden", required=True, metavar="FILE", help="golden file (JSON or JSONL)")
    _add_target_options(run)
    run.add_argument(
        "--out", default=DEFAULT_OUT, metavar="FILE", help=f"artifact path (default {DEFAULT_OUT})"
    )
    run.set_defaults(handler=cmd_run)

    sweep = commands.add_parser(
        "sweep", help="rank a grid of request parameters on some queries, confirm the best on the others"
    )
    sweep.add_argument("--golden", required=True, metavar="FILE", help="golden file (JSON or JSONL)")
    sweep.add_argument(
        "--grid",
        required=True,
        metavar="FILE",
        help='{"params": {"name": [values]}} (every combination) or {"configs": [{...}]}',
    )
    _add_target_options(sweep)
    sweep.add_argument(
        "--split",
        type=_share,
        default=0.7,
        metavar="S",
        help="share of each stratum that tunes (default 0.7)",
    )
    sweep.add_argument("--seed", type=int_at_least(0), default=0, metavar="N", help="the split's seed")
    sweep.add_argument(
        "--top", type=int_at_least(1), default=3, metavar="M", help="configurations confirmed (default 3)"
    )
    sweep.add_argument(
        "--metric", choices=["ndcg", "mrr", "precision_at_k"], default="ndcg", help="ranked on (default ndcg)"
    )
    sweep.add_argument(
        "--alpha",
        type=_share,
        default=0.05,
        metavar="A",
        help="a winner's Holm-adjusted p-value is below it (default 0.05)",
    )
    sweep.add_argument(
        "--coverage-margin",
        type=_margin,
        default=0.05,
        metavar="M",
        help="warn when the best's judged@k is below the baseline's by more than this (default 0.05)",
    )
    sweep.add_argument("--out", required=True, metavar="FILE", help="SWEEP.json")
    sweep.set_defaults(handler=cmd_sweep)
