"""The answer contract: `{"grade": <int on the scale>, "reason": "<one line>"}`, and nothing else.

An answer is the JSON object alone or the object alone inside one ```json fence. Anything else (prose
around it, a grade off the scale or not an integer, a missing or extra field) is an error that quotes
what was seen, trimmed, and is never turned into a grade: a judge that cannot keep the contract is not
guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assay.jsonin import JsonInputError, json_loads

SEEN_LIMIT = 200
REASON_LIMIT = 500
_FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(?P<body>.*?)\n?```\Z", re.DOTALL)
FIELDS = frozenset({"grade", "reason"})


@dataclass(frozen=True, slots=True)
class Answer:
    """A grade with its reason, or an error (grade None) saying what was wrong and what was seen."""

    grade: int | None
    reason: str = ""
    error: str | None = None


def seen(text: str, limit: int = SEEN_LIMIT) -> str:
    """What an error quotes of a reply: one line, at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _refused(problem: str, content: str) -> Answer:
    return Answer(grade=None, error=f"{problem}; seen: {seen(content)!r}")


def parse_answer(content: str, scale: range) -> Answer:
    """The grade and reason in a model's reply, or the error that refuses it."""
    stripped = content.strip()
    fenced = _FENCE.match(stripped)
    body = fenced.group("body").strip() if fenced else stripped
    try:
        value: Any = json_loads(body)
    except JsonInputError as exc:
        if str(exc).startswith("invalid JSON"):
            return _refused("not a JSON object (prose, or JSON with text around it)", content)
        return _refused(f"not a usable JSON object ({exc})", content)  # nested too deep, a huge number
    if not isinstance(value, dict):
        return _refused("not a JSON object", content)
    missing = sorted(FIELDS - value.keys())
    if missing:
        return _refused(f"missing {', '.join(missing)}", content)
    extra = sorted(value.keys() - FIELDS)
    if extra:
        return _refused(f"unexpected field {', '.join(extra)}", content)
    grade, reason = value["grade"], value["reason"]
    if isinstance(grade, bool) or not isinstance(grade, int):
        return _refused("grade is not an integer", content)
    if grade not in scale:
        return _refused(f"grade {grade} is off the scale {scale.start}..{scale.stop - 1}", content)
    if not isinstance(reason, str):
        return _refused("reason is not a string", content)
    return Answer(grade=grade, reason=seen(reason, REASON_LIMIT))
