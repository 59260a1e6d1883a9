"""What an account's holds set aside, now or at a past moment (see
`payments.models.Hold`): the difference between its balance and its available
balance."""

from datetime import datetime
from decimal import Decimal

from django.db.models import Q, Sum

from bankapi.funds import available_balance
from bankapi.models import ZERO, Account
from payments.formats import CENT
from payments.models import Hold


def held_as_of(account: Account, moment: datetime) -> Decimal:
    """What the account's holds set aside at `moment`: those placed at or
    before it and not released by then (a hold released at `moment` no longer
    counts, as the payment booked from it then already does)."""
    total = (
        Hold.objects.filter(account_id=account.id, placed_at__lte=moment)
        .filter(Q(released_at__isnull=True) | Q(released_at__gt=moment))
        .aggregate(total=Sum("amount"))["total"]
    )
    # Rounded to cents: SQLite sums decimals as floating point.
    return ZERO if total is None else total.quantize(CENT)


def available_as_of(account: Account, balance: Decimal, moment: datetime) -> Decimal:
    """The available balance at `moment` of an account whose ledger balance then was `balance`."""
    return available_balance(balance, held_as_of(account, moment))
