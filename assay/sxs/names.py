"""The name raters read for a study (docs/sxs.md, "The name raters see"): chosen by the reviewer, stable
(never a position in a list, which changes when a new study arrives), and naming nothing of what is
compared: no system (a target's name, a parameter or stage toggle either run sent) and no run by its
number. A reviewer's title is used when it names none of those, else "Study of <date>"."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from datetime import date

# "run 12", "Run #12", "run12": a run named by its number.
RUN_NUMBER = re.compile(r"\brun\s*#?\s*\d+", re.IGNORECASE)
# A system word this short is matched as a whole word only ("a", "v2"), a longer one anywhere in the name
# ("rewrite" in "rewriter on").
WHOLE_WORD_BELOW = 3


def _names(name: str, word: str) -> bool:
    if len(word) < WHOLE_WORD_BELOW:
        return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", name, re.IGNORECASE) is not None
    return word.casefold() in name.casefold()


def rater_name_problem(name: str, *, systems: Iterable[str]) -> str | None:
    """Why raters may not read `name` as a study's name, in words, or None: it names one of `systems`
    (the two targets' names and the parameters and stage toggles the runs sent) or a run by its number."""
    if not name.strip():
        return "say what raters should call the study"
    named = sorted(
        {word for word in systems if word.strip() and _names(name, word.strip())}, key=str.casefold
    )
    if named:
        return f"{name.strip()!r} names {', '.join(repr(w) for w in named)}, which raters may not see"
    if RUN_NUMBER.search(name):
        return f"{name.strip()!r} names a run by its number, which raters may not see"
    return None


def dated_name(day: date) -> str:
    """`Study of 3 May 2026`."""
    return f"Study of {day.day} {day:%B %Y}"


def rater_name_default(
    title: str, *, systems: Iterable[str], made: date, at: str = "", taken: Collection[str] = ()
) -> str:
    """The name raters read when the reviewer chose none: the study's `title` when raters may read it,
    else `Study of <made>`, with the time of day `at` ("14:05") after it when another study of the set
    (`taken`) is already called that."""
    systems = list(systems)
    if title.strip() and rater_name_problem(title, systems=systems) is None:
        return title.strip()
    name = dated_name(made)
    if name in taken and at:
        return f"{name}, {at}"
    return name
