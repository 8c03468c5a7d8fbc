"""The project's docs (`docs/*.md`) read and rendered (pure): what the app's doc pages show and what its
pages' citations of a doc (`docs/metrics.md, "Noise floor"`) link to.

Rendered with markdown-it-py (CommonMark plus tables), raw HTML in a doc shown as text, never run. Each
heading gets the id `heading_anchor` makes of its text, the one rule the citations' links use too;
Markdown links between docs (`metrics.md#budgets`, `docs/runs.md`) become what `page_url` gives.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from assay.paths import BASE_DIR

DOCS_DIR = BASE_DIR / "docs"
# A doc's name is its file name without ".md": lower-case words joined by hyphens (no path, no dots).
DOC_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_DOC_LINK = re.compile(r"^(?:\./)?(?:docs/)?(?P<name>[a-z0-9-]+)\.md(?:#(?P<anchor>[\w-]*))?$")


def doc_path(name: str) -> Path | None:
    """The doc's file, or None when `name` names none."""
    if not DOC_NAME.match(name):
        return None
    path = DOCS_DIR / f"{name}.md"
    return path if path.is_file() else None


def doc_names() -> list[str]:
    return sorted(path.stem for path in DOCS_DIR.glob("*.md") if DOC_NAME.match(path.stem))


def heading_anchor(text: str) -> str:
    """A heading's id: its words lower-cased and joined by hyphens (`Noise floor` -> `noise-floor`)."""
    return "-".join(re.findall(r"\w+", text.casefold()))


def doc_sections(path: Path) -> frozenset[str]:
    """The anchors of the doc's headings."""
    return _sections(path, path.stat().st_mtime_ns)


@cache
def _sections(path: Path, mtime_ns: int) -> frozenset[str]:
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    return frozenset(
        heading_anchor(tokens[i + 1].content)
        for i, token in enumerate(tokens)
        if token.type == "heading_open"
    )


def render_doc(path: Path, page_url: Callable[[str], str]) -> tuple[str, str]:
    """(title, HTML) of a doc; `page_url(name)` is the address of the doc `name`'s page."""
    text = path.read_text(encoding="utf-8")
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), path.stem)
    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def anchors_and_links(state: Any) -> None:
        tokens = state.tokens
        for i, token in enumerate(tokens):
            if token.type == "heading_open":
                token.attrSet("id", heading_anchor(tokens[i + 1].content))
            for child in token.children or ():
                if child.type == "link_open":
                    child.attrSet("href", _href(str(child.attrGet("href") or ""), page_url))

    md.core.ruler.push("doc_anchors_and_links", anchors_and_links)
    # Wide tables and code scroll in their own box, which the keyboard can reach, never the page (a doc's
    # own "<table>" is text here: raw HTML is escaped).
    html = md.render(text).replace("<table>", '<div class="scroll" tabindex="0"><table>')
    html = html.replace("</table>", "</table></div>").replace("<pre>", '<pre class="scroll" tabindex="0">')
    return title, html


def _href(href: str, page_url: Callable[[str], str]) -> str:
    """A link of a doc: another doc's page (at its section), or the address as written."""
    match = _DOC_LINK.match(href)
    if match and doc_path(match["name"]):
        url = page_url(match["name"])
        return f"{url}#{match['anchor']}" if match["anchor"] else url
    return href
