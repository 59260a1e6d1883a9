"""Reads for the payment routes, always inside the caller's tenant."""

from django.db.models import QuerySet

from bankapi.models import Account, Customer
from bankapi.scope import Scope, customers_of, get_or_not_found
from bankapi.tenancy import OWNED_BY_CUSTOMER
from payments.models import Beneficiary, PaymentRequest, ScheduledPayment, StatementEntry

LISTED_STATUSES = [
    PaymentRequest.Status.PENDING,
    PaymentRequest.Status.PENDING_TM,
    PaymentRequest.Status.FAILED,
]


def beneficiary_of(customer: Customer, beneficiary_id: str) -> Beneficiary:
    """The customer's own saved beneficiary; anyone else's is not found."""
    beneficiaries = OWNED_BY_CUSTOMER.filter(Beneficiary.objects.all(), None, {"customer": customer})
    return get_or_not_found(beneficiaries, beneficiary_id, "Beneficiary")


def payment_requests_of(account: Account) -> QuerySet[PaymentRequest]:
    """Requests still on the requests list: settled ones have moved to transactions."""
    return PaymentRequest.objects.filter(account=account, status__in=LISTED_STATUSES)


def statement_of(account: Account) -> QuerySet[StatementEntry]:
    return StatementEntry.objects.filter(account=account)


def scheduled_payments_of(account: Account) -> QuerySet[ScheduledPayment]:
    return ScheduledPayment.objects.filter(account=account).select_related("last_run")


def scheduled_payment_of(account: Account, schedule_id: str) -> ScheduledPayment:
    return get_or_not_found(scheduled_payments_of(account), schedule_id, "Scheduled payment")


def sandbox_payment_request(scope: Scope, request_id: str) -> PaymentRequest:
    """A payment request of a customer the caller acts for, in the sandbox only:
    for a production token the sandbox routes do not exist."""
    requests = (
        PaymentRequest.objects.for_scope(scope).filter(customer__in=customers_of(scope))
        if scope.sandbox
        else PaymentRequest.objects.none()
    )
    return get_or_not_found(requests, request_id, "Payment request")
