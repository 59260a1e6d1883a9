"""Response payloads of the payment routes (shapes of DESIGN 7)."""

from payments.models import PaymentRequest, StatementEntry


def _optional(value) -> str | None:
    return str(value) if value else None


def payment_request_data(request: PaymentRequest) -> dict:
    return {
        "requestId": str(request.id),
        "status": request.status,
        "amount": f"{request.amount:.2f}",
        "currency": request.currency,
        "reference": request.reference,
        "beneficiaryId": _optional(request.beneficiary_id),
        "scheduleId": None,
        "failureReason": request.failure_reason or None,
        "createdDateTime": request.created_at.isoformat(),
        "updatedAt": request.updated_at.isoformat(),
    }


def transaction_data(entry: StatementEntry) -> dict:
    return {
        "transactionId": str(entry.id),
        "requestId": _optional(entry.payment_request_id),
        "amount": f"{entry.amount:.2f}",
        "currency": entry.currency,
        "direction": entry.direction,
        "reference": entry.reference,
        "bookedAt": entry.booked_at.isoformat(),
    }
