"""A payment's amount and reference as the API takes them: one definition each.

The payment routes, the payment route's plain parser, FX conversions, the
ledger's statement lines and batch items all read these; batches derive their
item rules from them.

Every pattern spells digits `[0-9]` and is applied with `fullmatch` (see
`bankapi.formats`).
"""

import re
from decimal import Decimal

from bankapi.models import MONEY

# The unit amounts are held in: MONEY columns keep 2 decimal places.
CENT = Decimal(1).scaleb(-MONEY["decimal_places"])
# The largest amount a MONEY column holds: 16 digits before the point.
MAX_AMOUNT = Decimal(10) ** (MONEY["max_digits"] - MONEY["decimal_places"]) - CENT
# An amount as sent: ASCII digits, at most 2 decimal places.
AMOUNT = re.compile(r"\A[0-9]+(\.[0-9]{1,2})?\Z")
# An AMOUNT above zero and at most MAX_AMOUNT, for the OpenAPI document (leading
# zeros allowed).
POSITIVE_AMOUNT_PATTERN = r"^(0*[1-9][0-9]{0,15}(\.[0-9]{1,2})?|0+\.(0[1-9]|[1-9][0-9]?))$"
# The longest statement reference a payment may carry (an account may allow fewer).
REFERENCE_MAX = 140
