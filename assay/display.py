"""How values read wherever a person sees them (pure: no Django): params and stage toggles, a document's
grades in a dispute, a gate finding's scope, numbers. Every page formats through the template filters of
`labeling/templatetags/display.py`, which are these functions; the dispute rules write their reasons with
`grades_text`, so a stored reason and a page say the same.

The vocabulary:
- params and stage toggles: `rewrite=true size=10`, each value as JSON (what a person types into the run
  and nightly forms, `--param rewrite=true` on the command line); `none` for no params;
- a run: `run 4 demo-search (min_should_match=1)`, its number, its target and what it sent that differs
  from the defaults (`run_label`);
- grades in a dispute: lowest first, `1 vs 3` (the same pair reads the same whoever graded first);
- numbers: `assay.metric_table.format_number` (4 decimals, a sign on a change, `—` for undefined).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from assay.metric_table import UNDEFINED, format_number

NO_PARAMS = "none"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 document`, `3 documents`, `2 queries`: a count with its noun in the number it takes (never
    "document(s)" or "quer(y/ies)"); `plural` where adding "s" is not it."""
    return f"{n} {in_number(n, noun, plural)}"


def in_number(n: int, word: str, plural: str | None = None) -> str:
    """`word` in the number `n` takes, for where the count is not written beside it: `no users alice,
    bob`, and a verb that agrees (`in_number(n, "goes", "go")`)."""
    return word if n == 1 else plural or word + "s"


def param_value(value: Any) -> str:
    """One param's value as typed: JSON (`true`, `3`, `"text"`)."""
    return json.dumps(value, ensure_ascii=False)


def params_text(params: Mapping[str, Any] | None) -> str:
    """`rewrite=true size=10`: params or stage toggles as a person types them; `none` when empty."""
    if not params:
        return NO_PARAMS
    return " ".join(f"{key}={param_value(value)}" for key, value in params.items())


def overrides_text(target: Mapping[str, Any] | None, overrides: Mapping[str, Any] | None) -> str:
    """Which params a run overrides and what its target sends for each, to read beside the params sent
    (which already hold the overriding values): `rewrite (target: false), size (target: not set)`;
    "" for no overrides."""
    target = target or {}
    return ", ".join(
        f"{key} (target: {param_value(target[key]) if key in target else 'not set'})"
        for key in overrides or {}
    )


def sent_text(sent: Mapping[str, Any] | None, stages: Mapping[str, Any] | None) -> str:
    """What a run sent that differs from its target's defaults, as typed: every engine param (an engine's
    own default is what it does when nothing is sent, so a param sent is a choice), and a stage toggle
    (a name in `stages`, the target's toggles as the run recorded them) only when it is not off
    (`rewrite=true`; a stage's default is off, `false`). "" when nothing differs."""
    toggles = stages or {}
    shown = {k: v for k, v in (sent or {}).items() if not (k in toggles and v is False)}
    return params_text(shown) if shown else ""


def run_label(
    run_id: int | None, target: str, sent: Mapping[str, Any] | None, stages: Mapping[str, Any] | None
) -> str:
    """How a run is named wherever it is named: `run 4 demo-search-msm1 (min_should_match=1)`, `run 1
    demo-search` when it sent nothing but the defaults (`sent_text`)."""
    differs = sent_text(sent, stages)
    return f"run {run_id} {target}" + (f" ({differs})" if differs else "")


def grades_text(grades: Iterable[int]) -> str:
    """A document's grades in a dispute, lowest first: `1 vs 3`, `0 vs 0 vs 3`."""
    return " vs ".join(str(g) for g in sorted(grades))


def finding_text(scope: str | None, message: str) -> str:
    """A gate finding's message without its scope when it starts with it: the page shows the scope
    beside the message once (`stratum billing: nDCG@k drop ...`, not `stratum billing: stratum billing
    nDCG@k drop ...`)."""
    if scope and message.startswith(f"{scope} "):
        return message[len(scope) + 1 :]
    return message


def number(value: object, decimals: int = 4) -> str:
    """A metric's value as every page shows it (`format_number`): `0.8027`, `—` when undefined."""
    return format_number(value, decimals=decimals)


def signed(value: object, decimals: int = 4) -> str:
    """A change: `+0.0968`, `-0.1902`, never `-0.0000`."""
    return format_number(value, signed=True, decimals=decimals)


def threshold(value: object) -> str:
    """A budget threshold as the budgets file holds it (`0.025`, not rounded), or `off`."""
    if value is None:
        return "off"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return UNDEFINED
    return str(value) if isinstance(value, int) else repr(value)  # the shortest text that reads back
