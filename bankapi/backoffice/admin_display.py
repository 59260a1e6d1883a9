"""Structured values (a JSON column) shown to staff as labelled fields, not as JSON.

An event's `data` is the resource as its API route shows it (camelCase keys,
nested objects and lists): each leaf becomes one row of a small table, labelled
in words ("Bank transfer › Request id"), so an operator reads it as a form.
"""

import re
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def field_label(key: str) -> str:
    """A key in words: `requestId` and `request_id` both read "Request id"."""
    words = _CAMEL_BOUNDARY.sub(" ", key).replace("_", " ").strip().lower()
    return words[:1].upper() + words[1:]


def _value_text(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def field_rows(value: Any, label: str = "") -> list[tuple[str, str]]:
    """(label, text) for each leaf of `value`: objects by key, lists item by item."""
    if isinstance(value, dict):
        if not value:
            return [(label, "-")] if label else []
        rows: list[tuple[str, str]] = []
        for key, inner in value.items():
            rows += field_rows(inner, f"{label} › {field_label(key)}" if label else field_label(key))
        return rows
    if isinstance(value, list):
        if all(not isinstance(item, dict | list) for item in value):
            return [(label, ", ".join(_value_text(item) for item in value) or "-")]
        rows = []
        for number, item in enumerate(value, start=1):
            rows += field_rows(item, f"{label} {number}")
        return rows
    return [(label, _value_text(value))]


def readable_fields(value: Any) -> SafeString:
    """`value` as a two-column table of labelled fields (an empty value: a dash)."""
    rows = field_rows(value)
    if not rows:
        return format_html("{}", "-")
    body = format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", rows)
    return format_html('<table class="readable-fields"><tbody>{}</tbody></table>', body)


def short_id(value: object) -> SafeString:
    """A long id as its first eight characters, the whole of it on hover: enough to
    tell rows apart in a list (the row's own page, and the search, take the whole)."""
    if value is None:
        return format_html("{}", "-")
    text = str(value)
    return format_html('<span class="short-id" title="{}">{}…</span>', text, text[:8])
