"""One amount rule, fed the same table on every path that reads an amount: the
payment route's field (and the OpenAPI pattern it publishes), the payment
route's body as the route checks it, an FX quote's query, and a batch item's amount. Each path
takes exactly the amounts the table says, as the same Decimal."""

import re
from decimal import Decimal

import pytest
from rest_framework.exceptions import ValidationError

from bankapi.models import MONEY, Account
from batches.rules import parse_amount
from payments.fields import AmountField
from payments.formats import CENT, MAX_AMOUNT, POSITIVE_AMOUNT_PATTERN
from payments.serializers import PaymentCreateSerializer
from payments.views.fx import FxQuoteQuerySerializer

BENEFICIARY = "0b97c690-4a11-47fc-90ac-a71044d089b6"

# text -> the amount it is, or None when refused.
TABLE = {
    "1": Decimal("1.00"),
    "0.01": Decimal("0.01"),
    "0.1": Decimal("0.10"),
    "10.50": Decimal("10.50"),
    "0010.50": Decimal("10.50"),
    "9999999999999999.99": MAX_AMOUNT,
    "00009999999999999999.99": MAX_AMOUNT,
    "10000000000000000.00": None,
    "10000000000000000": None,
    "0": None,
    "0.00": None,
    "000.00": None,
    "1.001": None,
    "1.": None,
    ".5": None,
    "+1": None,
    "-1.00": None,
    "1e3": None,
    "1,00": None,
    " 1.00": None,
    "1.00 ": None,
    "1.00\n": None,
    "١٢": None,
    "": None,
    "NaN": None,
    "Infinity": None,
}


def test_the_maximum_and_the_cent_are_the_money_column_s():
    assert CENT == Decimal("0.01") == Decimal(1).scaleb(-MONEY["decimal_places"])
    assert MAX_AMOUNT == Decimal("9999999999999999.99")
    assert len(str(MAX_AMOUNT).replace(".", "")) == MONEY["max_digits"]


def field_amount(text: str) -> Decimal | None:
    try:
        return AmountField().run_validation(text)
    except ValidationError:
        return None


def route_amount(text: str) -> Decimal | None:
    # As the payment route checks its body: the serializer, kept for the thread.
    account = Account(currency="GBP", reference_min=1, reference_max=140)
    body = {"amount": text, "reference": "Invoice", "beneficiaryId": BENEFICIARY}
    try:
        return PaymentCreateSerializer.checked(body, {"account": account})["amount"]
    except ValidationError:
        return None


def pattern_amount(text: str) -> Decimal | None:
    # As a client reads the published pattern (ECMA-262: `$` is the very end).
    published = re.compile(POSITIVE_AMOUNT_PATTERN.removesuffix("$") + r"\Z")
    return Decimal(text).quantize(CENT) if published.search(text) else None


def fx_amount(text: str) -> Decimal | None:
    query = FxQuoteQuerySerializer(
        data={"currencyOne": "GBP", "currencyTwo": "EUR", "amountCurrency": "GBP", "amount": text}
    )
    return query.validated_data["amount"].quantize(CENT) if query.is_valid() else None


def batch_amount(text: str) -> Decimal | None:
    amount = parse_amount(text)
    return None if amount is None else amount.quantize(CENT)


@pytest.mark.parametrize("path", [field_amount, route_amount, pattern_amount, fx_amount, batch_amount])
def test_every_path_takes_the_amounts_of_the_one_table(path):
    taken = {text: path(text) for text in TABLE}

    assert taken == TABLE
