"""`bootstrap_sandbox`, FX part: the sandbox provider's rate table (GBP, EUR, USD).

One row per pair (the provider prices the inverse direction itself). Pairs are
looked for, either way round, before being created, so a rerun adds nothing and
keeps whatever an operator has since edited in admin.
"""

from decimal import Decimal

from django.db.models import Q

from bankapi.sandbox import SandboxContext
from payments.models import FxRate

SANDBOX_RATES = [
    ("GBP", "EUR", Decimal("1.17000000")),
    ("GBP", "USD", Decimal("1.27000000")),
    ("EUR", "USD", Decimal("1.08550000")),
]
SANDBOX_SPREAD_BPS = 25


def bootstrap(ctx: SandboxContext) -> None:
    for base, quote, mid in SANDBOX_RATES:
        # Either direction counts: an operator may have re-entered the pair inverted.
        pair = Q(base_currency=base, quote_currency=quote) | Q(base_currency=quote, quote_currency=base)
        if not FxRate.objects.filter(pair).exists():
            FxRate.objects.create(
                base_currency=base, quote_currency=quote, mid_rate=mid, spread_bps=SANDBOX_SPREAD_BPS
            )
