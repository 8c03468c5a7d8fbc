"""`assay`: evaluate a search system from the command line, score run files, gate against a baseline,
convert judgments between the golden file and other tools' formats.

Needs no database and imports nothing from Django, so CI can run it with only the package installed.
Every command, option and exit code: docs/cli.md.

Exit codes, all commands: 0 success, 1 a real finding (`run`/`score`: some queries errored, the
artifact records them and the gate will fail closed; `gate`: verdict fail), 2 unusable input (bad
arguments, unreadable or invalid files, a search URL that answered no query at all). Errors are one line
on stderr (`assay run: error: ...`), never a traceback for something the user can fix.

The parser is built here from each command group's `add_parsers` (`search`: run and sweep; `score`;
`gate`; `validate`; `convert`; `assay.remote`: remote); what the commands read is in `files` (the
command's files and the golden file) and `runfile` (a run file, as a typed `RunFile`).
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn

from assay.cli import convert, gate, score, search, validate
from assay.options import UsageError
from assay.remote import add_remote_parser


class _Parser(argparse.ArgumentParser):
    _args: Sequence[str] = ()

    def parse_known_args(self, args: Iterable[str] | None = None, namespace: Any = None) -> Any:
        # Kept for `error`: a subcommand's parser is given the arguments after its name.
        self._args = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self._args, namespace)

    def error(self, message: str) -> NoReturn:
        # One line, like every other error; `--help` still shows the full usage.
        self.exit(
            2, f"{self.prog}: error: {message}{_dash_hint(message, self._args)} (see {self.prog} --help)\n"
        )


_EXPECTED_ONE = re.compile(r"^argument ([^:]+): expected one argument$")


def _dash_hint(message: str, args: Sequence[str]) -> str:
    """argparse reads a value that starts with '-' and is not a plain negative number (`--map -1=0`,
    `--scale -1..1`) as an option, and then says the option "expected one argument": the way out is the
    `=` form, said with the value given."""
    match = _EXPECTED_ONE.match(message)
    if match is None:
        return ""
    names = match.group(1).split("/")
    for option, value in itertools.pairwise(args):
        if option in names and value.startswith("-"):
            return f": {value!r} starts with '-' and reads as an option; write {option}={value}"
    return ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="assay", description="Search relevance testing: run, sweep, score, gate, validate, convert."
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for group in (search, score, gate, validate, convert):
        group.add_parsers(commands)
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
