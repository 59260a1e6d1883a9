"""Money in: a credit transfer from another bank to one of the program's
accounts (in the sandbox, simulated by the integrator).

One service for every door. An incoming payment is one ledger movement
(kind INCOMING) from the program's external system account of the account's
environment to the account, booked at once (balance and available rise
together), named on the account's statement (a CRDT carrying the debtor, its
IBAN and the end-to-end id: `payments.ledger.Counterparty`) and transactions
list (a CREDIT naming the incoming payment), with the event
`incoming_payment.received`, all in one transaction. The daily outbound
limit counts debits only: a credit leaves it as it was.
"""

from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.db.models import QuerySet

from bankapi.clock import customer_now
from bankapi.codes import normalise_iban
from bankapi.errors import ApiError, validation_error
from bankapi.models import Account, Program
from bankapi.test_clocks import clock_still_require
from events.models import EventType
from events.recording import event_record
from payments.errors import PaymentErrorCode
from payments.formats import MAX_AMOUNT
from payments.ledger import (
    Counterparty,
    Leg,
    ledger_post,
    lock_accounts,
    statement_entry_credit,
    system_account_for,
)
from payments.models import IncomingPayment, LedgerTransaction, SystemAccount
from payments.serializers_incoming import IncomingPaymentSerializer


@dataclass(frozen=True)
class IncomingOrder:
    """A credit transfer as the other bank sent it (already checked for shape)."""

    creditor_iban: str
    amount: Decimal
    currency: str
    debtor_name: str
    debtor_iban: str = ""
    end_to_end_id: str = IncomingPayment.NOT_PROVIDED
    remittance_information: str = ""


def creditor_account(program: Program, sandbox: bool, iban: str) -> Account:
    """The program's account of that environment with this IBAN (compared
    without spaces, in any case), else 400 naming creditorIban."""
    account = (
        Account.objects.filter(program=program, sandbox=sandbox, iban=normalise_iban(iban))
        .select_related("customer")
        .first()
    )
    if account is None:
        raise validation_error("creditorIban", "No account of this program's sandbox has this IBAN.")
    return account


def incoming_payment_receive(*, program: Program, sandbox: bool, order: IncomingOrder) -> IncomingPayment:
    """Book the credit transfer on the account its IBAN names (see the module).
    400 for an IBAN of no account of the program's environment or a currency
    not the account's; 422 LIMIT_EXCEEDED for a credit that would take the
    balance past what the ledger holds. Nothing is written when it is refused."""
    account = creditor_account(program, sandbox, order.creditor_iban)
    if order.currency != account.currency:
        raise validation_error("currency", f"Must be {account.currency}, the credited account's currency.")
    # Money into a test clock's customer waits, whoever sends it, while its clock advances.
    clock_still_require(account.customer_id)
    incoming = IncomingPayment(
        program_id=account.program_id,
        sandbox=account.sandbox,
        customer_id=account.customer_id,
        account=account,
        amount=order.amount,
        currency=order.currency,
        debtor_name=order.debtor_name,
        debtor_iban=order.debtor_iban,
        end_to_end_id=order.end_to_end_id,
        remittance_information=order.remittance_information,
    )
    external = system_account_for(
        account.program_id, account.sandbox, SystemAccount.Kind.EXTERNAL, account.currency
    )
    with transaction.atomic():
        # Locked to read a balance that cannot move before the credit is posted:
        # the ledger's columns hold at most MAX_AMOUNT.
        locked = lock_accounts([account.id])[account.id]
        if locked.balance + order.amount > MAX_AMOUNT:
            raise ApiError(
                PaymentErrorCode.LIMIT_EXCEEDED,
                f"The credit would take the account's balance past {MAX_AMOUNT:.2f}, the most it can hold.",
            )
        incoming.movement = ledger_post(
            program_id=account.program_id,
            sandbox=account.sandbox,
            kind=LedgerTransaction.Kind.INCOMING,
            legs=[
                Leg(amount=-order.amount, currency=account.currency, system_account=external),
                Leg(amount=order.amount, currency=account.currency, account=locked),
            ],
            memo=incoming.statement_reference,
            counterparty=Counterparty(
                name=order.debtor_name, iban=order.debtor_iban, end_to_end_id=order.end_to_end_id
            ),
        )
        incoming.received_at = customer_now(account.customer_id)
        incoming.save(force_insert=True)
        statement_entry_credit(
            account, incoming.movement, order.amount, incoming.statement_reference, incoming=incoming
        )
        incoming_payment_event(incoming, account)
    return incoming


def incoming_payment_event(incoming: IncomingPayment, account: Account) -> None:
    """`incoming_payment.received`: the account's customer's, and its custodian's."""
    event_record(
        type=EventType.INCOMING_PAYMENT_RECEIVED,
        program_id=incoming.program_id,
        sandbox=incoming.sandbox,
        resource_type="incoming_payment",
        resource_id=incoming.id,
        data=dict(IncomingPaymentSerializer(incoming).data),
        customer_id=incoming.customer_id,
        custodian_id=account.customer.custodian_id,
    )


def incoming_payments_of(account: Account) -> QuerySet[IncomingPayment]:
    """The incoming payments of an account resolved in the caller's scope."""
    return IncomingPayment.objects.filter(account=account)
