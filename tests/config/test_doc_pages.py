"""The docs as pages (config/docs_pages.py, assay/docs.py) and the pages' citations of them ({% doc %})."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.template import Context, Template, TemplateSyntaxError
from django.test import Client

from assay.docs import DOCS_DIR, doc_names, doc_sections, heading_anchor, render_doc


@pytest.mark.parametrize("name", doc_names())
def test_every_doc_is_a_page_with_an_anchor_per_heading(client: Client, alice, name: str) -> None:
    client.force_login(alice)
    response = client.get(f"/docs/{name}/")
    assert response.status_code == 200
    html = response.content.decode()
    first = next(line for line in (DOCS_DIR / f"{name}.md").read_text().splitlines() if line.startswith("# "))
    assert f"<title>{first[2:].strip()}" in html or first[2:].strip().replace("&", "&amp;") in html
    for anchor in doc_sections(DOCS_DIR / f"{name}.md"):
        assert f'id="{anchor}"' in html


def test_a_doc_page_needs_a_login(client: Client, db: None) -> None:
    response = client.get("/docs/metrics/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("name", ["nothing", "..%2Fpyproject", "METRICS", "metrics.md", "%2E%2E"])
def test_a_name_that_is_no_doc_is_the_styled_404(client: Client, alice, name: str) -> None:
    client.force_login(alice)
    response = client.get(f"/docs/{name}/")
    assert response.status_code == 404
    assert b"error-title" in response.content


def test_raw_html_in_a_doc_is_shown_as_text_and_doc_links_point_at_their_pages(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "# X & Y\n\n<script>alert(1)</script>\n\n## Noise floor\n\nSee [budgets](metrics.md#budgets), "
        "[runs](docs/runs.md) and [elsewhere](https://example.org/a.md).\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    title, html = render_doc(doc, lambda name: f"/docs/{name}/")
    assert title == "X & Y"
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert '<h2 id="noise-floor">' in html
    assert 'href="/docs/metrics/#budgets"' in html and 'href="/docs/runs/"' in html
    assert 'href="https://example.org/a.md"' in html
    assert '<div class="scroll" tabindex="0"><table>' in html


def test_a_heading_anchor_is_its_words_joined_by_hyphens() -> None:
    assert heading_anchor("Noise floor") == "noise-floor"
    assert (
        heading_anchor("Where tools disagree, and what Assay picks")
        == "where-tools-disagree-and-what-assay-picks"
    )


def test_the_doc_tag_links_a_citation_to_its_section(db: None) -> None:
    html = Template('{% load docs %}{% doc "metrics.md" "Noise floor" %} {% doc "runs.md" %}').render(
        Context()
    )
    assert '<a href="/docs/metrics/#noise-floor" class="doc-link">docs/metrics.md, “Noise floor”</a>' in html
    assert '<a href="/docs/runs/" class="doc-link">docs/runs.md</a>' in html


@pytest.mark.parametrize(
    "tag", ['{% doc "nothing.md" %}', '{% doc "metrics.md" "No such section" %}', '{% doc "../README.md" %}']
)
def test_a_citation_of_a_doc_or_section_that_does_not_exist_fails_the_render(db: None, tag: str) -> None:
    with pytest.raises(TemplateSyntaxError):
        Template("{% load docs %}" + tag).render(Context())
