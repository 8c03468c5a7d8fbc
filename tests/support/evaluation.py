"""Fixtures shared by the page, API and `assay remote run` tests (this module holds no test).

The cast: rita reviews `golden_set` (alice and bob rate it), victor reviews another set, charlie is an
outsider, ada an admin. `scene` is a baseline run promoted by rita and a later run of the same version
and target (with `rewrite=true`) whose engine got worse on two billing queries, returned near-duplicate
titles for one, failed on another and put unjudged documents in the top k: its verdict is fail.
Runs go all the way in-process (eager Celery) against the loopback stub engine.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.models import ApiToken, EvaluationRun, SearchTarget
from evaluation.runs.services import baseline_promote
from evaluation.runs.tokens import api_token_create
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests import factories
from tests.support.runs import (
    RunFactory,
    make_target,
)
from tests.support.stub_server import Reply, StubServer, hits_reply

ALL_SCOPES = tuple(ApiToken.SCOPES)


@pytest.fixture(name="victor")
def victor_fixture(db: None) -> User:
    """A reviewer, of another set."""
    return factories.UserFactory.create(username="victor", groups=["reviewers"])


@pytest.fixture(name="ada")
def ada_fixture(db: None) -> User:
    return factories.UserFactory.create(username="ada", groups=["admins"])


@pytest.fixture(name="other_set")
def other_set_fixture(victor: User) -> GoldenSet:
    return factories.GoldenSetFactory.create(slug="developer-docs", reviewers=[victor])


@pytest.fixture(name="other_target")
def other_target_fixture(stub: StubServer, other_set: GoldenSet, victor: User) -> SearchTarget:
    return make_target(f"{stub.url}/search", other_set, name="docs-search", owner=victor)


@dataclass
class Scene:
    golden_set: GoldenSet
    version: GoldenVersion
    target: SearchTarget
    baseline: EvaluationRun
    current: EvaluationRun


@pytest.fixture(name="scene")
def scene_fixture(
    finished: RunFactory,
    stub: StubServer,
    rita: User,
    golden_set: GoldenSet,
    version: GoldenVersion,
    target: SearchTarget,
) -> Scene:
    baseline = finished()
    baseline_promote(run=baseline, by=rita, rationale="the first good run")
    # q-1 and q-3 are billing queries (runs_support's strata alternate billing, docs).
    stub.on("query 1", hits_reply(["d3", "d9", "d2"]))
    stub.on("query 3", hits_reply(["d9", "d8", "d7"]))
    stub.on(
        "query 2",
        Reply(
            json={
                "hits": [
                    {"id": "d1", "title": "Refund policy for annual plans"},
                    {"id": "d2", "title": "Refund policy for annual plans (copy)"},
                    {"id": "d3", "title": "Something else entirely"},
                ]
            }
        ),
    )
    stub.on("query 5", Reply(status=500, text="boom"))
    current = finished(params={"rewrite": True})
    assert current.verdict == EvaluationRun.Verdict.FAIL, current.gate
    return Scene(golden_set, version, target, baseline, current)


@pytest.fixture(name="light_scene")
def light_scene_fixture(
    finished: RunFactory, golden_set: GoldenSet, version: GoldenVersion, target: SearchTarget
) -> Scene:
    """One finished run as both baseline and current: for checks that need a run to exist, not two."""
    run = finished()
    return Scene(golden_set, version, target, run, run)


def target_form(golden_set: GoldenSet, **changes: Any) -> dict[str, Any]:
    """What the target form posts for a plain http_json target of `golden_set`, with `changes`."""
    return {
        "name": "docs-search",
        "adapter": "http_json",
        "url": "http://127.0.0.1:9/search",
        "timeout": "5",
        "concurrency": "4",
        "retries": "0",
        "solr_method": "GET",
        "golden_sets": [golden_set.pk],
        **changes,
    }


TokenFor = Callable[..., str]


@pytest.fixture(name="token_for")
def token_for_fixture(db: None) -> TokenFor:
    """`token_for(user, *scopes)`: a fresh API token (all scopes when none are named)."""

    def make(user: User, *scopes: str) -> str:
        return api_token_create(user=user, name="test", scopes=scopes or ALL_SCOPES)[1]

    return make


def bearer(token: str) -> dict[str, Any]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def html_text(markup: str) -> str:
    """Text without tags, entities decoded, runs of whitespace as one space: what a user reads."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup)))


def page_text(response: Any) -> str:
    return html_text(re.sub(r"<(script|style)\b.*?</\1>", " ", response.content.decode(), flags=re.S))


def messages_text(response: Any) -> list[str]:
    """The page's messages as a user reads them, one string each (an inline link is its text, with no
    space added around it as `page_text` adds for every tag)."""
    items = re.findall(r"<li\b[^>]*>(.*?)</li>", _messages_list(response.content.decode()), flags=re.S)
    return [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", item))).strip() for item in items]


def _messages_list(markup: str) -> str:
    found = re.search(r'<ul class="messages">(.*?)</ul>', markup, flags=re.S)
    return found.group(1) if found else ""


def section_text(response: Any, element_id: str) -> str:
    """The text from the element with this id to the next <section> (or the end)."""
    markup = response.content.decode()
    start = markup.index(f'id="{element_id}"')
    end = markup.find("<section", start)
    return html_text(markup[start : end if end != -1 else None])


def form_fields(markup: str, form_id: str) -> dict[str, str]:
    """What the form with this id would post as it stands: its text and hidden inputs and its ticked
    checkboxes (buttons left out)."""
    start = markup.index(f'id="{form_id}"')
    form = markup[start : markup.index("</form>", start)]
    fields: dict[str, str] = {}
    for tag in re.findall(r"<input\b[^>]*>", form):
        attrs = dict(re.findall(r'(\w[\w-]*)="([^"]*)"', tag))
        kind, name = attrs.get("type", "text"), attrs.get("name")
        if name is None or kind in ("submit", "file") or (kind == "checkbox" and " checked" not in tag):
            continue
        fields[name] = html.unescape(attrs.get("value", "on" if kind == "checkbox" else ""))
    return fields
