"""What a batch's list row and page show of its items: how many are in each
state, and their amounts added up per currency, read for a whole page of batches
in one query; and the first items of a batch as a table on its page."""

import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.contrib.admin.views.main import ChangeList
from django.db.models import Count, Sum
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from bankapi.backoffice.admin_base import money
from bankapi.backoffice.admin_display import short_id
from batches.models import Batch, BatchItem

# A batch holds up to 10,000 items: its page shows the first ones, the items
# list shows them all.
ITEMS_ON_THE_PAGE = 25


@dataclass
class BatchFigures:
    # Currency -> the items' amounts added up (items with no amount left out).
    totals: dict[str, Decimal] = field(default_factory=dict)
    # Status -> how many items are in it.
    statuses: dict[str, int] = field(default_factory=dict)

    def totals_text(self) -> str:
        return ", ".join(money(amount, currency) for currency, amount in sorted(self.totals.items())) or "-"

    def statuses_text(self) -> str:
        labels = dict(BatchItem.Status.choices)
        return (
            ", ".join(
                f"{count} {labels.get(status, status).lower()}"
                for status, count in sorted(
                    self.statuses.items(), key=lambda pair: list(labels).index(pair[0])
                )
            )
            or "no items"
        )


def batch_figures(batch_ids: Any) -> dict[uuid.UUID, BatchFigures]:
    """The figures of each batch named (a list of ids, or a query of them), in one
    query over the items' batch index."""
    rows = (
        BatchItem.objects.filter(batch_id__in=batch_ids)
        .values("batch_id", "currency", "status")
        .annotate(items=Count("id"), amount=Sum("amount"))
        .order_by()
    )
    figures: dict[uuid.UUID, BatchFigures] = {}
    for row in rows:
        entry = figures.setdefault(row["batch_id"], BatchFigures())
        entry.statuses[row["status"]] = entry.statuses.get(row["status"], 0) + row["items"]
        if row["amount"] is not None:
            currency = row["currency"] or "?"
            entry.totals[currency] = entry.totals.get(currency, Decimal(0)) + row["amount"]
    return figures


def figures_of(batch: Batch) -> BatchFigures:
    """The figures the list read for this row, or those of this one batch."""
    cached = getattr(batch, "_figures", None)
    if cached is None:
        cached = batch_figures([batch.pk]).get(batch.pk, BatchFigures())
        batch._figures = cached  # type: ignore[attr-defined]
    return cached


class BatchChangeList(ChangeList):
    """A page of batches with their items' figures, read in one query."""

    def get_results(self, request) -> None:
        super().get_results(request)
        # The page's ids as a subquery: one query, the same with rows or without.
        figures = batch_figures(self.result_list.values("pk"))
        self.result_list = list(self.result_list)
        for batch in self.result_list:
            batch._figures = figures.get(batch.pk, BatchFigures())


def _payee_name(item: BatchItem) -> str:
    return str(item.payee.get("name") or "-") if isinstance(item.payee, dict) else "-"


def items_table(batch: Batch) -> SafeString:
    """The batch's first items (index order) and a link to all of them."""
    items = list(
        BatchItem.objects.filter(batch=batch)
        .select_related("account")
        .order_by("index")[: ITEMS_ON_THE_PAGE + 1]
    )
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        (
            (
                item.index,
                item.get_status_display(),
                money(item.amount, item.currency) if item.amount is not None else "-",
                item.payer_account_number or item.account or "-",
                _payee_name(item),
                short_id(item.payment_id) if item.payment_id else "-",
                item.error or "-",
            )
            for item in items[:ITEMS_ON_THE_PAGE]
        ),
    )
    url = reverse("admin:batches_batchitem_changelist") + f"?q={batch.id}"
    more = (
        f"The first {ITEMS_ON_THE_PAGE} of {batch.payments_count} items; all of them"
        if len(items) > ITEMS_ON_THE_PAGE
        else "The items in their own list"
    )
    return format_html(
        '<table class="batch-items"><thead><tr><th>#</th><th>Status</th><th>Amount</th><th>Payer account</th>'
        "<th>Payee</th><th>Payment</th><th>Error</th></tr></thead><tbody>{}</tbody></table>"
        '<p><a href="{}">{}</a></p>',
        rows,
        url,
        more,
    )
