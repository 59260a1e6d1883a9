"""FX quotes: give a firm quote, consume it once, and the amounts it converts.

A quote is stored, lives 30 seconds (`valid_until`) and pays for one transfer
(`used_at`). The customer sells `currency_one` and buys `currency_two`.
"""

from datetime import date, timedelta
from decimal import Decimal

from django.db import transaction

from bankapi.clock import customer_now
from bankapi.errors import ApiError, validation_error
from bankapi.models import Account
from bankapi.scope import get_or_not_found
from payments.errors import PaymentErrorCode
from payments.formats import MAX_AMOUNT
from payments.fx.dates import is_business_day, value_date_for
from payments.fx.pricing import FxPair, converted_amount, to_cents_for_bank
from payments.fx.provider import FxPairNotQuoted, FxProviderUnavailable, fx_provider
from payments.models import FxQuote

QUOTE_LIFETIME = timedelta(seconds=30)


def _checked_value_date(requested: date | None, tenor: str, today: date) -> date:
    if requested is None:
        return value_date_for(tenor, today)
    if requested < today:
        raise validation_error("valueDate", "Must not be in the past.")
    if not is_business_day(requested):
        raise validation_error("valueDate", "Must be a business day (Monday to Friday).")
    return requested


def _check_fx_available(account: Account) -> None:
    """Spec 4.5: FX off for the program, or an account whose provider cannot quote."""
    if not account.program.international_payments_enabled:
        raise ApiError(PaymentErrorCode.PROVIDER_ERROR, "FX quotes are not available on this program.")
    if not account.fx_quotes_supported:
        raise ApiError(PaymentErrorCode.PROVIDER_ERROR, "FX quotes are not available for this account.")


def fx_quote_create(
    *,
    account: Account,
    currency_one: str,
    currency_two: str,
    amount_currency: str,
    amount: Decimal,
    tenor: str,
    value_date: date | None = None,
) -> FxQuote:
    """Price and store a firm quote for `account`; `value_date` overrides the tenor's."""
    now = customer_now(account.customer_id)
    value_date = _checked_value_date(value_date, tenor, now.date())
    _check_fx_available(account)
    pair = FxPair(currency_one, currency_two)
    try:
        priced = fx_provider().quote(
            pair, amount_currency=amount_currency, amount=amount, tenor=tenor, value_date=value_date
        )
    except FxPairNotQuoted as exc:
        raise validation_error("currencyOne" if exc.currency == currency_one else "currencyTwo", exc.message)
    except FxProviderUnavailable as exc:
        raise ApiError(PaymentErrorCode.PROVIDER_ERROR, str(exc))
    price = None if priced.price is None else to_cents_for_bank(pair, amount_currency, priced.price)
    converted = price if price is not None else converted_amount(pair, priced.rate, amount_currency, amount)
    # Conversions that round to nothing, or past what an account can hold, cannot be paid.
    if converted <= 0:
        raise validation_error("amount", "Too small: it converts to less than one cent.")
    if converted > MAX_AMOUNT:
        raise validation_error("amount", "Too large: its converted amount exceeds what an account can hold.")
    return FxQuote.objects.create(
        program_id=account.program_id,
        sandbox=account.sandbox,
        account=account,
        currency_one=currency_one,
        currency_two=currency_two,
        amount_currency=amount_currency,
        amount=amount,
        rate=priced.rate,
        price=price,
        tenor=tenor,
        value_date=value_date,
        valid_until=now + QUOTE_LIFETIME,
        created_at=now,
    )


def fx_quote_consume(*, account: Account, quote_id: str) -> FxQuote:
    """Mark the account's quote used, or refuse it (404, QUOTE_ALREADY_USED, QUOTE_EXPIRED).

    Must run inside the caller's `transaction.atomic()`, so that the quote is spent
    if and only if the caller's work (the transfer) commits.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("fx_quote_consume must run inside transaction.atomic()")
    # The row lock makes two transfers racing for one quote take turns: the second
    # reads the row only after the first commits, sees used_at set and is refused,
    # so a quote pays for at most one transfer.
    quote = get_or_not_found(FxQuote.objects.select_for_update().filter(account=account), quote_id, "Quote")
    if quote.used_at is not None:
        raise ApiError(PaymentErrorCode.QUOTE_ALREADY_USED, "This quote has already been used.")
    now = customer_now(account.customer_id)
    if now > quote.valid_until:
        raise ApiError(PaymentErrorCode.QUOTE_EXPIRED, "This quote has expired; ask for a new one.")
    quote.used_at = now
    quote.save(update_fields=["used_at"])
    return quote


def fx_quote_amounts(quote: FxQuote, *, sell_currency: str) -> tuple[Decimal, Decimal]:
    """(amount the customer sells in `sell_currency`, amount bought in the other currency).

    The quote's `amount` is one side as asked; the other side is the quote's price,
    which is rounded to the cent in the bank's favour (see `payments.fx.pricing`),
    or, for a quote without a price, the amount converted at the quote's rate with
    the same rounding.
    """
    pair = FxPair(quote.currency_one, quote.currency_two)
    if sell_currency != pair.one:
        raise validation_error("quoteId", f"This quote sells {pair.one}, not {sell_currency}.")
    converted = quote.price
    if converted is None:
        converted = converted_amount(pair, quote.rate, quote.amount_currency, quote.amount)
    if quote.amount_currency == pair.one:
        return quote.amount, converted
    return converted, quote.amount
