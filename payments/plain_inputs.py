"""The common payment body, checked in plain code.

`PaymentCreateSerializer` stays the definition of the body (the OpenAPI document
is generated from it, and it answers every 400). Building and running it costs
about a millisecond, mostly copying its nested fields, which is more than the
rest of the request's Python. Nearly every payment is the same simple shape, so
that shape is recognised here first: a body this function accepts is one the
serializer accepts, with the same validated data; anything else (another field,
an odd value, an error) returns None and goes to the serializer, which decides
and words the answer.
"""

import re
from decimal import Decimal

from bankapi.formats import UUID
from bankapi.models import Account
from payments.formats import AMOUNT, CENT, MAX_AMOUNT, REFERENCE_MAX
from payments.rules import account_reference_error

SIMPLE_FIELDS = frozenset({"amount", "reference", "beneficiaryId", "currency"})
REQUIRED_FIELDS = frozenset({"amount", "reference", "beneficiaryId"})
# Printable ASCII only: no control, null or surrogate characters to reason about.
PLAIN_REFERENCE = re.compile(rf"\A[ -~]{{1,{REFERENCE_MAX}}}\Z")


def payment_body_plain(data, account: Account) -> dict | None:
    """The validated data of a simple payment body (beneficiaryId, amount,
    reference, optionally the account's own currency), or None."""
    if not isinstance(data, dict) or not REQUIRED_FIELDS <= data.keys() <= SIMPLE_FIELDS:
        return None
    amount, reference, beneficiary_id = data["amount"], data["reference"], data["beneficiaryId"]
    currency = data.get("currency", account.currency)
    if not (
        isinstance(amount, str)
        and AMOUNT.fullmatch(amount)
        and isinstance(reference, str)
        and PLAIN_REFERENCE.fullmatch(reference)
        and isinstance(beneficiary_id, str)
        and UUID.fullmatch(beneficiary_id)
        # The account's currency is a supported one (a database constraint), so
        # equal to it is what the serializer's currency rule and its check take.
        and currency == account.currency
    ):
        return None
    value = Decimal(amount)
    if not 0 < value <= MAX_AMOUNT or account_reference_error(account, reference):
        return None
    return {
        "amount": value.quantize(CENT),
        "reference": reference,
        "beneficiaryId": beneficiary_id,
        "feeWaived": False,
        "currency": currency,
    }
