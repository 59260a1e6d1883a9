from typing import Any

from django import template
from django.db import models

from audit.services import changes_of

register = template.Library()


@register.simple_tag
def audit_changes(instance: models.Model) -> list[dict[str, Any]]:
    """The recorded changes of a record, each with its (field, before, after) rows."""
    rows = []
    for change in changes_of(instance):
        names = sorted(set(change.before) | set(change.after))
        rows.append(
            {
                "change": change,
                "fields": [(name, change.before.get(name, ""), change.after.get(name, "")) for name in names],
            }
        )
    return rows
