"""FX arithmetic: the spread and conversions, rounded in the bank's favour.

The customer always sells `currency_one` and buys `currency_two`, so the rate (the
price of one unit of `currency_one` in `currency_two`) is the bank's bid: the mid
rate less the spread, rounded down. Converted amounts are rounded to the cent the
way that costs the customer: what the customer receives is rounded down, what the
customer pays is rounded up. Every rounding therefore leaves the bank at least
the spread, never less.

Arithmetic runs in a context that rounds the same way as the final result, so no
intermediate rounding can tip a result over to the customer's side.
"""

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext

from payments.formats import CENT

RATE_STEP = Decimal("0.00000001")
BASIS_POINTS = Decimal(10000)
# Enough digits for any product of a money amount (18) and a rate (20) to be exact.
PRECISION = 60


@dataclass(frozen=True)
class FxPair:
    """The customer sells `one` and buys `two`."""

    one: str
    two: str


def customer_rate(mid_rate: Decimal, spread_bps: int, *, inverted: bool = False) -> Decimal:
    """The mid rate of one -> two less the spread, rounded down to 8 places.

    `inverted`: `mid_rate` is quoted the other way round (two -> one).
    """
    with localcontext(prec=PRECISION, rounding=ROUND_FLOOR):
        mid = 1 / mid_rate if inverted else mid_rate
        return (mid * (BASIS_POINTS - spread_bps) / BASIS_POINTS).quantize(RATE_STEP)


def converted_amount(pair: FxPair, rate: Decimal, amount_currency: str, amount: Decimal) -> Decimal:
    """`amount` (in `amount_currency`) converted into the pair's other currency.

    Selling a fixed `currency_one` amount: the customer receives amount x rate,
    rounded down. Buying a fixed `currency_two` amount: the customer pays
    amount / rate, rounded up.
    """
    if amount_currency == pair.one:
        with localcontext(prec=PRECISION, rounding=ROUND_FLOOR):
            return (amount * rate).quantize(CENT)
    if amount_currency == pair.two:
        with localcontext(prec=PRECISION, rounding=ROUND_CEILING):
            return (amount / rate).quantize(CENT)
    raise ValueError(f"{amount_currency} is not in {pair.one}/{pair.two}")


def to_cents_for_bank(pair: FxPair, amount_currency: str, converted: Decimal) -> Decimal:
    """A converted amount priced elsewhere (a provider's `price`), to the cent as
    `converted_amount` rounds it: down when the customer receives it, up when the
    customer pays it."""
    rounding = ROUND_FLOOR if amount_currency == pair.one else ROUND_CEILING
    return converted.quantize(CENT, rounding=rounding)
