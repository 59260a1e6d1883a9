"""Where FX prices come from: a provider interface and the built-in sandbox provider.

`settings.FX_PROVIDER` names the provider class by dotted path. A provider prices
one quote; the quote service validates the request before asking and stores the
answer. The sandbox provider has no network: it prices from the `FxRate` table
that operators edit in admin, exactly as a real provider would price from its
market feed.
"""

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Protocol

from django.conf import settings
from django.db.models import Q
from django.utils.module_loading import import_string

from payments.fx.pricing import FxPair, converted_amount, customer_rate
from payments.models import FxRate


@dataclass(frozen=True)
class ProviderQuote:
    """A provider's firm price: `rate` is 1 `pair.one` in `pair.two`, spread taken;
    `price` is the amount converted into the other currency, or None when the
    provider gives no price."""

    rate: Decimal
    price: Decimal | None


class FxPairNotQuoted(Exception):
    """The provider does not deal in this pair: the caller asked for something
    unknown (400). `currency` names the side at fault."""

    def __init__(self, message: str, *, currency: str) -> None:
        super().__init__(message)
        self.message = message
        self.currency = currency


class FxProviderUnavailable(Exception):
    """The provider cannot price this request now (422 PROVIDER_ERROR)."""


class FxProvider(Protocol):
    def quote(
        self, pair: FxPair, *, amount_currency: str, amount: Decimal, tenor: str, value_date: date
    ) -> ProviderQuote: ...


class SandboxFxProvider:
    """Prices from the `FxRate` table; a pair is priced in either direction.

    Tenor and value date do not move the sandbox price (no forward points).
    """

    def quote(
        self, pair: FxPair, *, amount_currency: str, amount: Decimal, tenor: str, value_date: date
    ) -> ProviderQuote:
        row = self._rate_row(pair)
        rate = customer_rate(row.mid_rate, row.spread_bps, inverted=row.base_currency != pair.one)
        if rate <= 0:
            raise FxProviderUnavailable(f"The {pair.one}/{pair.two} rate is too small to quote.")
        return ProviderQuote(rate=rate, price=converted_amount(pair, rate, amount_currency, amount))

    @staticmethod
    def _rate_row(pair: FxPair) -> FxRate:
        currencies = [pair.one, pair.two]
        rows = list(FxRate.objects.filter(Q(base_currency__in=currencies) | Q(quote_currency__in=currencies)))
        for row in rows:
            if {row.base_currency, row.quote_currency} == set(currencies):
                return row
        known = {currency for row in rows for currency in (row.base_currency, row.quote_currency)}
        for currency in currencies:
            if currency not in known:
                raise FxPairNotQuoted(f"{currency} is not a quoted currency.", currency=currency)
        raise FxPairNotQuoted(f"No rate for {pair.one}/{pair.two}.", currency=pair.two)


def fx_provider() -> FxProvider:
    return import_string(settings.FX_PROVIDER)()
