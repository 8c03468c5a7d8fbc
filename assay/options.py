"""Command-line values shared by `assay` and `assay remote`: params, headers, numbers, and the error
that makes a command exit 2 with one line."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.inputs import header_name_problem, header_value_problem
from assay.jsonin import JsonInputError, json_or_text


class UsageError(Exception):
    """Unusable input: the command prints the message as one line and exits 2, writing nothing."""


def parse_params(items: Sequence[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--param {item!r}: expected KEY=VALUE")
        if key in params:
            raise UsageError(f"--param {key}: given twice")
        # `rewrite=true` is the boolean, `size=3` the number, `mode=fast` the string.
        try:
            params[key] = json_or_text(value)
        except JsonInputError as exc:
            raise UsageError(f"--param {key}: {exc}") from None
    return params


def _header_name(name: str, option: str, item: str) -> str:
    name = name.strip()
    if refused := header_name_problem(name):
        raise UsageError(f"{option} {item!r}: {refused}")
    return name


def parse_headers(
    items: Sequence[str], env_items: Sequence[str], environ: Mapping[str, str]
) -> dict[str, str]:
    """`--header Name:value` and `--header-env Name=VARIABLE` (the value read from the environment, so
    secrets stay out of command lines and logs). A name given twice is an error."""
    headers: dict[str, str] = {}

    def add(name: str, value: str, option: str, item: str) -> None:
        if name.lower() in (n.lower() for n in headers):
            raise UsageError(f"{option} {name}: header given twice")
        if refused := header_value_problem(value):
            raise UsageError(f"{option} {name}: {refused}")
        headers[name] = value

    for item in items:
        name, sep, value = item.partition(":")
        if not sep:
            raise UsageError(f"--header {item!r}: expected Name:value")
        add(_header_name(name, "--header", item), value.strip(), "--header", item)
    for item in env_items:
        name, sep, variable = item.partition("=")
        if not sep or not variable.strip():
            raise UsageError(f"--header-env {item!r}: expected Name=ENV_VARIABLE")
        variable = variable.strip()
        if variable not in environ:
            raise UsageError(f"--header-env {item!r}: environment variable {variable} is not set")
        add(_header_name(name, "--header-env", item), environ[variable], "--header-env", item)
    return headers


def int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be at least {minimum}")
        return value

    return parse


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a positive number")
    return value
