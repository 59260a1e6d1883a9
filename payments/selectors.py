"""Reads for the payment routes, always inside the caller's tenant."""

import uuid

from django.db.models import QuerySet

from bankapi.errors import not_found
from bankapi.models import Account, Customer
from bankapi.scope import Scope, customers_of, parse_uuid
from payments.models import Beneficiary, PaymentRequest, ScheduledPayment, StatementEntry

LISTED_STATUSES = [
    PaymentRequest.Status.PENDING,
    PaymentRequest.Status.PENDING_TM,
    PaymentRequest.Status.FAILED,
]


def beneficiary_of(customer: Customer, beneficiary_id: str) -> Beneficiary:
    """The customer's own saved beneficiary; anyone else's is not found."""
    parsed = parse_uuid(beneficiary_id)
    beneficiary = (
        Beneficiary.objects.filter(
            id=parsed, customer=customer, program_id=customer.program_id, sandbox=customer.sandbox
        ).first()
        if parsed
        else None
    )
    if beneficiary is None:
        raise not_found("Beneficiary")
    return beneficiary


def payment_requests_of(account: Account) -> QuerySet[PaymentRequest]:
    """Requests still on the requests list: settled ones have moved to transactions."""
    return PaymentRequest.objects.filter(account=account, status__in=LISTED_STATUSES)


def statement_of(account: Account) -> QuerySet[StatementEntry]:
    return StatementEntry.objects.filter(account=account)


def scheduled_payments_of(account: Account) -> QuerySet[ScheduledPayment]:
    return ScheduledPayment.objects.filter(account=account).select_related("last_run")


def scheduled_payment_of(account: Account, schedule_id: str) -> ScheduledPayment:
    parsed = parse_uuid(schedule_id)
    schedule = scheduled_payments_of(account).filter(id=parsed).first() if parsed else None
    if schedule is None:
        raise not_found("Scheduled payment")
    return schedule


def sandbox_payment_request(scope: Scope, request_id: str) -> PaymentRequest:
    """A payment request of a customer the caller acts for, in the sandbox only:
    for a production token the sandbox routes do not exist."""
    parsed: uuid.UUID | None = parse_uuid(request_id)
    request = (
        PaymentRequest.objects.filter(
            **scope.tenant_filter(), id=parsed, customer__in=customers_of(scope)
        ).first()
        if parsed and scope.sandbox
        else None
    )
    if request is None:
        raise not_found("Payment request")
    return request
