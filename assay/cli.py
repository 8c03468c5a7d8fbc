"""`assay`: evaluate a search system from the command line, score run files, gate against a baseline,
convert judgments between the golden file and other tools' formats.

Needs no database and imports nothing from Django, so CI can run it with only the package installed.
Every command, option and exit code: docs/cli.md.

Exit codes, all commands: 0 success, 1 a real finding (`run`/`score`: some queries errored, the
artifact records them and the gate will fail closed; `gate`: verdict fail), 2 unusable input (bad
arguments, unreadable or invalid files, a search URL that answered no query at all). Errors are one line
on stderr (`assay run: error: ...`), never a traceback for something the user can fix.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, NoReturn

import orjson

from assay.adapters import ADAPTER_NAMES, DEFAULT_ADAPTER
from assay.artifacts import artifact_bytes, write_all_atomic, write_atomic
from assay.jsonin import MAX_DEPTH, JsonInputError, json_depth_over, json_loads
from assay.memory import gc_paused, no_huge_pages
from assay.options import UsageError, int_at_least, parse_headers, parse_params, positive_float
from assay.problems import MAX_SHOWN, capped, more_text
from assay.problems import problems_csv as csv_of_problems
from assay.replies import MAX_REPLY_MB, MIB

DEFAULT_OUT = "artifacts/relevance.json"


# ------------------------------------------------------------------------------------------- helpers


def _read_bytes(path: str, what: str, limit: int = -1) -> bytes:
    """A file's bytes (the first `limit` only, when given); a missing, unreadable or directory path is a
    UsageError naming it."""
    try:
        with Path(path).open("rb") as handle:
            return handle.read(limit)
    except FileNotFoundError:
        raise UsageError(f"{what} {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path}: is a directory, expected a file") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: {exc.strerror or exc}") from None


def _decode(raw: bytes, path: str, what: str) -> str:
    """UTF-8 text (a byte-order mark is dropped, so a JSONL file saved with one is still JSONL)."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        hint = " (it looks like UTF-16: save it as UTF-8)" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise UsageError(f"{what} {path}: not UTF-8 text (byte {exc.start}){hint}") from None


def _read_text(path: str, what: str) -> str:
    """A file's UTF-8 text (`_read_bytes`, `_decode`)."""
    return _decode(_read_bytes(path, what), path, what)


def _read_json(path: str, what: str) -> Any:
    """A JSON file given to a command, bounded in depth like every user's JSON (`assay.jsonin`)."""
    text = _read_text(path, what)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        # The standard module names the place (and reads what orjson refuses: NaN, huge integers).
        try:
            return json_loads(text)
        except JsonInputError as exc:
            raise UsageError(f"{what} {path}: {exc}") from None
    if json_depth_over(value, MAX_DEPTH):
        raise UsageError(f"{what} {path}: nested deeper than {MAX_DEPTH} levels of arrays or objects")
    return value


def _load_golden(path: str, problems_csv: str | None = None) -> Any:
    """The golden file (a GoldenFile), or a UsageError listing its first MAX_SHOWN problems (with
    `problems_csv`, every problem is written there as CSV: where, message, code, query_id)."""
    return _load_golden_columns(path, problems_csv).to_file()


def _load_golden_columns(path: str, problems_csv: str | None = None, *, canonical: bool = True) -> Any:
    """`_load_golden` as columns (`assay.golden.columns`): what `score` and `validate` read; `validate`
    only counts, so it takes them in the file's order (`canonical=False`)."""
    from assay.golden.format import GoldenFormatError, golden_warnings, parse_columns

    raw = _read_bytes(path, "golden file")
    try:
        try:
            golden = parse_columns(raw, canonical=canonical)
        except GoldenFormatError:
            # The careful walk named the problems; the command's own words for a file that is not UTF-8.
            _decode(raw, path, "golden file")
            raise
    except GoldenFormatError as exc:
        if problems_csv:
            _write_problems_csv(problems_csv, exc.problems)
        count = len(exc.problems)
        if count <= _ONE_LINE_PROBLEMS:
            # A few problems read best on the error's one line; a longer list goes one problem a line.
            said = "; ".join(str(problem) for problem in exc.problems)
            raise UsageError(
                f"golden file {path}: {count} problem{'s' if count != 1 else ''}, nothing evaluated: {said}"
            ) from None
        lines = "\n".join(f"  {problem}" for problem in capped(exc.problems))
        more = more_text(len(exc.problems))
        if more:
            lines += f"\n  {more}" + (
                f"; every one is in {problems_csv}"
                if problems_csv
                else "; --problems-csv FILE writes every one"
            )
        raise UsageError(
            f"golden file {path}: {count} problem{'s' if count != 1 else ''}, nothing evaluated:\n{lines}"
        ) from None
    for warning in golden_warnings(golden):
        print(f"warning: golden file {path}: {warning}", file=sys.stderr)
    return golden


# Up to this many problems of a golden file are said on the error's one line.
_ONE_LINE_PROBLEMS = 3


def _write_problems_csv(path: str, problems: Sequence[Any]) -> None:
    write_atomic(Path(path), csv_of_problems(problems).encode())


class _Progress:
    """One progress line on stderr: redrawn in place on a terminal (at most every REDRAW_S), every 10% in
    a CI log. Called once per finished query from the event loop, so a call that draws nothing is a few
    additions and a comparison."""

    REDRAW_S = 0.05

    def __init__(self, total: int, stream: IO[str], noun: str = "queries") -> None:
        self.total, self.stream, self.noun = total, stream, noun
        self.done = self.errors = self.retries = 0
        self.tty = stream.isatty()
        self.next_mark = 0.1
        self.next_draw = 0.0

    def __call__(self, result: Any) -> None:
        self.done += 1
        if result.error is not None:
            self.errors += 1
        if result.attempts > 1:
            self.retries += result.attempts - 1
        share = self.done / self.total
        last = self.done == self.total
        if self.tty:
            now = time.monotonic()
            if now >= self.next_draw or last:
                self.next_draw = now + self.REDRAW_S
                self.stream.write(f"\r{self._line(share)}" + ("\n" if last else ""))
                self.stream.flush()
        elif share >= self.next_mark or last:
            self.stream.write(self._line(share) + "\n")
            self.stream.flush()
            while self.next_mark <= share:
                self.next_mark += 0.1

    def _line(self, share: float) -> str:
        done = f"{self.done}/{self.total} {self.noun} ({share:.0%})"
        return f"{done}, {self.errors} errors, {self.retries} retries"


# ------------------------------------------------------------------------------------------- run


def _harness_config(args: argparse.Namespace, golden: Any) -> Any:
    from assay.harness import HarnessConfig
    from assay.netpolicy import private_targets_allowed

    template = None
    if args.template:
        template = _read_json(args.template, "--template")
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
        golden = _load_golden_columns(args.golden)
    finally:
        transport.join()
    from assay.harness import search_all_sync
    from assay.run_meta import redact_url, run_meta

    config = _harness_config(args, golden)
    out = Path(args.out)
    progress = _Progress(len(golden.queries), sys.stderr) if not args.quiet else None
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
            f"no query got an answer from {redact_url(config.url)} ({errors[0].error}); no artifact written"
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


# ------------------------------------------------------------------------------------------- sweep


def cmd_sweep(args: argparse.Namespace) -> int:
    from assay.experiment import (
        SweepError,
        SweepSettings,
        grid_problems,
        parse_grid,
        split_queries,
        sweep_sync,
    )

    golden = _load_golden(args.golden)
    grid_data = _read_json(args.grid, "--grid")
    try:
        configs = parse_grid(grid_data)
    except SweepError as exc:
        raise UsageError(f"--grid {args.grid}: {exc}") from None
    config = _harness_config(args, golden)
    problems = grid_problems(config, configs)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"--grid {args.grid}: {problems[0]}{more}; nothing searched")
    settings = SweepSettings(fraction=args.split, seed=args.seed, top=args.top, metric=args.metric)
    try:
        split_queries(golden.queries, settings.fraction, settings.seed)  # its problem before any request
    except SweepError as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out)

    def progress(phase: str, requests: int) -> Any:
        if args.quiet or not requests:
            return None
        print(f"{phase}: {requests} requests", file=sys.stderr)
        return _Progress(requests, sys.stderr, noun="requests")

    try:
        sweep = sweep_sync(golden, config, configs, settings, progress=progress)
    except SweepError as exc:
        raise UsageError(str(exc)) from None
    tuned = [sweep["baseline"]["tuning"], *(c["tuning"] for c in sweep["configs"])]
    sweep["golden_file"] = args.golden
    write_atomic(out, artifact_bytes(sweep))
    winner, metric = sweep["winner"], sweep["metric"]
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
    print(
        f"winner {winner['params']}: {metric} {_figure(winner['holdout'][metric])} held out against the "
        f"baseline's {_figure(sweep['baseline']['holdout'][metric])} (p = {_figure(winner['p_value'])}, "
        f"adjusted {_figure(winner['p_adjusted'])}); optimism {_figure(sweep['optimism'])}",
        file=sys.stderr,
    )
    if errors:
        print(
            f"{errors} searches errored: counted in each configuration's error rate, never as empty",
            file=sys.stderr,
        )
        return 1
    return 0


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


# ------------------------------------------------------------------------------------------- score


_RESULT_FIELDS = ("query_id", "ids", "error", "titles")


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def read_results_jsonl(text: str) -> dict[str, Any]:
    """`{"query_id", "ids": [...]}` per line (optionally `"error"` for a failed call, `"titles"`, ...):
    query id -> QueryResult. Every bad line is reported at once, each with its line number."""
    from assay.results import QueryResult

    results: dict[str, QueryResult] = {}
    first_line: dict[str, int] = {}
    problems: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            try:  # the standard module names the column (and reads what orjson refuses: NaN, ...)
                obj = json_loads(line)
            except JsonInputError as exc:
                syntax = f"invalid JSON at column {exc.column}: {exc.detail}"
                problems.append(f"{where}: {syntax if exc.syntax else exc}")
                continue
        if json_depth_over(obj, MAX_DEPTH):
            problems.append(f"{where}: nested deeper than {MAX_DEPTH} levels of arrays or objects")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: expected an object with query_id and ids")
            continue
        unknown = sorted(set(obj) - set(_RESULT_FIELDS))
        if unknown:
            problems.append(
                f"{where}: unknown field {', '.join(unknown)} (known: {', '.join(_RESULT_FIELDS)})"
            )
        qid = obj.get("query_id")
        if not _is_id(qid):
            problems.append(f"{where}: query_id: expected a string or integer")
            continue
        qid = str(qid)
        error = obj.get("error")
        if error is not None and not isinstance(error, str):
            problems.append(f"{where}: error: expected a string or null")
        ids = obj.get("ids", [] if error else None)
        if not isinstance(ids, list) or not all(_is_id(i) for i in ids):
            problems.append(f"{where}: ids: expected a list of string or integer ids")
            ids = []
        titles = obj.get("titles", [])
        if not isinstance(titles, list) or not all(isinstance(t, str) for t in titles):
            problems.append(f"{where}: titles: expected a list of strings")
            titles = []
        seen = first_line.setdefault(qid, number)
        if seen != number:
            problems.append(f"{where}: query_id {qid} appears twice (first at line {seen})")
            continue
        results[qid] = QueryResult(
            query_id=qid,
            ids=tuple(str(i) for i in ids),
            error=error if isinstance(error, str) else None,
            titles=tuple(titles),
        )
    if problems:
        raise UsageError("; ".join(problems))
    if not results:
        raise UsageError("no results in the file")
    return results


def _looks_like_jsonl(text: str) -> bool:
    """The first non-blank character opens an object (a TREC line starts with a query id)."""
    return text.lstrip().startswith("{")


def _read_run(path: str) -> tuple[Any, Any]:
    """A run file as (columns of a TREC run in the plain shape, None) or (None, query id -> QueryResult)
    for every other run file (JSONL, or TREC read line by line, which names every problem)."""
    from assay.golden.trec import TrecFormatError, arrow_available, read_run, read_run_table
    from assay.results import QueryResult

    head = _read_bytes(path, "run file", _COLUMNS_MIN_BYTES)
    if len(head) == _COLUMNS_MIN_BYTES and not _JSONL_START.match(head):
        # A large TREC run: pyarrow reads the file itself, in blocks, when it is in the plain shape.
        if not arrow_available():
            print(FAST_HINT, file=sys.stderr)
        table = read_run_table(path)
        if table is not None:
            return table, None
    raw = head if len(head) < _COLUMNS_MIN_BYTES else _read_bytes(path, "run file")
    if not raw or raw.isspace():
        raise UsageError(f"run file {path}: the file is empty")
    text = _decode(raw, path, "run file")
    del raw  # the file's bytes: as large as everything read from it
    try:
        if _looks_like_jsonl(text):
            return None, read_results_jsonl(text)
        trec = read_run(text)
    except (UsageError, TrecFormatError) as exc:
        message = "; ".join(exc.problems) if isinstance(exc, TrecFormatError) else str(exc)
        raise UsageError(f"run file {path}: {message}") from None
    return None, (trec.tags, {qid: QueryResult(query_id=qid, ids=ids) for qid, ids in trec.items()})


# A run file this large is read as columns; below it, line by line is as quick as importing pyarrow.
_COLUMNS_MIN_BYTES = 1 << 20
# Said (not an error) when a large TREC run is read line by line for want of pyarrow, the `fast` extra
# (docs/cli.md, "Install": what it costs and what it buys).
FAST_HINT = (
    "hint: with pyarrow a run file this large is scored about 3 times faster in a third of the memory: "
    """pip install 'assay[fast]' (docs/cli.md, "Install")"""
)
# A JSONL run file opens an object (after a byte-order mark and blanks); a TREC line opens a query id.
_JSONL_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*\{")


@contextmanager
def _beside(read: Callable[[str], Any], path: str) -> Iterator[Callable[[], Any]]:
    """`read(path)` done beside the block; the block calls what this yields for the result (or `read`'s
    exception). A large file is read by a forked process: decoding the golden file holds the GIL, so a
    thread would mostly wait for it. A smaller one, or any file where the platform cannot fork, is read
    by a thread: a forked process would first import what the thread shares. So is any file when this
    process already runs another thread (`assay` called in-process by a threaded program)."""
    import multiprocessing
    import threading

    try:
        large = os.path.getsize(path) >= _FORK_MIN_BYTES
    except OSError:
        large = False  # `read` names what is wrong with the path
    # Forking while another thread runs may copy a lock it holds (the child then waits forever): only a
    # process of one thread forks, as `assay` started from the shell is here.
    alone = threading.active_count() == 1
    if not (large and alone) or "fork" not in multiprocessing.get_all_start_methods():
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as threads:
            yield threads.submit(read, path).result
        return
    # The pool forks its process before it starts its own threads, and no thread of ours is running.
    # Leaving the block ends the process, still reading if the block failed (a bad golden file).
    with multiprocessing.get_context("fork").Pool(1) as pool:
        yield pool.apply_async(read, (path,)).get


# From this size a run file is read by a forked process (at 6 MB, 2,000 queries x 100, the fork and its
# own imports cost about 0.1 s more than they save; at 60 MB, 20,000 queries, reading both files took
# 0.87-0.92 s forked against 1.35-1.40 s on a thread).
_FORK_MIN_BYTES = 16 << 20


@gc_paused()  # builds a report of 10^5 small acyclic objects
def cmd_score(args: argparse.Namespace) -> int:
    no_huge_pages()
    with _beside(_read_run, args.run) as reading:  # forked before the imports below: it needs none
        golden = _load_golden_columns(args.golden)
        # What the scoring needs, while the run is still being read (the golden file is mostly done first).
        from assay.ranked import match_table
        from assay.report import build_report

        known = {q.id for q in golden.queries}
        table, results = reading()

    run_block: dict[str, Any] = {"source": "score", "run_file": args.run, "golden_file": args.golden}
    if table is not None:
        run_block.update(format="trec", tags=list(table.tags))
        scored: Any = match_table(golden, table)
        unknown = scored.unknown
        answered = len(table.topics) - len(unknown)
    else:
        if isinstance(results, tuple):
            tags, results = results
            run_block.update(format="trec", tags=list(tags))
        else:
            run_block["format"] = "jsonl"
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


# ------------------------------------------------------------------------------------------- gate


def _rescored_baseline(args: argparse.Namespace, current: Any, baseline: Any) -> Any:
    """`--rescore-baseline`: the baseline's stored lists re-scored against `--golden` (`assay.rescore`),
    or the baseline itself when it is already on that version."""
    import getpass

    from assay.rescore import RescoreError, rescore_report, rescored_at

    if not args.rescore_baseline or not args.golden:
        raise UsageError("--rescore-baseline and --golden FILE (the new version's golden file) go together")
    golden = _load_golden(args.golden)
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
    current = _read_json(args.current, "--current")
    baseline = _read_json(args.baseline, "--baseline")
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

    data = _read_json(path, "--budgets") if path else None
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
        floor = NoiseFloor.from_dict(_read_json(path, "--noise"), where=f"--noise {path}")
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
        report = _read_json(path, "--suggest-budgets")
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


# ------------------------------------------------------------------------------------------- validate


@gc_paused()
def cmd_validate(args: argparse.Namespace) -> int:
    # Problems -> UsageError (exit 2), the first MAX_SHOWN listed; warnings printed there.
    no_huge_pages()
    golden = _load_golden_columns(args.golden, args.problems_csv, canonical=False)
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


# ------------------------------------------------------------------------------------------- convert


def cmd_convert(args: argparse.Namespace) -> int:
    """Judgments from one format to another through a validated golden file (assay.convert); every file
    is computed first, then all are written together (`write_all_atomic`)."""
    from assay.convert.beir import documents_jsonl
    from assay.convert.core import ConvertError, GradeReading, parse_map_options, parse_scale_option
    from assay.convert.formats import FORMATS, GOLDEN_FORMATS, convert
    from assay.convert.options import Options

    if FORMATS[args.source].read is None:
        raise UsageError(
            f"--from {args.source}: {args.source} is export only (it has no query texts to read)"
        )
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
    if args.documents is not None and args.source != "beir":
        raise UsageError("--documents applies to --from beir only")
    if args.split is not None and not _SPLIT.match(args.split):
        raise UsageError(f"--split {args.split!r}: a split name is letters, digits, - and _")
    options = Options(
        grades=grades,
        version=args.golden_version,
        topics=Path(args.topics) if args.topics else None,
        split=args.split,
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
    if converted.documents is not None:
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


# ------------------------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, like every other error; `--help` still shows the full usage.
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be between 0 and 1, exclusive")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="assay", description="Search relevance testing: run, sweep, score, gate, validate, convert."
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

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
    sweep.add_argument("--out", required=True, metavar="FILE", help="SWEEP.json")
    sweep.set_defaults(handler=cmd_sweep)

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

    validate = commands.add_parser("validate", help="check a golden file: problems (exit 2) or warnings")
    validate.add_argument("--golden", required=True, metavar="FILE")
    validate.add_argument(
        "--problems-csv",
        metavar="FILE",
        help=f"write every problem as CSV here (the output lists the first {MAX_SHOWN})",
    )
    validate.set_defaults(handler=cmd_validate)

    from assay.convert.formats import FORMATS

    convert = commands.add_parser(
        "convert", help="convert judgments between the golden file and other tools' formats (docs/cli.md)"
    )
    names = ", ".join(FORMATS)
    convert.add_argument(
        "--from",
        dest="source",
        required=True,
        choices=list(FORMATS),
        metavar="FORMAT",
        help=f"one of {names}",
    )
    convert.add_argument(
        "--to", dest="target", required=True, choices=list(FORMATS), metavar="FORMAT", help="as --from"
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
        "--documents", metavar="FILE", help="from beir with a corpus: where the documents go"
    )
    convert.add_argument(
        "--golden-version", metavar="V", help="the golden file's version (default: imported)"
    )
    convert.set_defaults(handler=cmd_convert)

    from assay.remote import add_remote_parser  # here: remote imports this module's helpers

    add_remote_parser(commands)
    return parser


class _VersionAction(argparse.Action):
    """`--version`: the installed version, looked up only when asked (importlib.metadata costs every other
    command 0.03-0.05 s of start-up)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        shown = "show the version and exit"
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=shown)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("assay")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        code = handler(args)
        sys.stdout.flush()  # here, so a reader that went away is a BrokenPipeError below, not at exit
        return code
    except UsageError as exc:
        print(f"assay {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"assay {args.command}: interrupted; nothing written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`assay gate ... | head`): say so once, and keep Python from reporting the
        # closed stdout again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"assay {args.command}: stopped: its output was closed before it finished", file=sys.stderr)
        return 2
    except OSError as exc:
        # Writing the artifact or summary failed (read-only directory, disk full): nothing half-written.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"assay {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
