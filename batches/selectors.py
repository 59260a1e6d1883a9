"""Reads of batches and drafts for a caller (the list and GET one)."""

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone
from rest_framework.request import Request

from bankapi.errors import validation_error
from bankapi.http.pagination import Page, paginate, parse_limit
from bankapi.scope import get_or_not_found, parse_uuid
from batches.actors import Actor
from batches.models import Batch, BatchItem, Draft

DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
INTEGER = re.compile(r"[0-9]+")
# Far beyond any batch's age; a longer look back changes nothing.
MAX_LOOKBACK_DAYS = 36_500


@dataclass(frozen=True)
class ListQuery:
    """The list's query parameters, validated."""

    day: date | None
    lookback_days: int | None
    include_item_summary: bool
    drafts: bool


def _day(raw: str | None) -> date | None:
    if raw is None:
        return None
    if not DATE.fullmatch(raw):
        raise validation_error("date", "date must be YYYY-MM-DD.")
    try:
        return date.fromisoformat(raw)
    except ValueError as exc:
        raise validation_error("date", "date must be a real calendar day (YYYY-MM-DD).") from exc


def _lookback_days(raw: str | None) -> int | None:
    if raw is None:
        return None
    if not INTEGER.fullmatch(raw) or not raw.strip("0"):
        raise validation_error("lookbackDays", "lookbackDays must be an integer of at least 1.")
    digits = raw.lstrip("0")
    return MAX_LOOKBACK_DAYS if len(digits) > 5 else min(int(digits), MAX_LOOKBACK_DAYS)


def list_query_parse(params: Mapping[str, str]) -> ListQuery:
    """Every parameter is validated, used or not: `limit` and `nextToken` (by the
    pager), `date`, `lookbackDays`. `includeItemSummary` and `drafts` are on only
    for the exact string `true`."""
    parse_limit(params.get("limit"))
    return ListQuery(
        day=_day(params.get("date")),
        lookback_days=_lookback_days(params.get("lookbackDays")),
        include_item_summary=params.get("includeItemSummary") == "true",
        drafts=params.get("drafts") == "true",
    )


def _window(rows: QuerySet[Any], actor: Actor, query: ListQuery) -> QuerySet[Any]:
    """`date` (a UTC day of createdDateTime) wins; else a management caller's lookbackDays."""
    if query.day is not None:
        start = datetime.combine(query.day, time.min, tzinfo=UTC)
        return rows.filter(created_at__gte=start, created_at__lt=start + timedelta(days=1))
    if actor.is_management and query.lookback_days is not None:
        return rows.filter(created_at__gte=timezone.now() - timedelta(days=query.lookback_days))
    return rows


def drafts_page(actor: Actor, query: ListQuery, request: Request) -> Page:
    rows = actor.drafts(Draft.objects.all()).filter(submitted_at__isnull=True)
    return paginate(_window(rows, actor, query), request)


def batches_page(actor: Actor, query: ListQuery, request: Request) -> Page:
    rows = actor.batches(Batch.objects.all())
    if actor.is_management:
        rows = rows.select_related("customer", "custodian", "owner_customer")
    return paginate(_window(rows, actor, query), request)


@dataclass(frozen=True)
class ItemsSummary:
    """How many of a batch's items are in each state, and the total of their
    amounts (None when no item has one)."""

    completed: int = 0
    pending: int = 0
    processing: int = 0
    failed: int = 0
    total: Decimal | None = None


def item_summaries(batch_ids: list[uuid.UUID]) -> dict[uuid.UUID, ItemsSummary]:
    """The item summary of every batch of a page, in one query (a batch without
    items has none: it counts as `ItemsSummary()`)."""
    Status = BatchItem.Status
    rows = (
        BatchItem.objects.filter(batch_id__in=batch_ids)
        .values("batch_id")
        .annotate(
            completed=Count("id", filter=Q(status=Status.SUCCESS)),
            pending=Count("id", filter=Q(status=Status.QUEUED)),
            processing=Count("id", filter=Q(status=Status.PROCESSING)),
            failed=Count("id", filter=Q(status=Status.FAILED)),
            total=Sum("amount"),
        )
        .order_by()
    )
    return {row.pop("batch_id"): ItemsSummary(**row) for row in rows}


def batch_or_draft(actor: Actor, batch_id: str, *, draft_payments: bool = True) -> Batch | Draft:
    """The caller's batch with this id, else its draft not yet submitted, else 404.

    A management caller never sees a draft; another owner's draft is not found.
    Without `draft_payments`, the draft's payments as sent and its file's
    instructions are left in the database (read on first use): the draft's GET
    shows neither, and a draft of 10,000 payments would decode them for nothing.
    """
    batch: Batch | None = actor.batches(Batch.objects.all()).filter(pk=parse_uuid(batch_id)).first()
    if batch is not None:
        return batch
    drafts = actor.drafts(Draft.objects.all()).filter(submitted_at__isnull=True)
    if not draft_payments:
        drafts = drafts.defer("payments", "instructions")
    draft: Draft = get_or_not_found(drafts, batch_id, "Batch")
    return draft


def batch_items(batch: Batch) -> list[BatchItem]:
    return list(batch.items.order_by("index"))


def batches_oldest_stall_seconds() -> float:
    """Seconds since the unfinished batch that has waited longest last moved (its
    funding, a chunk of its items paid): the operator's figure of a stalled batch,
    a worker died or none runs. 0 when every batch is finished. Across every program."""
    from django.db.models import Min

    oldest = Batch.objects.exclude(status__in=Batch.FINAL).aggregate(oldest=Min("progressed_at"))["oldest"]
    return max((timezone.now() - oldest).total_seconds(), 0.0) if oldest is not None else 0.0
