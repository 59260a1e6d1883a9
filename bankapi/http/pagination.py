"""Cursor pagination shared by every list: newest first, `limit` and `nextToken`.

The cursor is the (created_at, id) of the last row served, signed so that a
caller cannot forge one, and opaque to the caller. Keyset pagination stays fast on
big tables and never repeats or skips a row when new rows arrive between pages.

A cursor is good only for the list that issued it: it carries a digest of the
path (the route and its path ids), the filters (every query parameter but
`limit` and `nextToken`) and the owner (the customer or custodian the caller
acts as, or the management user), under the signature. A token of another list,
of other filters or of another owner answers 400 naming `nextToken`: another
list's (created_at, id) must never reach a query (an events id is a number, a
payment request's a UUID), nor a page of another caller's list be resumed.
"""

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core import signing
from django.db.models import Q, QuerySet
from rest_framework.request import Request

from bankapi.errors import validation_error
from bankapi.roles import Role

MAX_LIMIT = 200
DEFAULT_LIMIT = 50
_SALT = "bankapi.pagination.cursor"
# The shape of a token `paginate` makes (Django's signed, timestamped value), or
# empty (as if absent), for the OpenAPI document; only the signature tells a real one.
NEXT_TOKEN_PATTERN = r"^(\.?[A-Za-z0-9_-]+:[A-Za-z0-9]+:[A-Za-z0-9_-]+)?$"
NEXT_TOKEN_DESCRIPTION = (
    "Opaque: the `nextToken` of the previous page of this list, sent back unchanged with the "
    "same path and the same other query parameters (`limit` may change), by the same caller. "
    "Any other value answers 400 VALIDATION_ERROR naming `nextToken`; an empty value is as if absent."
)
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


def _owner(request: Request) -> list[str]:
    """Whose list it is: the customer or custodian a customer or custodian user acts
    as (any of its users may resume it), or the management user (its program is the
    `programId` filter)."""
    claims = request.auth if isinstance(request.auth, dict) else {}
    user = request.user
    if claims.get("role") == Role.MANAGEMENT:
        return [Role.MANAGEMENT, str(user.pk)]
    return [
        str(claims.get("role")),
        str(claims.get("program")),
        str(claims.get("sandbox")),
        str(getattr(user, "customer_id", None)),
        str(getattr(user, "custodian_id", None)),
    ]


def _issuer(request: Request) -> str:
    """The digest of the list a request reads: path, filters and owner."""
    filters = sorted(
        (name, values) for name, values in request.query_params.lists() if name not in ("limit", "nextToken")
    )
    text = json.dumps([request.path, filters, _owner(request)], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _decode(token: str, issuer: str) -> tuple[datetime, str]:
    try:
        payload = signing.loads(token, salt=_SALT)
        issued_by, created, last_id = payload["b"], datetime.fromisoformat(payload["c"]), payload["i"]
    except (signing.BadSignature, KeyError, TypeError, ValueError) as exc:
        raise validation_error("nextToken", "nextToken is not valid.") from exc
    if issued_by != issuer or not isinstance(last_id, str):
        raise validation_error(
            "nextToken",
            "nextToken was issued for another list: send it back with the same path and query "
            "parameters (limit aside), by the same caller.",
        )
    return created, last_id


def paginate(
    queryset: QuerySet[Any],
    request: Request,
    *,
    created_field: str = "created_at",
    default_limit: int = DEFAULT_LIMIT,
) -> Page:
    """The page of `queryset` the request asks for (its `limit` and `nextToken`)."""
    query_params: Mapping[str, str] = request.query_params
    limit = parse_limit(query_params.get("limit"), default_limit)
    issuer = _issuer(request)
    token = query_params.get("nextToken")
    if token:
        created, last_id = _decode(token, issuer)
        queryset = queryset.filter(
            Q(**{f"{created_field}__lt": created}) | Q(**{created_field: created, "pk__lt": last_id})
        )
    rows = list(queryset.order_by(f"-{created_field}", "-pk")[: limit + 1])
    next_token = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_token = signing.dumps(
            {"b": issuer, "c": getattr(last, created_field).isoformat(), "i": str(last.pk)}, salt=_SALT
        )
    return Page(items=rows, next_token=next_token)


def page_body(page: Page, key: str, present: Callable[[Any], dict]) -> dict:
    """A list response's data: `{<key>: [...], "nextToken": ...}`."""
    return {key: [present(item) for item in page.items], "nextToken": page.next_token}
