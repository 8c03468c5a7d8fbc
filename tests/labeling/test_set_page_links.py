"""The set page is the set's hub: it links to every page of the set, found in the URL conf (each route
`sets/<slug>/<name>/` a reviewer opens as a page), so a page added later without its link fails here;
deeper pages (a new judge, a freeze) are a click further, on the page they belong to."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from labeling.models import GoldenSet

pytestmark = pytest.mark.django_db

SET_PAGE = re.compile(r"sets/<slug:slug>/[\w-]+/")


def _routes(
    patterns: list[URLPattern | URLResolver], prefix: str = "", ns: str = ""
) -> Iterator[tuple[str, str]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{pattern.namespace}:" if pattern.namespace else ns
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        elif pattern.name:
            yield prefix + str(pattern.pattern), ns + pattern.name


def test_the_set_page_links_to_every_page_of_the_set(golden_set: GoldenSet, rita: User) -> None:
    client = Client()
    client.force_login(rita)
    home = reverse("labeling:set_detail", args=[golden_set.slug])
    page = client.get(home).content.decode()
    pages = []
    for route, name in _routes(get_resolver().url_patterns):
        if not SET_PAGE.fullmatch(route):
            continue
        url = reverse(name, args=[golden_set.slug])
        response = client.get(url)
        if response.status_code == 200 and response["Content-Type"].startswith("text/html"):
            pages.append(url)
    assert {"budgets", "baselines", "calibration", "versions", "agreement"} <= {
        p.split("/")[3] for p in pages
    }
    missing = [url for url in pages if f'href="{url}"' not in page]
    assert not missing, f"the set page does not link to {missing}"
