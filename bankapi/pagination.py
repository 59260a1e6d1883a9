"""Cursor pagination shared by every list: newest first, `limit` and `nextToken`.

The cursor is the (created_at, id) of the last row served, signed so that a
caller cannot forge one, and opaque to the caller. Keyset pagination stays fast on
big tables and never repeats or skips a row when new rows arrive between pages.
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core import signing
from django.db.models import Q, QuerySet

from bankapi.errors import validation_error

MAX_LIMIT = 200
DEFAULT_LIMIT = 50
_SALT = "bankapi.pagination.cursor"
# The shape of a token `paginate` makes (Django's signed, timestamped value), for the
# OpenAPI document; only the signature tells a real one.
NEXT_TOKEN_PATTERN = r"^\.?[A-Za-z0-9_-]+:[A-Za-z0-9]+:[A-Za-z0-9_-]+$"
_INTEGER = re.compile(r"[0-9]+")
# More digits than this is far above the maximum however it is written.
_MAX_DIGITS = 6


def parse_limit(raw: str | None, default: int = DEFAULT_LIMIT) -> int:
    """Spec 4.7: an integer from 1; above 200 is clamped; 0, negatives, non-integers
    and mixed strings such as `10abc` are invalid."""
    if raw is None:
        return default
    if not _INTEGER.fullmatch(raw) or not raw.strip("0"):
        raise validation_error("limit", "limit must be an integer from 1 to 200.")
    significant = raw.lstrip("0")
    # int() of thousands of digits is slow (and refused by Python): clamp first.
    return MAX_LIMIT if len(significant) > _MAX_DIGITS else min(int(significant), MAX_LIMIT)


@dataclass
class Page:
    items: list[Any]
    next_token: str | None


def _decode(token: str) -> tuple[datetime, str]:
    try:
        payload = signing.loads(token, salt=_SALT)
        return datetime.fromisoformat(payload["c"]), payload["i"]
    except (signing.BadSignature, KeyError, TypeError, ValueError) as exc:
        raise validation_error("nextToken", "nextToken is not valid.") from exc


def paginate(
    queryset: QuerySet[Any],
    query_params: Mapping[str, str],
    *,
    created_field: str = "created_at",
    default_limit: int = DEFAULT_LIMIT,
) -> Page:
    limit = parse_limit(query_params.get("limit"), default_limit)
    token = query_params.get("nextToken")
    if token is not None:
        created, last_id = _decode(token)
        queryset = queryset.filter(
            Q(**{f"{created_field}__lt": created}) | Q(**{created_field: created, "pk__lt": last_id})
        )
    rows = list(queryset.order_by(f"-{created_field}", "-pk")[: limit + 1])
    next_token = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_token = signing.dumps(
            {"c": getattr(last, created_field).isoformat(), "i": str(last.pk)}, salt=_SALT
        )
    return Page(items=rows, next_token=next_token)


def page_body(page: Page, key: str, present: Callable[[Any], dict]) -> dict:
    """A list response's data: `{<key>: [...], "nextToken": ...}`."""
    return {key: [present(item) for item in page.items], "nextToken": page.next_token}
