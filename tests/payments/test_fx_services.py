"""The FX services other apps call: fx_quote_consume and fx_quote_amounts.

Exercised through the database, as the international-transfer service uses them:
inside its transaction, on a quote the customer was given.
"""

import threading
import time
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.test import override_settings

from bankapi.errors import ApiError
from bankapi.models import Account
from payments.errors import PaymentErrorCode
from payments.fx import fx_quote_amounts, fx_quote_consume, fx_quote_create
from payments.fx.provider import FxProviderUnavailable, ProviderQuote
from payments.models import FxQuote
from tests.conftest import requires_postgres

# Quotes are priced from the starting rate table.
pytestmark = pytest.mark.usefixtures("fx_rates")

THURSDAY_10AM = datetime(2026, 3, 5, 10, 0, tzinfo=UTC)


def give_quote(account: Account, **overrides) -> FxQuote:
    """A quote as GET fx/quote gives it: by default, sell 100.00 GBP for EUR at spot."""
    request = {
        "currency_one": "GBP",
        "currency_two": "EUR",
        "amount_currency": "GBP",
        "amount": Decimal("100.00"),
        "tenor": "SPOT",
        **overrides,
    }
    return fx_quote_create(account=account, **request)


def consume(account: Account, quote_id) -> FxQuote:
    with transaction.atomic():
        return fx_quote_consume(account=account, quote_id=str(quote_id))


def refusal(account: Account, quote_id) -> ApiError:
    with pytest.raises(ApiError) as caught:
        consume(account, quote_id)
    return caught.value


@pytest.fixture
def account(account) -> Account:
    return account


def test_consuming_a_live_quote_marks_it_used(account, time_machine):
    time_machine.move_to(THURSDAY_10AM, tick=False)
    quote = give_quote(account)
    time_machine.shift(timedelta(seconds=12))

    consumed = consume(account, quote.id)

    assert consumed.id == quote.id
    quote.refresh_from_db()
    assert quote.used_at is not None and quote.used_at.isoformat() == "2026-03-05T10:00:12+00:00"


def test_a_quote_is_used_once(account):
    quote = give_quote(account)
    consume(account, quote.id)

    error = refusal(account, quote.id)

    assert (error.code, error.status) == ("QUOTE_ALREADY_USED", 422)


def test_a_quote_lives_thirty_seconds(account, time_machine):
    time_machine.move_to(THURSDAY_10AM, tick=False)
    quote = give_quote(account)
    assert quote.valid_until.isoformat() == "2026-03-05T10:00:30+00:00"

    # 31 seconds later it is dead, and stays unused
    time_machine.shift(timedelta(seconds=31))
    error = refusal(account, quote.id)

    assert (error.code, error.status) == ("QUOTE_EXPIRED", 422)
    quote.refresh_from_db()
    assert quote.used_at is None


def test_a_quote_is_still_alive_at_its_valid_until_instant(account, time_machine):
    time_machine.move_to(THURSDAY_10AM, tick=False)
    quote = give_quote(account)
    time_machine.shift(timedelta(seconds=30))

    assert consume(account, quote.id).used_at is not None


def test_a_used_quote_says_used_even_once_expired(account, time_machine):
    time_machine.move_to(THURSDAY_10AM, tick=False)
    quote = give_quote(account)
    consume(account, quote.id)
    time_machine.shift(timedelta(minutes=5))

    assert refusal(account, quote.id).code == "QUOTE_ALREADY_USED"


def test_a_refused_transfer_leaves_the_quote_unused(account):
    # Given the caller's transaction fails after consuming the quote
    quote = give_quote(account)
    with pytest.raises(ApiError), transaction.atomic():
        fx_quote_consume(account=account, quote_id=str(quote.id))
        raise ApiError(PaymentErrorCode.INSUFFICIENT_FUNDS, "Not enough money")

    # Then the quote is still there to use
    quote.refresh_from_db()
    assert quote.used_at is None
    assert consume(account, quote.id).used_at is not None


def test_another_accounts_quote_is_not_found(account, eur_account):
    other = eur_account
    quote = give_quote(other)

    error = refusal(account, quote.id)

    assert (error.code, error.status) == ("RESOURCE_NOT_FOUND", 404)
    quote.refresh_from_db()
    assert quote.used_at is None


@pytest.mark.parametrize("quote_id", ["not-a-uuid", "", "00000000-0000-0000-0000-000000000000"])
def test_a_malformed_or_unknown_quote_id_is_not_found(account, quote_id):
    assert refusal(account, quote_id).code == "RESOURCE_NOT_FOUND"


def test_selling_a_fixed_amount_buys_the_price_rounded_down(account, customer):
    # 100.00 GBP x 1.167075 = 116.7075 EUR: the customer receives 116.70
    quote = give_quote(account)

    assert fx_quote_amounts(quote, sell_currency="GBP") == (Decimal("100.00"), Decimal("116.70"))


def test_buying_a_fixed_amount_costs_the_price_rounded_up(account, customer):
    # 100.00 EUR / 1.167075 = 85.6843... GBP: the customer pays 85.69
    quote = give_quote(account, amount_currency="EUR")

    assert fx_quote_amounts(quote, sell_currency="GBP") == (Decimal("85.69"), Decimal("100.00"))


@pytest.mark.parametrize("amount", ["0.01", "0.99", "1.00", "33.33", "99.99", "1234.56", "987654.32"])
@pytest.mark.parametrize("amount_currency", ["GBP", "EUR"])
def test_the_bank_never_gives_more_than_the_mid_rate_is_worth(account, amount, amount_currency, customer):
    quote = give_quote(account, amount_currency=amount_currency, amount=Decimal(amount))

    sold, bought = fx_quote_amounts(quote, sell_currency="GBP")

    # At mid (1.17) what the customer sells is worth at least what it buys
    assert sold * Decimal("1.17") > bought
    assert sold == sold.quantize(Decimal("0.01")) and bought == bought.quantize(Decimal("0.01"))


def test_amounts_must_be_asked_for_the_currency_the_quote_sells(account):
    quote = give_quote(account)

    with pytest.raises(ApiError) as caught:
        fx_quote_amounts(quote, sell_currency="EUR")

    assert caught.value.code == "VALIDATION_ERROR"
    assert caught.value.extra["errors"][0]["field"] == "quoteId"


class PricelessProvider:
    """A provider that gives a rate but no price (price null)."""

    def quote(self, pair, *, amount_currency, amount, tenor, value_date):
        return ProviderQuote(rate=Decimal("1.50000000"), price=None)


class SubCentProvider:
    """A provider whose price carries more places than money has."""

    def quote(self, pair, *, amount_currency, amount, tenor, value_date):
        return ProviderQuote(rate=Decimal("1.50000000"), price=amount * Decimal("1.5") + Decimal("0.0001"))


class ClosedProvider:
    def quote(self, pair, *, amount_currency, amount, tenor, value_date):
        raise FxProviderUnavailable("Market closed")


def test_a_quote_without_a_price_converts_at_its_rate(account):
    with override_settings(FX_PROVIDER=f"{__name__}.PricelessProvider"):
        quote = give_quote(account, amount_currency="EUR", amount=Decimal("100.00"))

    assert quote.price is None
    # 100.00 EUR / 1.5 = 66.666... GBP to pay, rounded up
    assert fx_quote_amounts(quote, sell_currency="GBP") == (Decimal("66.67"), Decimal("100.00"))


def test_a_providers_price_is_stored_to_the_cent_in_the_banks_favour(account, customer):
    with override_settings(FX_PROVIDER=f"{__name__}.SubCentProvider"):
        received = give_quote(account, amount_currency="GBP", amount=Decimal("10.00"))
        paid = give_quote(account, amount_currency="EUR", amount=Decimal("10.00"))

    # 15.0001 received by the customer: down; 15.0001 paid by the customer: up
    assert (received.price, paid.price) == (Decimal("15.00"), Decimal("15.01"))


def test_a_provider_that_cannot_price_is_a_provider_error_and_stores_nothing(account):
    with override_settings(FX_PROVIDER=f"{__name__}.ClosedProvider"), pytest.raises(ApiError) as caught:
        give_quote(account)

    assert (caught.value.code, caught.value.message) == ("PROVIDER_ERROR", "Market closed")
    assert not FxQuote.objects.exists()


def test_a_quote_in_the_past_or_on_a_weekend_is_refused(account, time_machine):
    time_machine.move_to(THURSDAY_10AM, tick=False)
    for value_date in (date(2026, 3, 4), date(2026, 3, 8)):
        with pytest.raises(ApiError) as caught:
            give_quote(account, value_date=value_date)
        assert caught.value.extra["errors"][0]["field"] == "valueDate"
    assert not FxQuote.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_consuming_outside_a_transaction_is_a_programming_error(account):
    quote = give_quote(account)

    with pytest.raises(RuntimeError, match=r"transaction\.atomic"):
        fx_quote_consume(account=account, quote_id=str(quote.id))

    quote.refresh_from_db()
    assert quote.used_at is None


def _another_backend_waits_for_a_lock(seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            # Activity is snapshotted once per transaction unless the snapshot is cleared.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0]:
                return True
            time.sleep(0.02)
    return False


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_transfers_racing_for_one_quote_exactly_one_wins(account):
    # Given a live quote
    quote = give_quote(account)
    first_holds_the_quote = threading.Event()
    outcomes: dict[str, str] = {}

    def first() -> None:
        try:
            with transaction.atomic():
                fx_quote_consume(account=account, quote_id=str(quote.id))
                first_holds_the_quote.set()
                # Commit only once the second transaction is blocked on our row lock,
                # so both really were in flight at once.
                outcomes["second blocked"] = str(_another_backend_waits_for_a_lock())
            outcomes["first"] = "used"
        finally:
            connection.close()

    def second() -> None:
        try:
            first_holds_the_quote.wait(5)
            with transaction.atomic():
                fx_quote_consume(account=account, quote_id=str(quote.id))
            outcomes["second"] = "used"
        except ApiError as error:
            outcomes["second"] = str(error.code)
        finally:
            connection.close()

    # When two transactions consume it at the same time
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    # Then the second waited for the first, and exactly one of them spent the quote
    assert outcomes == {"second blocked": "True", "first": "used", "second": "QUOTE_ALREADY_USED"}
    quote.refresh_from_db()
    assert quote.used_at is not None
