"""The widgets of a page's small forms drawn in Python (`labeling.forms.InlineForm`'s renderer): a page
draws one such form per row (a document, an assignment, a proposal), and Django's widget templates (an
include for every option and every list of attributes) cost about a millisecond a form, so a set page's
hundred reassignment forms doubled its time. The markup is Django's own to the byte
(tests/labeling/test_widget_html.py holds it to the templates' output); any other template is Django's.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from django.forms.renderers import DjangoTemplates
from django.utils.safestring import SafeString, mark_safe

_WIDGETS = "django/forms/widgets/"
_INPUTS = {f"{_WIDGETS}{name}.html" for name in ("input", "text", "number", "hidden", "checkbox")}
_OPTIONS = {f"{_WIDGETS}{name}.html" for name in ("input_option", "radio_option", "checkbox_option")}


def _e(value: Any) -> str:
    """django.utils.html.conditional_escape without its lazy-string wrapper (a call per attribute)."""
    return str(value.__html__()) if hasattr(value, "__html__") else html.escape(str(value))


def _attrs(attrs: Mapping[str, Any]) -> str:
    """django/forms/widgets/attrs.html."""
    return "".join(
        f" {_e(name)}" if value is True else f' {_e(name)}="{_e(str(value))}"'
        for name, value in attrs.items()
        if value is not False
    )


def _input(widget: Mapping[str, Any]) -> str:
    value = "" if widget["value"] is None else f' value="{_e(str(widget["value"]))}"'
    return f'<input type="{_e(widget["type"])}" name="{_e(widget["name"])}"{value}{_attrs(widget["attrs"])}>'


def _option(widget: Mapping[str, Any]) -> str:
    """django/forms/widgets/input_option.html."""
    if not widget.get("wrap_label"):
        return _input(widget)
    target = f' for="{_e(widget["attrs"]["id"])}"' if widget["attrs"].get("id") else ""
    return f"<label{target}>{_input(widget)}\n {_e(widget['label'])}</label>"


def _select(widget: Mapping[str, Any]) -> str:
    parts = [f'<select name="{_e(widget["name"])}"{_attrs(widget["attrs"])}>']
    for group_name, options, _ in widget["optgroups"]:
        if group_name:
            parts.append(f'\n  <optgroup label="{_e(group_name)}">')
        for option in options:
            parts.append(
                f'\n  <option value="{_e(str(option["value"]))}"{_attrs(option["attrs"])}>'
                f"{_e(option['label'])}</option>\n"
            )
        if group_name:
            parts.append("\n  </optgroup>")
    parts.append("\n</select>")
    return "".join(parts)


def _textarea(widget: Mapping[str, Any]) -> str:
    text = _e(widget["value"]) if widget["value"] else ""
    return f'<textarea name="{_e(widget["name"])}"{_attrs(widget["attrs"])}>\n{text}</textarea>'


class PythonWidgets(DjangoTemplates):
    """Django's renderer, but inputs, options, selects and textareas drawn in Python."""

    def render(self, template_name: str, context: dict[str, Any], request: Any = None) -> SafeString:
        widget = context.get("widget")
        if widget is None:
            return SafeString(super().render(template_name, context, request))
        if template_name in _INPUTS:
            return mark_safe(_input(widget))
        if template_name in _OPTIONS:
            return mark_safe(_option(widget))
        if template_name == f"{_WIDGETS}select.html":
            return mark_safe(_select(widget))
        if template_name == f"{_WIDGETS}textarea.html":
            return mark_safe(_textarea(widget))
        return SafeString(super().render(template_name, context, request))
