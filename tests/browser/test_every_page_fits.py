"""Every page a role reaches fits a 390 px phone and a 1,366 px desktop: no sideways scrolling of the
document, no table wider than its box outside a box that scrolls, and no two labels of a chart drawn over
each other. At 390 px also: the top bar under 80 px tall (its menu folded behind its button), no control
cut off (every link's, button's and field's box inside the screen's width, in a box that scrolls or not),
and the deciding columns of the tables a reviewer decides by in sight (`DECIDING`). A rater's
study page and grading page at 390 px: the answer bar at the foot of the first screen, the top of both
lists above it, and clear of the last results at the page's end.

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
(the trend's table and charts), so every page has the content that made it wide before, and a
side-by-side study for the rater's study pages.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urldefrag, urlsplit

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, Page, expect

from evaluation.models import QueryRunResult, StudyTask
from evaluation.studies.services import StudySpec, study_create
from labeling.models import Document, GoldenSet
from tests import factories
from tests.browser.site import *  # noqa: F403  (the site and the fixtures it stands on)
from tests.browser.site import PAGES, ROLE_PAGES, USERS, Site
from tests.browser.tabs import loaded, new_tabs
from tests.browser.test_grading_keys import sized_page
from tests.support.runs import RunFactory
from tests.support.studies import two_runs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]
NARROW = 390
WIDTHS = (NARROW, 1366)
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
# At 390 px only: the top bar (templates/base.html) under 80 px tall, its menu folded behind its button.
HEADER = """(() => {
  const header = document.querySelector("header.topbar");
  const height = header ? header.getBoundingClientRect().height : 0;
  return height < 80 ? [] : [`the header is ${Math.round(height)} px tall`];
})()"""
# At 390 px only: every control shown (a link, a button, a field) inside the screen's width, wherever it
# sits: in a box that scrolls sideways too, whose hidden part nobody looks for. A table with controls in its
# later columns (a row's action, a grid of fields, sortable headers) has a phone layout instead: each row a
# card (table.cards, static/css/cards.css), Django admin's change lists too (static/js/admin.js).
CUT_OFF = """[...document.querySelectorAll("CONTROLS")]
  .filter((c) => c.checkVisibility({visibilityProperty: true}) && !c.closest(".visually-hidden"))
  .map((c) => ({c, box: c.getBoundingClientRect()}))
  .filter(({box}) => box.width > 0 && (box.left < -0.5 || box.right > window.innerWidth + 0.5))
  .slice(0, 6)
  .map(({c, box}) => `${c.tagName.toLowerCase()} "${(c.textContent.trim() || c.getAttribute("aria-label")
    || c.name || c.id).replace(/\\s+/g, " ").slice(0, 40)}" cut off: `
    + `${Math.round(box.left)} to ${Math.round(box.right)} px`)
""".replace("CONTROLS", "a[href], button, input:not([type=hidden]), select, textarea, summary")
# At 390 px, on the pages a reviewer opens for them (by PAGES' names): the deciding columns, every cell of
# them shown and inside the screen's width (seen without scrolling sideways). A table of cards shows every
# cell but its empty ones and those its desktop layout alone has (.wide-only; the budgets' "—": no field).
SHOWN = ":not(:empty, .wide-only, .blank)"
DECIDING = {
    "runs": ["#runs th.status", "#runs th.verdict-col", "#runs td.status", "#runs td.verdict-col"],
    "side by side": ["#list-a th", "#list-a td", "#list-b th", "#list-b td"],  # both lists, stacked
    "compare picker": ["#picker th:not(.wide-only)", "#picker td:not(.wide-only)"],  # change, overlap
    "set detail": [f"#queries td{SHOWN}"],  # its raters, reassign, reopen
    "query review": [f"#pool td{SHOWN}"],  # the grades, the final label, gold
    "review queue": [f"table.disputed td{SHOWN}"],  # why, Review
    "agreement": [f"table.disputed td{SHOWN}"],
    "proposals": [f"#pending-proposals td{SHOWN}"],  # frozen, proposed, accept or reject
    "judges": [f"#judges td{SHOWN}"],  # qualification
    "judge qualification": [f"#qualifications td{SHOWN}"],  # withdraw
    "run report": [f"#top-losers td{SHOWN}"],  # drop, side by side
    "targets": [f"#targets td{SHOWN}"],  # edit
    "target detail": [f"#schedules td{SHOWN}"],  # edit, delete
    "budgets": [f".budgets-grid td{SHOWN}", ".budgets-grid tbody th"],  # every field, by scope
    "API tokens": [f"#tokens td{SHOWN}"],  # revoke
    "experiment": [f"#config-table td{SHOWN}", "#config-table th a"],  # every figure, the sorts
    "admin golden sets": [f"#result_list td{SHOWN}", "#result_list th a"],  # Django admin's change list
}
IN_SIGHT = """(selectors) => selectors.flatMap((selector) => {
  const found = [...document.querySelectorAll(selector)];
  if (!found.length) return [`${selector}: not on the page`];
  return found.map((e) => ({e, box: e.getBoundingClientRect()}))
    .filter(({e, box}) => !e.checkVisibility() || box.left < -0.5 || box.right > window.innerWidth + 0.5)
    .slice(0, 3)
    .map(({e, box}) => `${selector} "${e.textContent.trim().slice(0, 30)}" out of sight: `
      + `${Math.round(box.left)} to ${Math.round(box.right)} px`);
})"""
# Resolves once the page has drawn twice (at a new width, laid out again).
TWO_FRAMES = "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
# Every check at once, in one script (one round trip to the browser, not six a width).
PROBLEMS = f"""(() => {{
  const [width, screen] = [document.documentElement.scrollWidth, window.innerWidth];
  const wide = width > screen ? [`the page is ${{width}} px wide: ${{({SPILLING}).join(", ")}}`] : [];
  return [...wide, ...{TABLES}, ...{OVERLAPS}, ...{ENABLED_LOOKING}, ...{MISALIGNED}];
}})()"""


@pytest.fixture(name="crowded")
def crowded_fixture(site: Site, finished: RunFactory, alice: User, rita: User) -> Site:
    """The site with the target's history the demo builds up: runs with different params, so the trend
    has a line of points with labels and a table of them, and the runs list a page of rows; and a
    side-by-side study of the baseline and the current run that alice answers."""
    for params in ({"rewrite": True, "boost": "title^2"}, {}, {"rewrite": True, "synonyms": "v2"}):
        finished(params=params)
    scene = site.scene  # and a side-by-side study alice answers: the rater's study pages
    study_create(
        spec=StudySpec(
            run_a=scene.baseline, run_b=scene.current, raters=[alice], seed=1, answers_per_query=1
        ),
        by=rita,
    )
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


def problems(page: Page, width: int) -> list[str]:
    """What does not fit on the page at `width`, its current width."""
    found: list[str] = page.evaluate(
        PROBLEMS if width > NARROW else f"[...{PROBLEMS}, ...{HEADER}, ...{CUT_OFF}]"
    )
    return found


def crawl(
    context: BrowserContext,
    origin: str,
    start: list[str],
    admin_site: bool = False,
    deciding: dict[str, list[str]] | None = None,
) -> tuple[list[str], list[str]]:
    """Open every page reachable from `start`, once per shape, at each width; the pages opened and
    what did not fit on them. With `admin_site` only Django's admin site is followed, without it
    everything else. `deciding`: by a page's shape, what must be in sight on it at 390 px (`DECIDING`).

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
                found = problems(tab, width)
                if width == NARROW and response.ok and shape(url) in (deciding or {}):
                    found += tab.evaluate(IN_SIGHT, (deciding or {})[shape(url)])
                failures += [f"{url} at {width} px: {problem}" for problem in found]
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
        deciding = {shape(PAGES[name](crowded)): selectors for name, selectors in DECIDING.items()}
        opened, failures = crawl(context, live_server.url, [home, *tour], admin_site, deciding)
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


# A rater's page at 390 px, measured: the header, the answer bar, and each list's first and last result.
BOXES = """([bar, cards]) => {
  const box = (e) => e && e.getBoundingClientRect().toJSON();
  const lists = [...document.querySelectorAll(cards)].map((list) => [...list.children]);
  return {
    screen: window.innerHeight, page: document.documentElement.scrollHeight,
    header: box(document.querySelector("header.topbar")), bar: box(document.querySelector(bar)),
    first: lists.map((items) => box(items[0].querySelector("h2, h3"))),
    last: lists.map((items) => box(items.at(-1))),
  };
}"""
# (its answer bar, its lists) on each of a rater's pages
RATER_BARS = {"study": ("#sxs-bar", ".sxs-cards"), "grading": ("#answer-bar", "#candidates")}
LONG_SNIPPET = (
    "Open Settings, then Billing, and choose Edit next to the address. The change applies to the next "
    "invoice; past invoices can be reissued with the new address on request from the support team."
)


def long_study(golden_set: GoldenSet, alice: User, rita: User) -> StudyTask:
    """A task of a study whose lists read like the demo's: five results a side with long titles and
    snippets (a page taller than a phone's screen)."""
    run_a, run_b = two_runs(golden_set, 1)
    Document.objects.filter(golden_set=golden_set).update(snippet=LONG_SNIPPET)
    for result in QueryRunResult.objects.filter(run__in=[run_a, run_b]):
        result.titles = [f"How to change the billing address on an invoice ({d})" for d in result.ids]
        result.save(update_fields=["titles"])
    study = study_create(
        spec=StudySpec(run_a=run_a, run_b=run_b, raters=[alice], answers_per_query=1), by=rita
    )
    task = StudyTask.objects.filter(study=study).first()
    assert task is not None
    return task


def test_the_study_page_at_390_px_shows_the_answer_bar_and_the_top_of_both_lists_first(
    browser: Browser,
    live_server: Any,
    session_for: Session,
    golden_set: GoldenSet,
    alice: User,
    rita: User,
    tmp_path: Path,
) -> None:
    task = long_study(golden_set, alice, rita)
    page = sized_page(browser, session_for, "alice", NARROW, HEIGHT)
    try:
        page.goto(f"{live_server.url}/sxs/{task.token}/")
        page.screenshot(path=tmp_path / "study-390.png")
        seen = page.evaluate(BOXES, RATER_BARS["study"])
        assert seen["page"] > 2 * HEIGHT  # the lists run on below the first screen...
        header, bar = seen["header"], seen["bar"]
        assert header["height"] < 80
        assert abs(bar["bottom"] - HEIGHT) < 1  # ...and the bar stays at its foot
        for title in seen["first"]:  # each list's first result's title between the header and the bar
            assert header["bottom"] <= title["top"] and title["bottom"] <= bar["top"], (title, bar)
        left, right = seen["first"]
        assert right["left"] > left["right"]  # L beside R
        assert problems(page, NARROW) == []

        page.locator(".sxs-point", has_text="R better").first.click()  # by touch: a point, then Submit
        page.locator("#sxs-submit").click()
        expect(page.locator("#sxs-message")).to_contain_text("Answered.")
        message = page.locator("#sxs-message").bounding_box()
        assert message is not None and message["y"] + message["height"] <= HEIGHT

        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        seen = page.evaluate(BOXES, RATER_BARS["study"])
        for last in seen["last"]:  # the last results clear of the bar, which settled below them
            assert last["bottom"] <= seen["bar"]["top"], (last, seen["bar"])
        assert (tmp_path / "study-390.png").stat().st_size > 0
    finally:
        page.context.close()


def test_the_grading_page_at_390_px_keeps_its_answer_bar_in_reach(
    browser: Browser, live_server: Any, session_for: Session, site: Site
) -> None:
    page = sized_page(browser, session_for, "alice", NARROW, HEIGHT)
    try:
        page.goto(f"{live_server.url}{PAGES['grading'](site)}")
        seen = page.evaluate(BOXES, RATER_BARS["grading"])
        assert seen["page"] > HEIGHT
        assert abs(seen["bar"]["bottom"] - HEIGHT) < 1
        page.locator("#mark-done").click()  # nothing graded yet: refused, in words, inside the bar
        message = page.locator("#flow-message")
        expect(message).not_to_be_empty()
        bar, said = page.locator("#answer-bar").bounding_box(), message.bounding_box()
        assert bar is not None and said is not None
        assert bar["y"] <= said["y"] and said["y"] + said["height"] <= bar["y"] + bar["height"] <= HEIGHT + 1
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        seen = page.evaluate(BOXES, RATER_BARS["grading"])
        assert seen["last"][0]["bottom"] <= seen["bar"]["top"]
    finally:
        page.context.close()
