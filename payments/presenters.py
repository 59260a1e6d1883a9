"""Response payloads of the payment routes (shapes of DESIGN 7)."""

from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun, StatementEntry


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
        "scheduleId": _optional(request.schedule_id),
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


def _last_run(run: ScheduleRun | None) -> dict | None:
    if run is None:
        return None
    return {
        "date": run.run_date.isoformat(),
        "outcome": run.outcome,
        "requestId": _optional(run.payment_request_id),
        "reason": run.reason or None,
    }


def scheduled_payment_data(schedule: ScheduledPayment) -> dict:
    return {
        "scheduleId": str(schedule.id),
        "status": schedule.status,
        "frequency": schedule.frequency,
        "scheduledDate": schedule.scheduled_date.isoformat(),
        "nextRunDate": schedule.next_run_date.isoformat() if schedule.next_run_date else None,
        "amount": f"{schedule.amount:.2f}",
        "currency": schedule.currency,
        "reference": schedule.reference,
        "lastRun": _last_run(schedule.last_run),
    }
