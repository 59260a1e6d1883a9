"""The payment services speak the domain: typed keyword arguments in, domain
results out, callable by any app (batches, admin, the schedule runner) without
a request body."""

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest

from bankapi.errors import ApiError
from payments.fx import fx_quote_create
from payments.models import FxQuote, PaymentRequest, ScheduledPayment
from payments.serializers import InternationalTransferCreatedSerializer, PaymentCreatedSerializer
from payments.services.create import (
    PaymentSubmission,
    payment_fingerprint,
    payment_instruction_build,
    payment_submit,
)
from payments.services.schedules import utc_today
from payments.services.transfers import (
    international_transfer_instruction_build,
    international_transfer_submit,
)
from tests.payments.conftest import balance

# Quotes are priced from the starting rate table.
pytestmark = pytest.mark.usefixtures("fx_rates")


def rent(account, beneficiary, **fields):
    return payment_instruction_build(
        account=account,
        amount=Decimal("10.00"),
        currency="GBP",
        reference="Rent",
        beneficiary_id=str(beneficiary.id),
        **fields,
    )


def test_a_payment_today_answers_its_accepted_request(account, beneficiary):
    submission = payment_submit(account=account, instruction=rent(account, beneficiary))

    assert isinstance(submission, PaymentSubmission) and submission.schedule is None
    request = PaymentRequest.objects.get()
    assert submission.payment_request == request
    assert (request.status, request.amount, request.reference) == ("PENDING", Decimal("10.00"), "Rent")
    assert str(request.beneficiary_id) == str(beneficiary.id)
    assert balance(account) == Decimal("99990.00")
    assert PaymentCreatedSerializer(submission).data == {
        "bankTransfer": {"status": "success", "requestId": str(request.id)}
    }


def test_a_payment_for_a_later_day_answers_its_schedule_and_pays_nothing(account, beneficiary):
    later = utc_today() + timedelta(days=3)

    submission = payment_submit(
        account=account, instruction=rent(account, beneficiary), scheduled_date=later, frequency="MONTHLY"
    )

    assert submission.payment_request is None
    schedule = ScheduledPayment.objects.get()
    assert submission.schedule == schedule
    assert (schedule.scheduled_date, schedule.frequency, schedule.next_run_date) == (later, "MONTHLY", later)
    assert PaymentRequest.objects.count() == 0 and balance(account) == Decimal("100000.00")
    assert PaymentCreatedSerializer(submission).data == {
        "bankTransfer": {"status": "success", "scheduleId": str(schedule.id)}
    }


def test_a_repeating_payment_starting_today_answers_both(account, beneficiary):
    submission = payment_submit(account=account, instruction=rent(account, beneficiary), frequency="WEEKLY")

    assert submission.payment_request.schedule == submission.schedule
    assert submission.schedule.next_run_date == utc_today() + timedelta(days=7)


def test_the_fingerprint_binds_amount_account_and_beneficiary(account, beneficiary):
    # The beneficiary as the body names it: looked up only once the key is held.
    fingerprint = payment_fingerprint(
        account=account,
        amount=Decimal("10"),
        beneficiary_id=str(beneficiary.id).upper(),
    )

    assert fingerprint.stored() == {
        "version": 1,
        "fields": {"amount": "10.00", "account_id": str(account.id), "beneficiary_id": str(beneficiary.id)},
    }


def test_another_customers_beneficiary_is_not_found(account, customer2_beneficiary):
    with pytest.raises(ApiError) as refused:
        payment_instruction_build(
            account=account,
            amount=Decimal("10.00"),
            currency="GBP",
            reference="Rent",
            beneficiary_id=str(customer2_beneficiary.id),
        )

    assert (refused.value.status, refused.value.code) == (404, "RESOURCE_NOT_FOUND")


def test_an_international_transfer_answers_its_request_converted_through_the_quote(account, beneficiary):
    quote = fx_quote_create(
        account=account,
        currency_one="GBP",
        currency_two="EUR",
        amount_currency="GBP",
        amount=Decimal("100.00"),
        tenor=FxQuote.Tenor.SPOT,
        value_date=None,
    )
    instruction = international_transfer_instruction_build(
        account=account,
        quote_id=quote.id,
        reference="Tuition",
        beneficiary_id=str(beneficiary.id),
    )

    request = international_transfer_submit(account=account, instruction=instruction)

    quote.refresh_from_db()
    assert request.fx_quote == quote and quote.used_at is not None
    assert (request.currency, request.debit_amount) == ("EUR", Decimal("100.00"))
    assert balance(account) == Decimal("99900.00")
    transfer = InternationalTransferCreatedSerializer(request).data["internationalTransfer"]
    assert transfer == {
        "status": "success",
        "requestId": str(request.id),
        "quoteId": str(quote.id),
        "sellAmount": "100.00",
        "sellCurrency": "GBP",
        "buyAmount": f"{request.amount:.2f}",
        "buyCurrency": "EUR",
        "rate": str(quote.rate.normalize()),
    }


def test_the_payment_route_answers_what_the_serializer_renders_from_the_result(
    api, customer_auth, account, beneficiary
):
    response = api.post(
        f"/v1/customers/{account.customer_id}/accounts/{account.id}/payments",
        {"amount": "10.00", "reference": "Rent", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **customer_auth,
    )

    rendered = PaymentCreatedSerializer(PaymentSubmission(payment_request=PaymentRequest.objects.get())).data
    assert response.status_code == 200
    assert response.json() == {"success": True, "data": rendered}
