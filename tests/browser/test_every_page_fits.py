"""Every page a role reaches fits a 390 px phone and a 1,366 px desktop: no sideways scrolling of the
document, no table wider than its box outside a box that scrolls, and no two labels of a chart drawn over
each other.

The pages are found, not listed: for each role (rater, reviewer, admin) the test follows the links of
every page it opens, from home and from the pages tests/browser/site.py names for the role (the README
tour's), same origin and GET only, skipping logout, deletions, downloads and the JSON API. A page is
opened once per shape (its path with the numbers taken out, and the names of its query string), so a
hundred runs or a list's every sort cost one visit each, and the crawl stops at `LIMIT` pages. A page
another helper adds later is found the same way, through the link that leads to it.

Each role's crawl is two tests, so that the two pytest workers share them: the app's own pages (every
link but Django's admin site) and Django's admin site (from /admin/, its links only). A page of the admin
site is one shape whatever its query string (its filters and sorts multiply the addresses, not the
layouts: with them the admin's crawl reached 1,142 shapes). A crawl that reaches `LIMIT` fails, so what
it leaves out is never silent.

The site carries more than tests/browser/site.py's: several finished runs of the target with their params
(the trend's table and charts), so every page has the content that made it wide before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urldefrag, urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests import factories
from tests.browser.site import *  # noqa: F403  (the site and the fixtures it stands on)
from tests.browser.site import PAGES, ROLE_PAGES, USERS, Site
from tests.browser.tabs import loaded, new_tabs
from tests.support.runs import RunFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]
WIDTHS = (390, 1366)
HEIGHT = 844
LIMIT = (
    400  # pages per crawl: above what any reaches today (a test fails at it), a bound should links multiply
)
ADMIN_SITE = "/admin/"  # Django's admin site: its own crawl (the module docstring says why)
# Links the crawl never follows: signing out, Django admin's deletion and log-out pages, the JSON API and
# its schema (Swagger UI itself is a page), files.
SKIPPED = re.compile(r"/logout/|/delete/|/api/(?!docs/)|/static/|/media/|/download|\.(json|jsonl|csv|zip)$")

# Every table as laid out, with what holds it: a table wider than its box must sit in a box that scrolls
# sideways (overflow-x auto or scroll); "hidden" or "visible" cut it off or let it spill.
TABLES = """[...document.querySelectorAll("table")]
  .filter((t) => t.getClientRects().length && !t.closest("[hidden], .visually-hidden, dialog:not([open])"))
  .map((t) => {
    let box = t.parentElement, scrolls = false;
    for (let e = box; e && e !== document.body; e = e.parentElement) {
      const o = getComputedStyle(e).overflowX;
      if (o === "auto" || o === "scroll") { scrolls = true; break; }
      if (o === "hidden" || o === "clip") { box = e; break; }
    }
    const row = t.querySelector("tr");
    const name = t.id ? `#${t.id}` : (t.closest("[id]") ? `in #${t.closest("[id]").id}` : "")
      + (row ? ` "${row.textContent.trim().replace(/\\s+/g, " ").slice(0, 40)}"` : "");
    return {name, width: t.getBoundingClientRect().width, room: box.clientWidth, scrolls};
  })
  .filter((t) => !t.scrolls && t.width > t.room + 1)
  .map((t) => `table ${t.name}: ${Math.round(t.width)} px in ${t.room} px`)"""
# What sticks out past the screen's right edge outside boxes that scroll (for the failure's message).
SPILLING = """[...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
  .filter((e) => {
    for (let p = e.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll") return false;
    }
    return true;
  })
  .slice(0, 6)
  .map((e) => `${e.tagName.toLowerCase()}.${e.className.baseVal ?? e.className}: `
    + Math.round(e.getBoundingClientRect().right))"""
# The labels of each chart drawn over each other (a value over "baseline", a tick over the axis note).
OVERLAPS = """[...document.querySelectorAll("svg")].flatMap((svg) => {
  const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim())
    .map((t) => ({text: t.textContent.trim(), box: t.getBoundingClientRect()}));
  const found = [];
  texts.forEach((a, i) => texts.slice(i + 1).forEach((b) => {
    const x = Math.min(a.box.right, b.box.right) - Math.max(a.box.left, b.box.left);
    const y = Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top);
    if (x > 1 && y > 1) found.push(`"${a.text}" over "${b.text}"`);
  }));
  return found;
})"""

# Disabled buttons that look as if they would act: the pointer cursor, or the colours of an enabled one
# (on the app's own pages: Django admin's selector arrows keep Django's look).
ENABLED_LOOKING = """[...document.querySelectorAll("button:disabled")]
  .filter(() => document.querySelector("link[href*='css/assay.css']"))
  .filter((b) => b.getClientRects().length && !b.matches(".link-button, .link, [aria-pressed=true]"))
  .filter((b) => {
    const style = getComputedStyle(b);
    return style.cursor !== "not-allowed" || style.backgroundColor === "rgb(36, 84, 214)";  // --accent
  })
  .map((b) => `a disabled button that looks enabled: "${b.textContent.trim()}"`)"""
# The flash banner's left edge against the content's (the page's heading).
MISALIGNED = """(() => {
  const banner = document.querySelector(".messages li"), heading = document.querySelector("main h1");
  if (!banner || !heading) return [];
  const [a, b] = [banner.getBoundingClientRect().left, heading.getBoundingClientRect().left];
  const said = `the flash banner starts at ${Math.round(a)} px, the content at ${Math.round(b)}`;
  return Math.abs(a - b) > 1 ? [said] : [];
})()"""
# Resolves once the page has drawn twice (at a new width, laid out again).
TWO_FRAMES = "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
# Every check at once, in one script (one round trip to the browser, not six a width).
PROBLEMS = f"""(() => {{
  const [width, screen] = [document.documentElement.scrollWidth, window.innerWidth];
  const wide = width > screen ? [`the page is ${{width}} px wide: ${{({SPILLING}).join(", ")}}`] : [];
  return [...wide, ...{TABLES}, ...{OVERLAPS}, ...{ENABLED_LOOKING}, ...{MISALIGNED}];
}})()"""


@pytest.fixture(name="crowded")
def crowded_fixture(site: Site, finished: RunFactory) -> Site:
    """The site with the target's history the demo builds up: runs with different params, so the trend
    has a line of points with labels and a table of them, and the runs list a page of rows."""
    for params in ({"rewrite": True, "boost": "title^2"}, {}, {"rewrite": True, "synonyms": "v2"}):
        finished(params=params)
    return site


def shape(url: str) -> str:
    """What makes two addresses the same page for the crawl: the path with every number replaced, and the
    names in its query string (not their values; a list's page number left out)."""
    parts = urlsplit(url)
    path = re.sub(r"/\d+/", "/N/", parts.path)
    if path.startswith(ADMIN_SITE):  # the admin site's filters and sorts: the same page laid out again
        return path
    names = sorted({name for name, _ in parse_qsl(parts.query, keep_blank_values=True)} - {"page"})
    return path + ("?" + "&".join(names) if names else "")


def links(page: Page, origin: str) -> list[str]:
    """The page's same-origin GET links to follow (anchors, not form actions; no `download`)."""
    hrefs: list[str] = page.evaluate(
        """[...document.querySelectorAll("a[href]:not([download])")]
             .filter((a) => !a.closest("[hidden]"))
             .map((a) => new URL(a.getAttribute("href"), document.baseURI).href)"""
    )
    out = []
    for href in hrefs:
        url = urldefrag(href).url
        if url.startswith(origin + "/") and not SKIPPED.search(urlsplit(url).path):
            out.append(url)
    return out


def problems(page: Page) -> list[str]:
    """What does not fit on the page at its current width."""
    found: list[str] = page.evaluate(PROBLEMS)
    return found


def crawl(
    context: BrowserContext, origin: str, start: list[str], admin_site: bool = False
) -> tuple[list[str], list[str]]:
    """Open every page reachable from `start`, once per shape, at each width; the pages opened and
    what did not fit on them. With `admin_site` only Django's admin site is followed, without it
    everything else.

    Breadth first, a batch of the queue's next pages at a time, loaded side by side (tests/browser/tabs.py)
    and then taken in queue order: the pages opened, and their order, are those of one tab opening them one
    by one."""
    tabs = new_tabs(context, 15_000)
    queue, seen = list(start), set()
    opened: list[str] = []
    failures: list[str] = []
    while queue and len(opened) < LIMIT:
        batch: list[str] = []
        while queue and len(batch) < min(len(tabs), LIMIT - len(opened)):
            url = queue.pop(0)
            if shape(url) not in seen:
                seen.add(shape(url))
                batch.append(url)
        for tab in tabs:
            tab.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
        for tab, url, response in loaded(tabs, batch):
            if response is None or "text/html" not in response.headers.get("content-type", ""):
                continue
            if response.status >= 500:
                failures.append(f"{url}: {response.status}")
                continue
            opened.append(url)
            for width in WIDTHS:
                tab.set_viewport_size({"width": width, "height": HEIGHT})
                tab.evaluate(TWO_FRAMES)
                failures += [f"{url} at {width} px: {problem}" for problem in problems(tab)]
            queue += [
                link
                for link in links(tab, origin)
                if shape(link) not in seen and shape(link).startswith(ADMIN_SITE) == admin_site
            ]
    return opened, failures


@pytest.mark.parametrize("admin_site", [False, True], ids=["app", "admin-site"])
@pytest.mark.parametrize("role", ["rater", "reviewer", "admin"])
def test_every_page_the_role_reaches_fits_a_phone_and_a_desktop(
    browser: Browser, live_server: Any, session_for: Session, crowded: Site, role: str, admin_site: bool
) -> None:
    context = browser.new_context()
    try:
        session_for(context, USERS[role])
        tour = [f"{live_server.url}{PAGES[name](crowded)}" for name in ROLE_PAGES[role]]
        tour = [url for url in tour if shape(url).startswith(ADMIN_SITE) == admin_site]
        home = f"{live_server.url}{ADMIN_SITE if admin_site else '/'}"
        opened, failures = crawl(context, live_server.url, [home, *tour], admin_site)
    finally:
        context.close()
    assert len(opened) < LIMIT, f"the crawl stopped at LIMIT ({LIMIT} pages) with pages left: raise it"
    assert {shape(url) for url in tour} <= {shape(url) for url in opened}, "the crawl stopped short"
    assert not failures, "\n".join(failures)


def test_the_flash_banner_lines_up_with_the_content(
    browser: Browser, live_server: Any, session_for: Session
) -> None:
    factories.UserFactory.create(username="carol", groups=["raters"])  # nothing to grade: a message says so
    context = browser.new_context()
    try:
        session_for(context, "carol")
        page = context.new_page()
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": HEIGHT})
            page.goto(f"{live_server.url}/queue/next/")
            expect(page.locator(".messages li")).to_contain_text("No open assignments left")
            assert page.evaluate(MISALIGNED) == []
    finally:
        context.close()
