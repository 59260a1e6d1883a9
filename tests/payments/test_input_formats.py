"""Text formats of payment input: ASCII digits only and the whole string matched.

Python's `\\d` also matches Arabic-Indic, full-width and other Unicode digits, which
`Decimal` then reads as numbers, and `$` also matches before a trailing newline:
"٥٠.00" was paid as 50.00 and "1.00\\n" passed as an amount.
"""

from datetime import UTC, date, datetime

import pytest
import time_machine
from django.core.exceptions import ValidationError

from bankapi.models import Account
from payments.models import Beneficiary, PaymentRequest, ScheduledPayment
from tests.payments.conftest import payments_url
from tests.support.auth import access_header
from tests.support.factories import funded_account

# Quotes are priced from the starting rate table.
pytestmark = pytest.mark.usefixtures("fx_rates")

KEY = "6b1a3f4e-5c2d-4e8f-9a0b-1c2d3e4f5a6b"
# Each is read as KEY by uuid.UUID, which takes far more than the canonical form.
ODD_UUIDS = [
    "{" + KEY + "}",
    "urn:uuid:" + KEY,
    KEY.replace("-", ""),
    KEY.replace("6", "\u0666"),  # ARABIC-INDIC DIGIT SIX
    KEY.replace("1", "\uff11"),  # FULLWIDTH DIGIT ONE
]
UUIDS_WITH_WHITESPACE = [KEY + "\n", " " + KEY]


def pay(api, auth, account, **body):
    return api.post(payments_url(account.customer_id, account.id), body, format="json", **auth)


def body_for(beneficiary, /, **overrides) -> dict:
    return {
        "amount": "10.00",
        "reference": "Invoice 42",
        "beneficiaryId": str(beneficiary.id),
    } | overrides


def assert_refused(response, field: str) -> None:
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert field in [error["field"] for error in response.json()["errors"]], response.json()


@pytest.mark.parametrize(
    "amount",
    [
        "\u0665\u0660.00",  # ٥٠.00: Arabic-Indic 50
        "\u0661.\u0660\u0660",  # ١.٠٠
        "\uff11.00",  # full-width 1
        "10.0\u0660",
        "\u09e7\u09e6.00",  # Bengali 10
        "1.00\n",
        "1.00 ",
        "1.00\r\n",
    ],
)
def test_an_amount_in_other_digits_or_with_a_trailing_newline_is_refused(
    api, customer_auth, account, snapshot, amount, beneficiary
):
    before = snapshot()

    response = pay(api, customer_auth, account, **body_for(beneficiary, amount=amount))

    assert_refused(response, "amount")
    assert before.unchanged()


@pytest.mark.parametrize("currency", ["GBP\n", " GBP", "GBP "])
def test_a_currency_with_whitespace_around_it_is_refused(
    api, customer_auth, account, snapshot, currency, beneficiary
):
    before = snapshot()

    assert_refused(pay(api, customer_auth, account, **body_for(beneficiary, currency=currency)), "currency")
    assert before.unchanged()


@pytest.mark.parametrize(
    "charset", [Account.ReferenceCharset.ANY, Account.ReferenceCharset.SWIFT], ids=["any", "swift"]
)
@pytest.mark.parametrize("reference", ["INV 1\n", "INV 1\r\n"])
def test_a_reference_ending_in_a_newline_breaks_the_accounts_charset(
    api, customer_auth, customer, snapshot, charset, reference, beneficiary
):
    account = funded_account(customer, "100.00", reference_charset=charset)
    before = snapshot()

    response = pay(api, customer_auth, account, **body_for(beneficiary, reference=reference))

    assert_refused(response, "reference")
    assert before.unchanged()


@pytest.fixture
def frozen():
    with time_machine.travel(datetime(2026, 3, 10, 12, 0, tzinfo=UTC), tick=False):
        yield


@pytest.fixture
def auth(payer, frozen):
    return access_header(payer.email, payer.program_id)


@pytest.mark.parametrize(
    "scheduled_date",
    [
        "2026-03-20\n",
        " 2026-03-20",
        "2026-03-20T10:00:00Z\n",
        "\u0662\u0660\u0662\u0666-\u0660\u0663-\u0662\u0660",  # ٢٠٢٦-٠٣-٢٠
        "\u0662\u0660\u0662\u0666-\u0660\u0663-\u0662\u0660T10:00:00",
        "2026-03-2\uff10",
        "2026-3-20T1:0",
        "20260320",
        "20260320T100000Z",
        "2026-W12-5",
        "2026-03-20T10",
        "2026-03-20T10:00:00+05:60",
        "2026-03-20T10:00:00+24:00",
        "2026-03-20T24:00:00",
        "2026-03-20t10:00:00z",
        "+002026-03-20",
        "0000-03-20",
    ],
)
def test_a_scheduled_date_that_only_looks_like_a_date_is_refused(
    api, auth, account, snapshot, scheduled_date, beneficiary
):
    before = snapshot()

    response = pay(api, auth, account, **body_for(beneficiary, scheduledDate=scheduled_date))

    assert_refused(response, "scheduledDate")
    assert before.unchanged() and ScheduledPayment.objects.count() == 0


@pytest.mark.parametrize(
    ("scheduled_date", "day"),
    [
        ("2026-03-20", date(2026, 3, 20)),
        ("2026-03-20T10:00:00Z", date(2026, 3, 20)),
        ("2026-03-20T23:30:00-02:00", date(2026, 3, 21)),
        ("2026-03-20T00:30+01", date(2026, 3, 19)),
        ("2026-03-20T00:30:00+0100", date(2026, 3, 19)),
        ("2026-03-20T10:00:00.123456789+01:00", date(2026, 3, 20)),
        ("2026-03-20T10:00:00,5Z", date(2026, 3, 20)),
        ("2026-03-20 10:00", date(2026, 3, 20)),
    ],
)
def test_dates_and_iso_8601_date_times_schedule_on_their_utc_day(
    api, auth, account, scheduled_date, day, beneficiary
):
    response = pay(api, auth, account, **body_for(beneficiary, scheduledDate=scheduled_date))

    assert response.status_code == 200, response.json()
    schedule_id = response.json()["data"]["bankTransfer"]["scheduleId"]
    assert ScheduledPayment.objects.get(id=schedule_id).scheduled_date == day


@pytest.mark.parametrize("key", ODD_UUIDS + UUIDS_WITH_WHITESPACE)
def test_an_idempotency_key_field_not_in_the_canonical_uuid_form_is_refused(
    api, customer_auth, account, snapshot, key, beneficiary
):
    before = snapshot()

    response = pay(api, customer_auth, account, **body_for(beneficiary, idempotencyKey=key))

    assert_refused(response, "idempotencyKey")
    assert before.unchanged()


@pytest.mark.parametrize("key", ODD_UUIDS)
def test_an_idempotency_key_header_not_in_the_canonical_uuid_form_is_refused(
    api, customer_auth, account, snapshot, key, beneficiary
):
    before = snapshot()

    response = api.post(
        payments_url(account.customer_id, account.id),
        body_for(beneficiary),
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
        **customer_auth,
    )

    assert_refused(response, "Idempotency-Key")
    assert before.unchanged()


def test_one_canonical_key_in_either_case_and_with_spaces_around_the_header_is_one_key(
    api, customer_auth, account, beneficiary
):
    # Spaces around a header value are not part of it (RFC 9110).
    first = api.post(
        payments_url(account.customer_id, account.id),
        body_for(beneficiary),
        format="json",
        HTTP_IDEMPOTENCY_KEY=f" {KEY.upper()} ",
        **customer_auth,
    )
    retry = pay(api, customer_auth, account, **body_for(beneficiary, idempotencyKey=KEY))

    assert first.status_code == 200, first.json()
    assert retry.json() == first.json() and retry["Idempotent-Replayed"] == "true"
    assert PaymentRequest.objects.count() == 1


@pytest.mark.parametrize("quote_id", ODD_UUIDS + UUIDS_WITH_WHITESPACE)
def test_a_quote_id_not_in_the_canonical_uuid_form_is_refused(
    api, customer_auth, account, snapshot, quote_id, beneficiary
):
    before = snapshot()

    transfer = api.post(
        payments_url(account.customer_id, account.id, "international-transfers"),
        {"quoteId": quote_id, "beneficiaryId": str(beneficiary.id), "reference": "Fees"},
        format="json",
        **customer_auth,
    )
    crypto = pay(
        api,
        customer_auth,
        account,
        amount="10.00",
        reference="Top-up",
        cryptoQuote={"quoteId": quote_id},
    )

    assert_refused(transfer, "quoteId")
    assert_refused(crypto, "cryptoQuote.quoteId")
    assert before.unchanged()


def test_a_bic_with_a_trailing_newline_is_invalid(customer):
    # 9 characters: within the column's 11, so only the shape check can stop it.
    beneficiary = Beneficiary(
        customer=customer,
        name="Landlord",
        account_kind="iban",
        iban="DE89370400440532013000",
        bic="COBADEFF\n",
    )

    with pytest.raises(ValidationError) as invalid:
        beneficiary.full_clean()

    assert "bic" in invalid.value.message_dict


@pytest.mark.parametrize(
    "scheduled_date",
    [
        "9999-12-31T23:00:00-05:00",
        "9999-12-31T23:59:59.999999-00:01",
        "0001-01-01T00:00:00+05:00",
        "0001-01-01T00:00+00:01",
    ],
)
def test_a_date_time_whose_utc_day_is_off_the_calendar_is_a_400_not_a_500(
    api, customer_auth, account, snapshot, scheduled_date, beneficiary
):
    before = snapshot()

    response = pay(api, customer_auth, account, **body_for(beneficiary, scheduledDate=scheduled_date))

    assert_refused(response, "scheduledDate")
    assert "between 0001-01-01 and 9999-12-31" in response.json()["errors"][0]["message"]
    assert before.unchanged() and ScheduledPayment.objects.count() == 0


@pytest.mark.parametrize(
    "scheduled_date", ["9999-12-31", "9999-12-31T23:59:59Z", "9999-12-31T23:00:00+05:00"]
)
def test_the_calendars_last_day_can_be_scheduled(api, customer_auth, account, scheduled_date, beneficiary):
    response = pay(api, customer_auth, account, **body_for(beneficiary, scheduledDate=scheduled_date))

    assert response.status_code == 200, response.json()
    schedule_id = response.json()["data"]["bankTransfer"]["scheduleId"]
    assert ScheduledPayment.objects.get(id=schedule_id).scheduled_date == date(9999, 12, 31)


@pytest.mark.parametrize("scheduled_date", ["0001-01-01", "0001-01-02T03:00:00+05:00"])
def test_the_calendars_first_day_is_long_past_and_pays_at_once(
    api, customer_auth, account, scheduled_date, beneficiary
):
    response = pay(api, customer_auth, account, **body_for(beneficiary, scheduledDate=scheduled_date))

    assert response.status_code == 200, response.json()
    assert set(response.json()["data"]["bankTransfer"]) == {"status", "requestId"}
