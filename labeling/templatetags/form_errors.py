"""What is wrong with a form, said where the eye is (docs/architecture.md, "Forms"): `{% error_summary
form %}` at the top of a form page lists every error, each a link to the field to fix (focus moves to the
summary when the page loads, and a link moves it to its field: static/js/forms.js); `templates/_field.html`
shows a field's own errors beside it, where the field's `aria-describedby` points.

A form may say where an error of its own points (`error_anchors`: a field's name, or `__all__` for the
errors of the whole form, to an element's id) when the field is drawn by hand; the errors of the whole
form point to its first visible field otherwise. Pages whose mistakes are not a Django form's (the
budgets grid, a freeze the service refused) pass their `problems` as words, and `anchors` (problem ->
element id) where a problem has a place. A page's small forms (labeling/inline_forms.py) are drawn with
`{% inline_form %}`, their address keeping the page's query string with `{% list_state %}`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django import forms, template
from django.forms.boundfield import BoundField

from labeling.forms import UNPLACED, InlineForm
from labeling.inline_forms import InlineForms, kept_query

register = template.Library()


@dataclass(frozen=True)
class Entry:
    text: str
    anchor: str  # the id of the element to fix; "" when there is none


def field_anchor(field: BoundField) -> str:
    """The id a link to `field` goes to: the input itself, or the first box of a list of boxes."""
    anchors: Mapping[str, str] = getattr(field.form, "error_anchors", {})
    if field.name in anchors:
        return anchors[field.name]
    if field.is_hidden:
        return ""
    if getattr(field.field.widget, "use_fieldset", False):
        boxes = list(field.subwidgets)
        if boxes and boxes[0].id_for_label:
            return str(boxes[0].id_for_label)
    return str(field.id_for_label or field.auto_id or "")


def _said_with_label(label: str, name: str, message: str) -> str:
    """The error as the summary says it: after the field's label, unless it already starts with the
    field's name (a service's `size: ...`)."""
    lowered = message.lower()
    if lowered.startswith((label.lower(), name.replace("_", " ").lower(), name.lower())):
        return message
    return f"{label}: {message}"


def form_entries(form: forms.BaseForm) -> list[Entry]:
    """Every error of a bound form in the order of the page: the whole form's first, then each field's."""
    if not form.is_bound or not form.errors:
        return []
    visible = form.visible_fields()
    anchors: Mapping[str, str] = getattr(form, "error_anchors", {})
    whole = anchors.get("__all__") or (field_anchor(visible[0]) if visible else "")
    entries = [Entry(str(message), whole) for message in form.non_field_errors()]
    for field in form:
        for error, message in zip(field.errors.as_data(), field.errors, strict=True):
            if field.is_hidden:
                entries.append(Entry(str(message), whole))
            elif error.code == UNPLACED:  # a service's problem put beside the field: said as worded
                entries.append(Entry(str(message), field_anchor(field)))
            else:
                text = _said_with_label(str(field.label or field.name), field.name, str(message))
                entries.append(Entry(text, field_anchor(field)))
    return entries


@register.inclusion_tag("_error_summary.html")
def error_summary(
    *forms_: forms.BaseForm | None,
    problems: Iterable[str] = (),
    anchors: Mapping[str, str] | None = None,
    heading: str = "",
    summary_id: str = "error-summary",
    linked: bool = True,
) -> dict[str, Any]:
    """The summary of the forms' errors (and `problems`), or nothing when there is none; not `linked`,
    its entries link nowhere (the form is not on the page)."""
    entries = [entry for form in forms_ if form is not None for entry in form_entries(form)]
    if not linked:
        entries = [Entry(entry.text, "") for entry in entries]
    entries += [Entry(str(p), (anchors or {}).get(str(p), "")) for p in problems]
    return {"entries": entries, "heading": heading, "summary_id": summary_id}


@register.simple_tag(takes_context=True)
def inline_form(context: template.Context, kind: str, key: object = "", **shown: Any) -> InlineForm:
    """One of the page's small forms (labeling/inline_forms.py): the one that was refused as it was sent,
    any other made afresh, showing `shown` at first."""
    forms: InlineForms = context["inline_forms"]
    return forms.get(kind, key, **shown)


@register.simple_tag(takes_context=True)
def list_state(context: template.Context) -> str:
    """The page's query string ("?page=2&sort=id", or nothing), for a small form's address: the page it
    answers with is the one it was sent from."""
    return kept_query(context["request"], "")
