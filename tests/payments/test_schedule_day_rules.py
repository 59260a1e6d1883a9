"""A schedule run applies the rules of its day, one schedule at a time: each run
re-checks the account's state, its reference rules and the virtual IBAN rule as
they are that day, and each schedule runs in its own savepoint, so a failing one
is recorded with its reason and the others pay."""

from datetime import date
from decimal import Decimal

from bankapi.models import Account, Program
from payments.ledger import ledger_check
from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun
from payments.payees import Payee, UkAccount
from payments.services.acceptance import PaymentInstruction
from payments.services.schedules import schedule_create, scheduled_payments_run
from tests.payments.conftest import balance
from tests.support.factories import IbanBeneficiaryFactory, funded_account

DAY = date(2026, 3, 10)
UK_PAYEE = Payee(name="Jane", account=UkAccount(sort_code="200000", account_number="55779911"))


def make_schedule(account, *, reference="Rent March", frequency="DAILY", **fields) -> ScheduledPayment:
    instruction = PaymentInstruction(
        amount=Decimal("3.00"),
        currency=account.currency,
        reference=reference,
        **({"payee": UK_PAYEE} | fields),
    )
    return schedule_create(account=account, instruction=instruction, anchor=DAY, frequency=frequency)


def run_of(schedule, day=DAY) -> tuple[str, str]:
    run = ScheduleRun.objects.get(schedule=schedule, run_date=day)
    return run.outcome, run.reason


def test_a_reference_the_account_no_longer_accepts_fails_that_run_and_the_others_pay(customer, account):
    strict, other = funded_account(customer, "10.00"), funded_account(customer, "10.00")
    refused, paid = make_schedule(strict, reference="Rent March"), make_schedule(other)
    Account.objects.filter(id=strict.id).update(reference_max=5)

    summary = scheduled_payments_run(DAY)

    assert (summary.paid, [entry[0] for entry in summary.failed]) == (1, [str(refused.id)])
    assert run_of(refused) == (
        "FAILED",
        "VALIDATION_ERROR: reference: Must be 1 to 5 characters for this account.",
    )
    assert run_of(paid)[0] == "PAID"
    assert (balance(strict), balance(other)) == (Decimal("10.00"), Decimal("7.00"))
    refused.refresh_from_db()
    assert (refused.status, refused.next_run_date) == ("ACTIVE", date(2026, 3, 11))


def test_a_reference_outside_the_accounts_new_charset_fails_that_run(customer):
    account = funded_account(customer, "10.00")
    schedule = make_schedule(account, reference="Rent #3")
    Account.objects.filter(id=account.id).update(reference_charset=Account.ReferenceCharset.SWIFT)

    scheduled_payments_run(DAY)

    outcome, reason = run_of(schedule)
    assert outcome == "FAILED"
    assert reason.startswith("VALIDATION_ERROR: reference: Contains characters this account does not accept")
    assert PaymentRequest.objects.filter(schedule=schedule).count() == 0
    assert balance(account) == Decimal("10.00")


def test_a_beneficiary_now_in_the_uk_needs_a_gb_virtual_iban_on_the_day(customer):
    account = funded_account(customer, "10.00")
    beneficiary = IbanBeneficiaryFactory(customer=customer)
    schedule = make_schedule(
        account,
        beneficiary=beneficiary,
        payee=beneficiary.payee(),
        virtual_iban="DE89370400440532013000",
    )
    # The beneficiary's details are edited after the schedule was made.
    type(beneficiary).objects.filter(id=beneficiary.id).update(
        account_kind="uk", iban="", bic="", sort_code="200000", account_number="12345678"
    )

    scheduled_payments_run(DAY)

    assert run_of(schedule) == (
        "FAILED",
        "VALIDATION_ERROR: virtualIban: A domestic GBP payment must come from a GB virtual IBAN.",
    )
    assert balance(account) == Decimal("10.00")


def test_an_account_no_longer_in_the_schedules_currency_is_not_debited(customer):
    account = funded_account(customer, "10.00")
    schedule = make_schedule(account)
    Account.objects.filter(id=account.id).update(currency="EUR")

    summary = scheduled_payments_run(DAY)

    assert run_of(schedule) == ("FAILED", "INVALID_STATE: The account is now in EUR; the schedule pays GBP.")
    assert summary.failed == [(str(schedule.id), DAY, run_of(schedule)[1])]
    assert Account.objects.get(id=account.id).balance == Decimal("10.00")
    assert ledger_check().ok


def test_an_account_moved_to_another_customer_is_not_debited_for_the_old_one(customer, customer2):
    account = funded_account(customer, "10.00")
    schedule = make_schedule(account)
    Account.objects.filter(id=account.id).update(customer_id=str(customer2.customer.id))

    scheduled_payments_run(DAY)

    assert run_of(schedule) == (
        "FAILED",
        "INVALID_STATE: The account no longer belongs to the schedule's customer.",
    )
    assert balance(account) == Decimal("10.00")


def test_a_database_error_in_one_schedule_is_recorded_and_the_others_pay(customer, business, account):
    business = business.customer
    broken_account, account = funded_account(business, "10.00"), funded_account(customer, "10.00")
    broken, healthy = make_schedule(broken_account), make_schedule(account)
    # A fee the database refuses on the payment request (its check constraint):
    # the acceptance fails with an IntegrityError, not a refusal.
    Program.objects.filter(id=business.program_id).update(fee_per_payment=Decimal("-1.00"))

    summary = scheduled_payments_run(DAY)
    again = scheduled_payments_run(DAY)

    assert run_of(broken) == ("FAILED", "INTERNAL_SERVER_ERROR: the run failed (IntegrityError).")
    assert run_of(healthy)[0] == "PAID"
    assert (summary.paid, summary.failed) == (1, [(str(broken.id), DAY, run_of(broken)[1])])
    assert again.runs == 0
    assert ScheduleRun.objects.filter(schedule__in=[broken, healthy], run_date=DAY).count() == 2
    assert PaymentRequest.objects.filter(schedule=broken).count() == 0
    assert (balance(broken_account), balance(account)) == (Decimal("10.00"), Decimal("7.00"))
    broken.refresh_from_db()
    assert (broken.status, broken.next_run_date, broken.last_run.outcome) == (
        "ACTIVE",
        date(2026, 3, 11),
        "FAILED",
    )
    assert ledger_check().ok


def test_a_failing_day_does_not_stop_the_catch_up_of_the_next_days(customer):
    account = funded_account(customer, "10.00")
    schedule = make_schedule(account, reference="Rent March")
    Account.objects.filter(id=account.id).update(reference_max=5)
    scheduled_payments_run(DAY)
    Account.objects.filter(id=account.id).update(reference_max=140)

    scheduled_payments_run(date(2026, 3, 12))

    runs = ScheduleRun.objects.filter(schedule=schedule).order_by("run_date")
    assert list(runs.values_list("run_date", "outcome")) == [
        (DAY, "FAILED"),
        (date(2026, 3, 11), "PAID"),
        (date(2026, 3, 12), "PAID"),
    ]
    assert balance(account) == Decimal("4.00")
