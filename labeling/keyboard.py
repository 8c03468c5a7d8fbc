"""The rater pages' one keyboard language (docs/labeling.md, "Keyboard"), written once.

Every key a rater page answers is a row of `KEYS`: a key means one thing (its `name`) on every page that
uses it, and does nothing on a page that does not. The grading page (everyday work, gold checks and
calibration rounds alike) and the side-by-side rater page read their rows from here: `page_keys` gives a
page its help dialog's rows (`templates/_keys_help.html`), its line of keys and the map its script reads
(`static/js/keys.js`); `keys_markdown` is the table of docs/labeling.md, which
tests/labeling/test_keyboard.py holds to this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.sxs import REASON_LABELS, REASONS

GRADING = "grading"
SXS = "sxs"
# The pages with keys, as the docs' table heads them.
PAGES = {GRADING: "the grading page", SXS: "the side-by-side page"}
# The answer keys: on each page the digits of its own scale (a grade, a point of the seven-point scale).
DIGITS = "digits"
# How a key's KeyboardEvent.key is shown.
SHOWN = {"ArrowDown": "↓", "ArrowUp": "↑", "Escape": "Esc"}
# The side-by-side page's reason tags (assay.sxs.REASONS): a letter each that no other row holds.
REASON_KEYS = {
    "relevance": "r",
    "snippet": "t",
    "duplicates": "s",
    "surface": "v",
    "missing": "m",
    "freshness": "f",
    "other": "o",
}


@dataclass(frozen=True)
class Key:
    keys: tuple[str, ...]  # KeyboardEvent.key values, or (DIGITS,): the page's answer digits
    action: str  # what the page's script does (static/js/keys.js dispatches on it)
    name: str  # the meaning, the same on every page that uses the key
    does: dict[str, str] = field(default_factory=dict)  # page -> what it does there
    arg: str | None = None  # what the action is given (a digit is given its number)


KEYS: tuple[Key, ...] = (
    Key(
        (DIGITS,),
        "answer",
        "answer",
        {
            GRADING: "grade the highlighted document on the set's scale, saved at once",
            SXS: "choose the point of the scale: 1 L much better, 4 about the same, 7 R much better",
        },
    ),
    Key(("j", "ArrowDown"), "next_item", "next document", {GRADING: "highlight the next document"}),
    Key(("k", "ArrowUp"), "previous_item", "previous document", {GRADING: "highlight the previous document"}),
    Key(
        ("x",),
        "cant_judge",
        "can't judge",
        {GRADING: "can't judge the highlighted document: choose why (arrows, Enter saves); not a grade"},
    ),
    Key(
        ("c",),
        "note",
        "note",
        {
            GRADING: "open the note of the highlighted document's grade (Enter saves it, Shift+Enter "
            "starts a new line)",
            SXS: "write a note on your answer (Ctrl+Enter submits from it)",
        },
    ),
    *(
        Key(
            (REASON_KEYS[tag],),
            "reason",
            f"reason: {REASON_LABELS[tag]}",
            {SXS: "tick or untick the reason"},
            tag,
        )
        for tag in REASONS
    ),
    Key(("h",), "junk_left", "junk in L", {SXS: "tick or untick junk in L's top three"}),
    Key(("l",), "junk_right", "junk in R", {SXS: "tick or untick junk in R's top three"}),
    Key(
        ("u",),
        "undo",
        "undo",
        {
            GRADING: "undo your last change on this page (again for the one before)",
            SXS: "take your submitted answer back, to answer again",
        },
    ),
    Key(
        ("Enter",),
        "submit",
        "submit",
        {GRADING: "save the open note or can't judge", SXS: "submit your answer"},
    ),
    Key(
        ("d",),
        "done",
        "mark done",
        {GRADING: "mark the query done: every document graded or can't judge, then its grades lock"},
    ),
    Key(("p",), "previous_query", "previous query", {GRADING: "the previous open query in your queue"}),
    Key(
        ("n",),
        "next_query",
        "next query",
        {
            GRADING: "the next open query; warns once while this one is not marked done or a choice "
            "is not saved, and n again goes on",
            SXS: "the next query; warns once while your choice is not submitted, and n again goes on",
        },
    ),
    Key(("?",), "help", "help", {GRADING: "show or hide this help", SXS: "show or hide this help"}),
    Key(
        ("Escape",),
        "close",
        "close",
        {
            GRADING: "close the help; cancel an open note or can't judge",
            SXS: "close the help; leave the note",
        },
    ),
)


@dataclass(frozen=True)
class Row:
    """A key as one page shows it."""

    action: str
    name: str
    does: str
    shown: tuple[str, ...]  # the keys as shown
    span: bool  # shown as a range (`0`–`3`) rather than alternatives (`j` / `↓`)


@dataclass(frozen=True)
class PageKeys:
    rows: tuple[Row, ...]
    keymap: dict[str, tuple[str, Any]]  # KeyboardEvent.key -> (action, argument)
    key: dict[str, str]  # action -> the first key as shown, for buttons' "(u)"

    @property
    def digits(self) -> list[str]:
        return [k for k, (action, _) in self.keymap.items() if action == "answer"]


def page_keys(page: str, digits: list[int]) -> PageKeys:
    """The keys `page` uses, in the table's order; `digits`: the answers it takes (single digits only,
    as a key can type no other)."""
    if page not in PAGES:
        raise ValueError(f"no page {page!r} has keys: {', '.join(PAGES)}")
    answers = [str(d) for d in digits if 0 <= d <= 9]
    rows, keymap, first = [], {}, {}
    for key in KEYS:
        if page not in key.does:
            continue
        pressed = answers if key.keys == (DIGITS,) else list(key.keys)
        span = key.keys == (DIGITS,)
        for k in pressed:
            keymap[k] = (key.action, int(k) if span else key.arg)
        shown = [answers[0], answers[-1]] if span and len(answers) > 1 else pressed
        rows.append(Row(key.action, key.name, key.does[page], tuple(SHOWN.get(k, k) for k in shown), span))
        first[key.action] = SHOWN.get(pressed[0], pressed[0]) if pressed else ""
    return PageKeys(tuple(rows), keymap, first)


def key_of(action: str) -> str:
    """An action's first key as shown, for words that name it ("undo (u) first")."""
    key = next(key for key in KEYS if key.action == action)
    return SHOWN.get(key.keys[0], key.keys[0])


def keys_markdown() -> str:
    """The table of docs/labeling.md, "Keyboard": every key, its meaning and what it does on each page."""
    head = ["key", "means", *(f"on {title}" for title in PAGES.values())]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for key in KEYS:
        shown = ", ".join(f"`{SHOWN.get(k, k)}`" for k in key.keys)
        keys = "the digits of the page's scale" if key.keys == (DIGITS,) else shown
        cells = [keys, key.name, *(key.does.get(page, "—") for page in PAGES)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
