"""A form page's summary of errors as a reader meets it (templates/_error_summary.html): its heading, and
each entry's words with the id its link goes to ("" for an entry without one), and the ids on the page,
each with the form that holds it."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any


@dataclass
class Summary:
    id: str = ""
    heading: str = ""
    entries: list[tuple[str, str]] = field(default_factory=list)  # (words, the id linked to)
    attrs: dict[str, str] = field(default_factory=dict)  # the summary element's own

    @property
    def texts(self) -> list[str]:
        return [text for text, _ in self.entries]


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.summaries: list[Summary] = []
        self.ids: dict[str, tuple[str, dict[str, str]]] = {}  # id -> (tag, attributes)
        self._depth = 0  # inside a summary: the open elements' depth
        self._in: str = ""  # "h2", "li" while reading one
        self._href = ""
        self._words: list[str] = []
        self.form_of: dict[str, str] = {}  # id -> the action of the form holding it ("" outside any)
        self.repeated: list[str] = []  # ids given to more than one element
        self._forms: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._forms.append(values.get("action", ""))
        if "id" in values:
            if values["id"] in self.ids:
                self.repeated.append(values["id"])
            self.ids.setdefault(values["id"], (tag, values))
            self.form_of[values["id"]] = self._forms[-1] if self._forms else ""
        if "data-error-summary" in values and not self._depth:
            self.summaries.append(Summary(id=values.get("id", ""), attrs=values))
            self._depth = 1
            return
        if not self._depth or tag in ("br", "input", "img"):
            return
        self._depth += 1
        if tag in ("h2", "li"):
            self._in, self._href, self._words = tag, "", []
        elif tag == "a" and self._in == "li":
            self._href = values.get("href", "").removeprefix("#")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self._forms:
            self._forms.pop()
        if not self._depth:
            return
        self._depth -= 1
        if tag == self._in:
            words = " ".join("".join(self._words).split())
            if tag == "h2":
                self.summaries[-1].heading = words
            else:
                self.summaries[-1].entries.append((words, self._href))
            self._in = ""

    def handle_data(self, data: str) -> None:
        if self._in:
            self._words.append(data)


def read_page(response: Any) -> tuple[list[Summary], dict[str, tuple[str, dict[str, str]]]]:
    """The page's summaries of errors and every element with an id (its tag and attributes)."""
    reader = _Reader()
    reader.feed(response.content.decode())
    return reader.summaries, reader.ids


def error_summary(response: Any) -> Summary:
    """The page's one summary of errors, every link of it checked to go to an element of the page."""
    summaries, ids = read_page(response)
    assert len(summaries) == 1, f"{len(summaries)} summaries of errors on the page"
    summary = summaries[0]
    for text, anchor in summary.entries:
        assert not anchor or anchor in ids, f"{text!r} links to #{anchor}, which is not on the page"
    return summary


def read_forms(response: Any) -> _Reader:
    """The page read: `ids` (tag and attributes of each), `form_of` (the action of the form holding each
    id), `repeated` (ids given twice)."""
    reader = _Reader()
    reader.feed(response.content.decode())
    return reader
