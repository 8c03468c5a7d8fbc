"""A reviewer imports six Quepid ratings into a set with labels, in Chromium on a laptop and on a phone:
the preview counts and lists every change and writes nothing; "Write these changes" writes them; "Undo
this import" shows what the undo changes, and undoing gives the set back exactly. Nothing on the way
scrolls sideways."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, Page, expect

from labeling.models import FrozenLabel, GoldenSet
from tests.browser.test_grading_keys import sized_page
from tests.support.rich_set import dump, rich_set


@pytest.fixture
def gset() -> GoldenSet:
    return rich_set()


pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]
SIX_ROWS = (
    b"query,docid,rating\nrefund guarantee,d1,3\nrefund guarantee,d4,3\nrefund guarantee,d6,1\n"
    b"refund guarantee,d7,2\ngift cards,d8,2\ngift cards,d2,0\n"
)


def _fits(page: Page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.evaluate("window.innerWidth"), f"{page.url} is {width} px wide"


@pytest.mark.parametrize("width", [1366, 390])
def test_preview_confirm_and_undo_on_the_page(
    browser: Browser, live_server: Any, session_for: Session, gset: GoldenSet, rita: User, width: int
) -> None:
    gset.reviewers.add(rita)
    before = dump(gset)
    page = sized_page(browser, session_for, "rita", width, 844 if width == 390 else 900)
    page.goto(f"{live_server.url}/sets/{gset.slug}/import/")
    form = page.locator("#import-golden form")
    form.locator("select[name=format]").select_option("quepid-csv")
    expect(form.locator("input[name=mode][value=merge]")).to_be_checked()
    form.locator("input[name=file]").set_input_files(
        {"name": "ratings.csv", "mimeType": "text/csv", "buffer": SIX_ROWS}
    )
    form.get_by_role("button", name="Preview the import").click()

    expect(page.locator("h1")).to_contain_text("Preview: ratings.csv")
    expect(page.locator('[data-count="labels added"]')).to_have_text("4")
    expect(page.locator('[data-count="labels changed"]')).to_have_text("1")
    expect(page.locator('[data-count="labels removed"]')).to_have_text("0")
    expect(page.locator("#labels-changed")).to_contain_text("2 → 3")
    _fits(page)
    assert dump(gset) == before

    page.get_by_role("button", name="Write these changes").click()
    expect(page.locator("#import-ok")).to_have_text("imported")
    _fits(page)
    assert FrozenLabel.objects.get(query__external_id="q-0002", document__doc_id="d1").grade == 3
    assert dump(gset) != before

    page.get_by_role("button", name="Undo this import").click()
    expect(page.locator("h1")).to_contain_text("Undo the import of ratings.csv")
    expect(page.locator("#labels-changed")).to_contain_text("3 → 2")
    expect(page.locator("#queries-removed")).to_contain_text("q-")
    _fits(page)
    page.get_by_role("button", name="Undo this import").click()
    expect(page.locator("#import-ok")).to_have_text("undone")
    assert dump(gset) == before

    page.goto(f"{live_server.url}/sets/{gset.slug}/imports/")
    expect(page.locator("#imports")).to_contain_text("undone")
    expect(page.locator("#imports")).to_contain_text("ratings.csv")
    _fits(page)
    page.context.close()
