"""200 rows of each model the admin shows, made in bulk, for the changelist tests.

Each maker takes an `Owners` (`owners_make()`): the program, customer and account the
rows belong to, and the users, custodian and company application some rows name.

Every model registered in admin needs a maker here (a test checks it), so a new
screen cannot skip the query-count test. Rows that would move money are made
balanced (postings in +/- pairs) or without postings, so the ledger invariant
checked after every test holds.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from itertools import combinations, product
from string import ascii_uppercase
from typing import TYPE_CHECKING

from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from audit.models import ChangeRecord, StaffView
from authn.models import PasskeyCredential, User
from bankapi.codes import SUPPORTED_CURRENCIES
from bankapi.models import Account, Custodian, Customer, IdempotencyRecord, Program
from batches.payees import ItemPayee
from cards.models import Card, CardAuthorization, Cardholder
from cards.numbers import sandbox_cvv, sandbox_pan
from events.models import Delivery, DeliveryAttempt, Event, EventType, WebhookEndpoint
from payments.models import (
    Beneficiary,
    FxQuote,
    FxRate,
    Hold,
    IncomingPayment,
    LedgerPosting,
    LedgerTransaction,
    PaymentRequest,
    ScheduledPayment,
    StatementEntry,
    SystemAccount,
)

if TYPE_CHECKING:
    from onboarding.models import Application

ROWS = 200


@dataclass
class Owners:
    """What the rows hang on: a customer of a program with a GBP account and its
    user, a custodian and its user, a company application, a staff operator."""

    customer: Customer
    account: Account
    customer_user: User
    custodian: Custodian
    custodian_user: User
    company_application: "Application"
    operator: User

    @property
    def program_id(self) -> uuid.UUID:
        return self.customer.program_id


def owners_make() -> Owners:
    from tests.support.factories import (
        ProgramFactory,
        custodian_with_clients,
        customer_user,
        funded_account,
        uk_account,
    )
    from tests.support.factories_backoffice import operator_user
    from tests.support.factories_onboarding import company_application

    program = ProgramFactory()
    person = customer_user(program)
    custodian = custodian_with_clients(program, clients=1)
    return Owners(
        customer=person.customer,
        account=funded_account(person.customer, "100000.00", **uk_account()),
        customer_user=person.user,
        custodian=custodian.custodian,
        custodian_user=custodian.user,
        company_application=company_application(person.customer),
        operator=operator_user(),
    )


MAKERS: dict[str, Callable[[Owners], None]] = {}


def maker(label: str):
    def register(function):
        MAKERS[label] = function
        return function

    return register


def codes(count: int, prefix: str = "Q") -> list[str]:
    """Distinct three-letter codes no real row uses."""
    return [prefix + a + b for a, b in product(ascii_uppercase, repeat=2)][:count]


def _customer(owners: Owners) -> Customer:
    return owners.customer


def _account(owners: Owners) -> Account:
    return owners.account


@maker("audit.changerecord")
def _change_records(owners):
    customer = _customer(owners)
    ChangeRecord.objects.bulk_create(
        ChangeRecord(
            actor_email="staff@rows.example",
            content_type=ContentType.objects.get_for_model(Customer),
            object_id=str(customer.id),
            object_repr=str(customer),
            action=ChangeRecord.Action.CHANGED,
            before={"name": f"Name {n}"},
            after={"name": f"Name {n + 1}"},
            page=f"/admin/bankapi/customer/{customer.id}/change/",
        )
        for n in range(ROWS)
    )


@maker("audit.staffview")
def _staff_views(owners):
    customer = _customer(owners)
    StaffView.objects.bulk_create(
        StaffView(
            actor_email="staff@rows.example",
            content_type=ContentType.objects.get_for_model(Customer),
            object_id=str(customer.id),
            object_repr=str(customer),
            page=f"/admin/bankapi/customer/{customer.id}/change/",
        )
        for _ in range(ROWS)
    )


@maker("auth.group")
def _groups(owners):
    Group.objects.bulk_create(Group(name=f"group {n}") for n in range(ROWS))


@maker("bankapi.program")
def _programs(owners):
    Program.objects.bulk_create(Program(name=f"Program {n}", account_type="consumer") for n in range(ROWS))


@maker("bankapi.custodian")
def _custodians(owners):
    program = _customer(owners).program
    Custodian.objects.bulk_create(Custodian(program=program, name=f"Custodian {n}") for n in range(ROWS))


@maker("bankapi.customer")
def _customers(owners):
    custodian = owners.custodian
    Customer.objects.bulk_create(
        Customer(program_id=custodian.program_id, name=f"Customer {n}", custodian=custodian)
        for n in range(ROWS)
    )


@maker("bankapi.account")
def _accounts(owners):
    customer = _customer(owners)
    Account.objects.bulk_create(
        Account(program_id=customer.program_id, customer=customer, name=f"Account {n}", currency="GBP")
        for n in range(ROWS)
    )


@maker("authn.user")
def _users(owners):
    customer = _customer(owners)
    users = User.objects.bulk_create(
        User(
            email=f"user{n}@rows.example",
            program_id=customer.program_id,
            role="customer",
            customer=customer,
            password="!",
        )
        for n in range(ROWS)
    )
    # Some of them locked out: the column and filter must not cost a query a row.
    from authn.models import LoginThrottle

    now = timezone.now()
    LoginThrottle.objects.bulk_create(
        LoginThrottle(
            program_id=user.program_id,
            email=user.email,
            window_started_at=now,
            failures=5,
            locked_until=now + timedelta(minutes=15),
        )
        for user in users[:50]
    )


@maker("authn.passkeycredential")
def _passkeys(owners):
    user = owners.customer_user
    PasskeyCredential.objects.bulk_create(
        PasskeyCredential(user=user, credential_id=uuid.uuid4().bytes, public_key=b"key") for _ in range(ROWS)
    )


@maker("payments.beneficiary")
def _beneficiaries(owners):
    customer = _customer(owners)
    Beneficiary.objects.bulk_create(
        Beneficiary(
            program_id=customer.program_id,
            customer=customer,
            name=f"Payee {n}",
            account_kind="uk",
            sort_code="200000",
            account_number=f"{n:08d}",
        )
        for n in range(ROWS)
    )


def _transactions(owners, count: int, kind: str = "PAYMENT") -> list[LedgerTransaction]:
    account = _account(owners)
    return LedgerTransaction.objects.bulk_create(
        LedgerTransaction(program_id=account.program_id, kind=kind, key=f"rows:{uuid.uuid4()}")
        for _ in range(count)
    )


@maker("payments.paymentrequest")
def _payment_requests(owners):
    account = _account(owners)
    statuses = ["PENDING", "PENDING_TM", "SETTLED", "FAILED"]
    PaymentRequest.objects.bulk_create(
        PaymentRequest(
            program_id=account.program_id,
            customer_id=account.customer_id,
            account=account,
            status=statuses[n % 4],
            amount=Decimal("10.00"),
            currency="GBP",
            debit_amount=Decimal("10.00"),
            fee=Decimal("0.00"),
            reference=f"Row {n}",
            acceptance=transaction,
        )
        for n, transaction in enumerate(_transactions(owners, ROWS))
    )


@maker("payments.incomingpayment")
def _incoming_payments(owners):
    # Movements without postings: the ledger invariant holds (nothing booked).
    account, now = _account(owners), timezone.now()
    IncomingPayment.objects.bulk_create(
        IncomingPayment(
            program_id=account.program_id,
            customer_id=account.customer_id,
            account=account,
            amount=Decimal("10.00"),
            currency="GBP",
            debtor_name=f"Debtor {n}",
            debtor_iban="GB33BUKB20201555555555",
            end_to_end_id=f"E2E-{n}",
            received_at=now,
            movement=transaction,
        )
        for n, transaction in enumerate(_transactions(owners, ROWS, kind="INCOMING"))
    )


@maker("payments.scheduledpayment")
def _schedules(owners):
    account = _account(owners)
    ScheduledPayment.objects.bulk_create(
        ScheduledPayment(
            program_id=account.program_id,
            customer_id=account.customer_id,
            account=account,
            scheduled_date=date(2030, 1, 1),
            next_run_date=date(2030, 1, 1),
            amount=Decimal("5.00"),
            currency="GBP",
            reference=f"Schedule {n}",
        )
        for n in range(ROWS)
    )


@maker("payments.fxrate")
def _fx_rates(owners):
    # Pairs of real currencies (the table takes no other) that the sandbox's rates do not use.
    pairs = [pair for pair in combinations(SUPPORTED_CURRENCIES, 2) if not set(pair) <= {"GBP", "EUR", "USD"}]
    FxRate.objects.bulk_create(
        FxRate(base_currency=base, quote_currency=quote, mid_rate=Decimal("1.1"))
        for base, quote in pairs[:ROWS]
    )


@maker("payments.fxquote")
def _fx_quotes(owners):
    account = _account(owners)
    now = timezone.now()
    FxQuote.objects.bulk_create(
        FxQuote(
            program_id=account.program_id,
            account=account,
            currency_one="GBP",
            currency_two="EUR",
            amount_currency="GBP",
            amount=Decimal("100.00"),
            rate=Decimal("1.15"),
            price=Decimal("115.00"),
            tenor="SPOT",
            value_date=now.date(),
            valid_until=now,
        )
        for _ in range(ROWS)
    )


@maker("payments.systemaccount")
def _system_accounts(owners):
    program_id = owners.program_id
    SystemAccount.objects.bulk_create(
        SystemAccount(program_id=program_id, kind="CLEARING", currency=code) for code in codes(ROWS)
    )


@maker("payments.ledgertransaction")
def _ledger_transactions(owners):
    _transactions(owners, ROWS)


@maker("payments.ledgerposting")
def _ledger_postings(owners):
    program_id = owners.program_id
    one, two = SystemAccount.objects.bulk_create(
        SystemAccount(program_id=program_id, kind=kind, currency="QQQ") for kind in ("CLEARING", "EXTERNAL")
    )
    postings = []
    for transaction in _transactions(owners, ROWS // 2):
        postings += [
            LedgerPosting(
                transaction=transaction, system_account=one, currency="QQQ", amount=Decimal("-1.00")
            ),
            LedgerPosting(
                transaction=transaction, system_account=two, currency="QQQ", amount=Decimal("1.00")
            ),
        ]
    LedgerPosting.objects.bulk_create(postings)


@maker("payments.hold")
def _holds(owners):
    # Released ones: an open hold would need its account's `held` to match.
    account, now = _account(owners), timezone.now()
    Hold.objects.bulk_create(
        Hold(account=account, amount=Decimal("1.00"), placed_at=now, released_at=now, memo=f"Item {n}")
        for n in range(ROWS)
    )


@maker("payments.statemententry")
def _statement_entries(owners):
    account = _account(owners)
    (transaction,) = _transactions(owners, 1, kind="SETTLEMENT")
    StatementEntry.objects.bulk_create(
        StatementEntry(
            program_id=account.program_id,
            account=account,
            ledger_transaction=transaction,
            direction="DEBIT",
            amount=Decimal("1.00"),
            currency="GBP",
            reference=f"Entry {n}",
        )
        for n in range(ROWS)
    )


@maker("bankapi.idempotencyrecord")
def _idempotency_records(owners):
    customer = _customer(owners)
    IdempotencyRecord.objects.bulk_create(
        IdempotencyRecord(
            program_id=customer.program_id,
            owner_kind="customer",
            owner_id=customer.id,
            operation="payments.create",
            key=uuid.uuid4(),
            fingerprint={},
            claimed_at=timezone.now(),
        )
        for _ in range(ROWS)
    )


@maker("cards.card")
def _cards(owners):
    account = _account(owners)
    numbers = [sandbox_pan() for _ in range(ROWS)]
    Card.objects.bulk_create(
        Card(
            program_id=account.program_id,
            account=account,
            name_on_card=f"HOLDER {n}",
            last_four=pan[-4:],
            expiry_month=1 + n % 12,
            expiry_year=2030,
            pan=pan,
            cvv=sandbox_cvv(),
        )
        for n, pan in enumerate(numbers)
    )


@maker("cards.cardauthorization")
def _card_authorizations(owners):
    # Declined ones: an approved one would hold money on the account.
    account, now = _account(owners), timezone.now()
    pan = sandbox_pan()
    card = Card.objects.create(
        program_id=account.program_id,
        account=account,
        name_on_card="HOLDER",
        last_four=pan[-4:],
        expiry_month=1,
        expiry_year=2030,
        pan=pan,
        cvv=sandbox_cvv(),
    )
    CardAuthorization.objects.bulk_create(
        CardAuthorization(
            program_id=account.program_id,
            card=card,
            account=account,
            customer_id=account.customer_id,
            amount=Decimal("4.50"),
            currency="GBP",
            merchant_name=f"Shop {n}",
            status=CardAuthorization.Status.DECLINED,
            decline_reason="INSUFFICIENT_FUNDS",
            authorized_at=now,
        )
        for n in range(ROWS)
    )


@maker("cards.cardholder")
def _cardholders(owners):
    account = _account(owners)
    Cardholder.objects.bulk_create(
        Cardholder(program_id=account.program_id, account=account, first_name=name, last_name="Holder")
        for name in codes(ROWS, "Card")
    )


@maker("onboarding.application")
def _applications(owners):
    from onboarding.models import Application

    customer = _customer(owners)
    Application.objects.bulk_create(
        Application(
            program_id=customer.program_id,
            customer=customer,
            is_company=False,
            applicant_email=f"applicant{n}@rows.example",
            verification_provider="sandbox",
            workflow_stage="IN_REVIEW",
        )
        for n in range(ROWS)
    )


@maker("onboarding.ubo")
def _ubos(owners):
    from onboarding.models import Ubo

    application = owners.company_application
    Ubo.objects.bulk_create(
        Ubo(application=application, first_name="Owner", last_name=f"N{n}", email=f"ubo{n}@rows.example")
        for n in range(ROWS)
    )


@maker("onboarding.legaldocumentset")
def _legal_sets(owners):
    from onboarding.models import LegalDocumentSet

    program_id = owners.program_id
    LegalDocumentSet.objects.bulk_create(
        LegalDocumentSet(program_id=program_id, version=f"rows-{n}", last_updated=date(2026, 1, 1))
        for n in range(ROWS)
    )


@maker("onboarding.programonboarding")
def _program_onboarding(owners):
    from onboarding.models import ProgramOnboarding

    programs = Program.objects.bulk_create(
        Program(name=f"Onboarding program {n}", account_type="consumer") for n in range(ROWS)
    )
    ProgramOnboarding.objects.bulk_create(ProgramOnboarding(program=program) for program in programs)


@maker("onboarding.verificationstep")
def _verification_steps(owners):
    from onboarding.models import Application, VerificationStep

    customer = _customer(owners)
    applications = Application.objects.bulk_create(
        Application(
            program_id=customer.program_id,
            customer=customer,
            is_company=False,
            applicant_email=f"steps{n}@rows.example",
            verification_provider="sandbox",
        )
        for n in range(ROWS)
    )
    VerificationStep.objects.bulk_create(
        VerificationStep(application=application, step="IDENTITY", status="COMPLETED")
        for application in applications
    )


@maker("onboarding.documentupload")
def _document_uploads(owners):
    from onboarding.models import DocumentUpload

    customer = _customer(owners)
    DocumentUpload.objects.bulk_create(
        DocumentUpload(
            program_id=customer.program_id,
            customer=customer,
            collection="kyc",
            document_type="PASSPORT",
            key=f"rows/{uuid.uuid4()}",
            content_type="image/png",
        )
        for _ in range(ROWS)
    )


def _batch(owners, count: int = 0):
    from batches.models import Batch

    account = _account(owners)
    return Batch.objects.create(
        program_id=account.program_id,
        owner_customer_id=account.customer_id,
        customer_id=account.customer_id,
        status="PARTIALLY_FAILED",
        payments_count=count,
        valid_count=count,
        currency="GBP",
    )


@maker("batches.batch")
def _batches(owners):
    from batches.models import Batch

    account = _account(owners)
    Batch.objects.bulk_create(
        Batch(
            program_id=account.program_id,
            owner_customer_id=account.customer_id,
            customer_id=account.customer_id,
            status="COMPLETED",
            payments_count=1,
            valid_count=1,
            currency="GBP",
        )
        for _ in range(ROWS)
    )


@maker("batches.batchitem")
def _batch_items(owners):
    from batches.models import BatchItem

    account = _account(owners)
    batch = _batch(owners, ROWS)
    BatchItem.objects.bulk_create(
        BatchItem(
            program_id=account.program_id,
            batch=batch,
            index=n,
            status="FAILED",
            error="INSUFFICIENT_FUNDS: rows",
            account=account,
            customer_id=account.customer_id,
            payee=ItemPayee(name="Payee", sort_code="200000", account_number="12345678").to_stored(),
            amount=Decimal("1.00"),
            currency="GBP",
            reference=f"Item {n}",
            scheduled_date=date(2026, 1, 1),
        )
        for n in range(ROWS)
    )


@maker("batches.draft")
def _drafts(owners):
    from batches.models import Draft

    account = _account(owners)
    Draft.objects.bulk_create(
        Draft(
            program_id=account.program_id,
            owner_customer_id=account.customer_id,
            payments=[],
            payments_count=0,
            expires_at=timezone.now() + timedelta(days=1),
        )
        for _ in range(ROWS)
    )


@maker("batches.scachallenge")
def _sca_challenges(owners):
    from batches.models import ScaChallenge

    user = owners.custodian_user
    ScaChallenge.objects.bulk_create(
        ScaChallenge(
            program_id=user.program_id,
            custodian_id=user.custodian_id,
            user=user,
            payments_hash="0" * 64,
            total_amount=Decimal("10.00"),
            currency="GBP",
            expires_at=timezone.now(),
        )
        for _ in range(ROWS)
    )


@maker("payments.schedulerun")
def _schedule_runs(owners):
    from payments.models import ScheduleRun

    _schedules(owners)
    ScheduleRun.objects.bulk_create(
        ScheduleRun(schedule=schedule, run_date=date(2030, 1, 1), outcome="FAILED", reason="Rows")
        for schedule in ScheduledPayment.objects.filter(reference__startswith="Schedule ")[:ROWS]
    )


def _a_user(owners: Owners) -> User:
    return owners.customer_user


@maker("authn.loginthrottle")
def _login_throttles(owners):
    from authn.models import LoginThrottle

    LoginThrottle.objects.bulk_create(
        LoginThrottle(email=f"10.0.{n // 250}.{n % 250}", factor="client", window_started_at=timezone.now())
        for n in range(ROWS)
    )


@maker("authn.refreshtoken")
def _refresh_tokens(owners):
    from authn.models import RefreshToken

    user = _a_user(owners)
    RefreshToken.objects.bulk_create(
        RefreshToken(user=user, family=uuid.uuid4(), token_hash=uuid.uuid4().hex, expires_at=timezone.now())
        for _ in range(ROWS)
    )


@maker("authn.authchallenge")
def _auth_challenges(owners):
    from authn.models import AuthChallenge

    user = _a_user(owners)
    AuthChallenge.objects.bulk_create(
        AuthChallenge(
            user=user, kind="SOFTWARE_TOKEN_MFA", token_hash=uuid.uuid4().hex, expires_at=timezone.now()
        )
        for _ in range(ROWS)
    )


def _events(customer: Customer, count: int = ROWS) -> list[Event]:
    """`count` events of the customer, already fanned out."""
    return Event.objects.bulk_create(
        Event(
            program_id=customer.program_id,
            customer=customer,
            type=EventType.PAYMENT_REQUEST_ACCEPTED,
            resource_type="payment_request",
            resource_id=str(uuid.uuid4()),
            data={},
            fanned_out=True,
        )
        for _ in range(count)
    )


def _endpoints(owners, count: int = ROWS) -> list[WebhookEndpoint]:
    customer = _customer(owners)
    return WebhookEndpoint.objects.bulk_create(
        WebhookEndpoint(
            program_id=customer.program_id,
            url=f"https://hooks{n}.example.com/bank",
            event_types=[EventType.PAYMENT_REQUEST_SETTLED],
            secret="whsec_c2VjcmV0",
        )
        for n in range(count)
    )


@maker("events.event")
def _event_rows(owners):
    _events(owners.customer)


@maker("events.webhookendpoint")
def _endpoint_rows(owners):
    _endpoints(owners)


def _deliveries(owners) -> list[Delivery]:
    endpoint = _endpoints(owners, 1)[0]
    now = timezone.now()
    return Delivery.objects.bulk_create(
        Delivery(event=event, endpoint=endpoint, resource_key=event.resource_key, next_attempt_at=now)
        for event in _events(owners.customer)
    )


@maker("events.delivery")
def _delivery_rows(owners):
    _deliveries(owners)


@maker("events.deliveryattempt")
def _delivery_attempt_rows(owners):
    DeliveryAttempt.objects.bulk_create(
        DeliveryAttempt(delivery=delivery, status_code=500, latency_ms=12, error="HTTP 500")
        for delivery in _deliveries(owners)
    )


@maker("admin.logentry")
def _log_entries(owners):
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.contenttypes.models import ContentType

    operator = owners.operator
    content_type = ContentType.objects.get_for_model(PaymentRequest)
    LogEntry.objects.bulk_create(
        LogEntry(
            user=operator,
            content_type=content_type,
            object_id=str(uuid.uuid4()),
            object_repr="Payment",
            action_flag=CHANGE,
            change_message="Approved in compliance review: rows",
        )
        for _ in range(ROWS)
    )


def _approvals(owners, count: int = ROWS) -> list:
    from approvals.models import Approval

    customer = owners.customer
    return Approval.objects.bulk_create(
        Approval(
            program_id=customer.program_id,
            sandbox=customer.sandbox,
            kind=Approval.Kind.PAYMENT,
            customer=customer,
            initiator=owners.customer_user,
            required=1,
            passkey_required=True,
            content={"kind": "payment", "amount": f"{n}.00"},
            content_hash="0" * 64,
            replay={},
            expires_at=timezone.now(),
        )
        for n in range(count)
    )


@maker("approvals.approval")
def _approval_rows(owners):
    _approvals(owners)


@maker("approvals.approvalpolicy")
def _approval_policy_rows(owners):
    from approvals.models import ApprovalPolicy

    customers = Customer.objects.bulk_create(
        Customer(program_id=owners.customer.program_id, sandbox=True, name=f"Policy holder {n}")
        for n in range(ROWS)
    )
    ApprovalPolicy.objects.bulk_create(
        ApprovalPolicy(program_id=customer.program_id, sandbox=True, customer=customer, tiers=[])
        for customer in customers
    )
