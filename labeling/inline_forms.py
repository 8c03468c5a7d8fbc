"""A page's small forms refused where they stand (docs/architecture.md, "Forms"): a document's final grade,
a tier move, a gold item, a proposal's decision, a judge job, a qualification, a reassignment. Refused,
the post answers with the page it was sent from (400), that form as it was sent with each error beside its
field, and the summary of errors at the top of the page (`templates/base.html`) linking to them; nothing
is written. Done, it redirects to the page with its message, as before (POST/redirect/GET).

The pattern: a page's view takes `refused` (None on a GET) and renders through `InlineForms(refused,
kind=make, ...).render(...)`, one `make` per kind of small form it draws (the form's class, or a
`functools.partial` of it with what the page knows: the rubric's scale, the set's raters); its template
draws each with `{% inline_form "gold" row.pk grade=row.gold as form %}`
(`labeling/templatetags/form_errors.py`). The post's view makes its form with the same class and key;
refused, it calls the page's view with `Refused(form, heading)`. The forms are `labeling.forms.InlineForm`s:
the key starts each one's ids, so the form sent back, and only it, shows what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from labeling.forms import InlineForm


@dataclass(frozen=True)
class Refused:
    """A small form sent back: as it was posted, with its errors; `heading` says what did not happen
    ("Not saved")."""

    form: InlineForm
    heading: str


class InlineForms:
    """The small forms of one page: each made afresh, but the one that was refused, which is shown as it
    was sent."""

    def __init__(self, refused: Refused | None = None, **makers: Callable[..., InlineForm]) -> None:
        self.refused = refused
        self._makers = makers
        self.drawn = False  # the refused form, once the page has drawn it
        self.linked = True  # the summary's entries link to the refused form's fields

    def render(self, request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
        """The page with these forms (`inline_forms` in its context): 400 when it answers a refused form.
        When the page no longer draws that form (its proposal was decided, its assignment reassigned, its
        query retired meanwhile), it is drawn again with a summary that says what is wrong without a link."""
        status = 200 if self.refused is None else 400
        response = render(request, template, {**context, "inline_forms": self}, status=status)
        if self.refused is not None and not self.drawn:
            self.linked = False
            response = render(request, template, {**context, "inline_forms": self}, status=status)
        return response

    @property
    def refused_kind(self) -> str:
        """The kind of the form sent back ("" when none was): a page opens what folds it."""
        return "" if self.refused is None else self.refused.form.KIND

    def get(self, kind: str, key: object = "", **shown: Any) -> InlineForm:
        refused = self.refused
        if refused is not None and (refused.form.KIND, refused.form.key) == (kind, str(key)):
            self.drawn = True
            return refused.form
        return self._makers[kind](key=key, **shown)


def kept_query(request: HttpRequest, url: str) -> str:
    """`url` with the page's query string (a list's page, search and sort), which a small form's address
    carries: the page it answers with, refused or done, is the one it was sent from."""
    query = request.GET.urlencode()
    return f"{url}?{query}" if query else url
