"""Response payloads of the batch routes."""

from typing import Any

from bankapi.clock import customer_now
from batches.models import Batch, BatchItem, Draft
from batches.rules import checked_payments_to_wire
from batches.selectors import ItemsSummary
from batches.services.challenges import Initiated

PAYLOAD_PENDING = "PENDING"
PAYLOAD_COMPLETE = "COMPLETE"


def _money(value) -> str | None:
    return None if value is None else f"{value:.2f}"


def _id(value) -> str | None:
    return None if value is None else str(value)


def draft_status(draft: Draft, now=None) -> str:
    """DRAFT until expiresAt, then EXPIRED: derived at read time, never stored."""
    return "EXPIRED" if draft.expires_at <= (now or customer_now(draft.owner_customer_id)) else "DRAFT"


def draft_summary(draft: Draft) -> dict:
    return {
        "id": str(draft.id),
        "status": draft_status(draft),
        "paymentsCount": draft.payments_count,
        "expiresAt": draft.expires_at.isoformat(),
        "createdDateTime": draft.created_at.isoformat(),
        "payloadStatus": PAYLOAD_COMPLETE if draft.verified_at else PAYLOAD_PENDING,
    }


def draft_detail(draft: Draft) -> dict:
    """`{batchId, draft}`: the payload while the draft lives and is verified."""
    status = draft_status(draft)
    body = {
        "status": status,
        "paymentsCount": draft.payments_count,
        "expiresAt": draft.expires_at.isoformat(),
        "createdDateTime": draft.created_at.isoformat(),
        "payloadStatus": PAYLOAD_COMPLETE if draft.verified_at else PAYLOAD_PENDING,
    }
    if status == "DRAFT" and draft.verified_at:
        # Up to 10,000 stored results each: written in the API's names straight
        # from their stored JSON, not through a dataclass each.
        body["validPayments"] = checked_payments_to_wire(draft.valid_payments)
        body["invalidPayments"] = checked_payments_to_wire(draft.invalid_payments)
    return {"batchId": str(draft.id), "draft": body}


def batch_summary(batch: Batch, *, summary: ItemsSummary | None, management: bool) -> dict:
    body: dict[str, Any] = {
        "id": str(batch.id),
        "status": batch.status,
        "customerId": _id(batch.customer_id),
        "programId": str(batch.program_id),
        "sandbox": batch.sandbox,
        "paymentsCount": batch.payments_count,
        "createdDateTime": batch.created_at.isoformat(),
    }
    if batch.message_id:
        body["messageId"] = batch.message_id
    if management:
        customer = batch.customer or batch.owner_customer
        body["customerName"] = customer.name if customer else None
        body["custodianName"] = batch.custodian.name if batch.custodian else None
    if summary is not None:
        body["itemsStatus"] = {
            "completed": summary.completed,
            "pending": summary.pending,
            "processing": summary.processing,
            "failed": summary.failed,
        }
        body["totalAmount"] = _money(summary.total) or "0.00"
    return body


def batch_item_data(item: BatchItem) -> dict:
    payee = item.item_payee()
    body = {
        "id": str(item.id),
        "batchId": str(item.batch_id),
        "customerId": _id(item.customer_id),
        "accountId": _id(item.account_id),
        "payer": {"name": item.payer_name or None, "accountNumber": item.payer_account_number or None},
        "payee": {
            "name": payee.name,
            "accountNumber": payee.account_number,
            "sortCode": payee.sort_code,
            "iban": payee.iban,
            "bic": payee.bic,
        },
        "amount": _money(item.amount),
        "currency": item.currency or None,
        "reference": item.reference,
        "bankName": None,
        "scheduledDate": item.scheduled_date.strftime("%Y/%m/%d"),
        # As the item's status report names it: the file's EndToEndId, else the item id.
        "endToEndId": item.end_to_end_id or item.id.hex,
        "status": item.status,
        "createdDateTime": item.created_at.isoformat(),
        "updatedAt": item.updated_at.isoformat(),
        "programId": str(item.program_id),
        "sandbox": item.sandbox,
    }
    if item.status == BatchItem.Status.FAILED:
        body["error"] = item.error
    return body


def batch_detail(batch: Batch, items: list[BatchItem]) -> dict:
    return {
        "batchId": str(batch.id),
        "status": batch.status,
        "paymentsBatchItems": [batch_item_data(item) for item in items],
    }


def initiate_answer(initiated: Initiated) -> dict:
    challenge = initiated.challenge
    return {
        "totalAmount": f"{initiated.total:.2f}",
        "currency": initiated.currency,
        "scaChallenge": {"id": str(challenge.id), "expiresAt": challenge.expires_at.isoformat()},
    }


def submit_answer(batch: Batch) -> dict:
    return {
        "batchId": str(batch.id),
        "status": batch.status,
        "counts": {
            "total": batch.payments_count,
            "valid": batch.valid_count,
            "invalid": batch.payments_count - batch.valid_count,
        },
    }
