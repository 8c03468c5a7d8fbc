"""Pages opened side by side, in tabs of one browser context, for the tests that visit many pages.

A page is measured once its network has been idle for half a second (Playwright's "networkidle"): opened
one after another in one tab, most of such a test is those half seconds. Here the pages of a batch load at
the same time, each in its own tab, so their waits overlap; what is done with each page is unchanged.
The documents are still requested one after another, in order (`goto` returns once a document's response
has arrived, so whatever a GET changes on the server is changed in the same order as before), and the
tabs are handed back in that order.
"""

from __future__ import annotations

from collections.abc import Iterator

from playwright.sync_api import BrowserContext, Page, Response

TABS = 4  # pages loading at once: on two CPUs more saved no more time


def new_tabs(context: BrowserContext, timeout_ms: float) -> list[Page]:
    tabs = [context.new_page() for _ in range(TABS)]
    for tab in tabs:
        tab.set_default_timeout(timeout_ms)
    return tabs


def loaded(tabs: list[Page], urls: list[str]) -> Iterator[tuple[Page, str, Response | None]]:
    """Open urls[i] in tabs[i] (at most one URL a tab), wait until each has loaded and gone network-idle,
    then hand back each tab with its URL and document response, in the URLs' order."""
    assert len(urls) <= len(tabs), f"{len(urls)} pages for {len(tabs)} tabs"
    loading = [(tab, url, tab.goto(url, wait_until="commit")) for tab, url in zip(tabs, urls, strict=False)]
    for tab, _, _ in loading:
        tab.wait_for_load_state("load")
        tab.wait_for_load_state("networkidle")
    for tab, url, response in loading:
        # A tab behind the others draws its frames late (a requestAnimationFrame waits seconds): in front,
        # it is measured as the only tab was.
        tab.bring_to_front()
        yield tab, url, response
