"""`{% doc "metrics.md" "Noise floor" %}`: a page's citation of a doc, as a link to its section.

Renders `docs/metrics.md, “Noise floor”` linking to the doc's page (config/docs_pages.py) at the section's
heading. An unknown doc or section is an error when the template renders, so a citation cannot go stale
unnoticed: the tests render every page."""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from assay.docs import doc_path, doc_sections, heading_anchor

register = template.Library()


@register.simple_tag
def doc(file_name: str, section: str = "") -> SafeString:
    name = file_name.removesuffix(".md")
    path = doc_path(name)
    if path is None:
        raise template.TemplateSyntaxError(f"{{% doc %}}: there is no docs/{file_name}")
    url = reverse("doc_page", args=[name])
    if not section:
        return format_html('<a href="{}" class="doc-link">docs/{}.md</a>', url, name)
    anchor = heading_anchor(section)
    if anchor not in doc_sections(path):
        raise template.TemplateSyntaxError(f"{{% doc %}}: docs/{file_name} has no section {section!r}")
    return format_html('<a href="{}#{}" class="doc-link">docs/{}.md, “{}”</a>', url, anchor, name, section)
