"""Payees and schedule details are stored in the domain's names, and the
migration that moved them there rewrites existing rows both ways."""

from decimal import Decimal

import pytest
from django.apps import apps as django_apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder

from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun
from payments.payees import IbanAccount, Payee, ScheduleDetails, UkAccount, payee_of
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.schedules import schedule_create, scheduled_payments_run, utc_today
from tests.support.factories import funded_account

MIGRATION = "stored_payees_in_domain_names"

IBAN_PAYEE = Payee(
    name="Acme GmbH",
    account=IbanAccount(iban="DE89370400440532013000", bic="COBADEFFXXX"),
    payee_type="BUSINESS",
)
UK_PAYEE = Payee(name="Jane", account=UkAccount(sort_code="200000", account_number="55779911"))

IBAN_PAYEE_STORED = {
    "name": "Acme GmbH",
    "account": {"kind": "iban", "iban": "DE89370400440532013000", "bic": "COBADEFFXXX"},
    "payee_type": "BUSINESS",
}
IBAN_PAYEE_AS_THE_API_NAMED_IT = {
    "name": "Acme GmbH",
    "account": {"type": "iban", "iban": "DE89370400440532013000", "bic": "COBADEFFXXX"},
    "accountType": "BUSINESS",
}
DETAILS_STORED = {
    "purpose": "RENT",
    "charge_bearer": "SHA",
    "payee": {"name": "Jane", "account": {"kind": "uk", "sort_code": "200000", "account_number": "55779911"}},
    "virtual_iban": "GB33BUKB20201555555555",
    "fee_waived": False,
}
DETAILS_AS_THE_API_NAMED_THEM = {
    "purpose": "RENT",
    "chargeBearer": "SHA",
    "payee": {"name": "Jane", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"}},
    "virtualIban": "GB33BUKB20201555555555",
    "feeWaived": False,
}


def _migration() -> tuple[str, str]:
    """This change's migration and the one before it (found by name: the numbers
    may change when branches meet)."""
    graph = MigrationExecutor(connection).loader.graph
    (node,) = [key for key in graph.nodes if key[0] == "payments" and key[1].endswith(MIGRATION)]
    (before,) = graph.node_map[node].parents
    return node[1], before.key[1]


def _migrate(name: str | None = None) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("payments", name)] if name else executor.loader.graph.leaf_nodes())


@pytest.fixture
def migrations_restored(transactional_db):
    """The database is migrated back to the latest, whatever the test does."""
    yield
    _migrate()


def _paid_and_scheduled(customer) -> tuple[PaymentRequest, ScheduledPayment]:
    account = funded_account(customer, "100.00")
    request = payment_accept(
        account=account,
        instruction=PaymentInstruction(
            amount=Decimal("5.00"), currency="GBP", reference="Invoice 9", payee=IBAN_PAYEE
        ),
    )
    schedule = schedule_create(
        account=account,
        instruction=PaymentInstruction(
            amount=Decimal("3.00"),
            currency="GBP",
            reference="Rent",
            purpose="RENT",
            charge_bearer="SHA",
            payee=UK_PAYEE,
            virtual_iban="GB33BUKB20201555555555",
        ),
        anchor=utc_today(),
        frequency=ScheduledPayment.Frequency.NEVER,
    )
    return request, schedule


def test_a_payment_and_a_schedule_store_domain_names(customer):
    request, schedule = _paid_and_scheduled(customer)

    assert PaymentRequest.objects.get(id=request.id).payee == IBAN_PAYEE_STORED
    assert ScheduledPayment.objects.get(id=schedule.id).details == DETAILS_STORED
    assert payee_of(IBAN_PAYEE_STORED) == IBAN_PAYEE
    assert ScheduleDetails.from_stored(DETAILS_STORED).payee == UK_PAYEE


def _stored_payee(request: PaymentRequest) -> object:
    """The stored payee column alone: on an older schema, today's model has
    columns the table does not have yet."""
    return PaymentRequest.objects.filter(id=request.id).values_list("payee", flat=True).get()


def test_the_migration_rewrites_existing_rows_back_and_forth(customer, migrations_restored):
    request, schedule = _paid_and_scheduled(customer)
    no_payee = payment_accept(
        account=funded_account(customer, "10.00"),
        instruction=PaymentInstruction(amount=Decimal("1.00"), currency="GBP", reference="None"),
    )
    mine, before = _migration()

    _migrate(before)

    assert _stored_payee(request) == IBAN_PAYEE_AS_THE_API_NAMED_IT
    assert ScheduledPayment.objects.get(id=schedule.id).details == DETAILS_AS_THE_API_NAMED_THEM
    assert _stored_payee(no_payee) is None

    _migrate(mine)

    assert _stored_payee(request) == IBAN_PAYEE_STORED
    assert ScheduledPayment.objects.get(id=schedule.id).details == DETAILS_STORED
    assert _stored_payee(no_payee) is None


def test_the_migration_changes_only_rows_in_the_other_form(customer):
    request, schedule = _paid_and_scheduled(customer)
    other = funded_account(customer, "10.00")
    old_form = schedule_create(
        account=other,
        instruction=PaymentInstruction(amount=Decimal("1.00"), currency="GBP", reference="Old", payee=None),
        anchor=utc_today(),
        frequency=ScheduledPayment.Frequency.NEVER,
    )
    ScheduledPayment.objects.filter(id=old_form.id).update(details=DETAILS_AS_THE_API_NAMED_THEM)
    module = __import__(f"payments.migrations.{_migration()[0]}", fromlist=["forward"])

    module.forward(django_apps, None)
    module.forward(django_apps, None)

    assert PaymentRequest.objects.get(id=request.id).payee == IBAN_PAYEE_STORED
    assert ScheduledPayment.objects.get(id=schedule.id).details == DETAILS_STORED
    assert ScheduledPayment.objects.get(id=old_form.id).details == DETAILS_STORED

    module.backward(django_apps, None)
    module.backward(django_apps, None)

    assert PaymentRequest.objects.get(id=request.id).payee == IBAN_PAYEE_AS_THE_API_NAMED_IT
    assert ScheduledPayment.objects.get(id=old_form.id).details == DETAILS_AS_THE_API_NAMED_THEM


def test_a_schedule_made_before_the_migration_pays_its_payee_after_it(customer, migrations_restored):
    _, schedule = _paid_and_scheduled(customer)
    mine, before = _migration()
    _migrate(before)

    # Forward through this migration to the latest: the code that runs the
    # schedule is today's, on today's schema.
    _migrate()
    assert MigrationRecorder(connection).migration_qs.filter(app="payments", name=mine).exists()
    summary = scheduled_payments_run(utc_today())

    assert (summary.paid, summary.failed) == (1, [])
    run = ScheduleRun.objects.get(schedule_id=schedule.id)
    paid = PaymentRequest.objects.get(id=run.payment_request_id)
    assert (paid.amount, paid.purpose, paid.charge_bearer, paid.virtual_iban) == (
        Decimal("3.00"),
        "RENT",
        "SHA",
        "GB33BUKB20201555555555",
    )
    assert payee_of(paid.payee) == UK_PAYEE
