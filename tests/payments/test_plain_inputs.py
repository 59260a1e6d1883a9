"""The plain-code check of the common payment body never disagrees with the serializer.

Whatever `payment_body_plain` accepts, `PaymentCreateSerializer` accepts with the
same validated data; whatever the serializer refuses, the plain check leaves to
it (None), so every 400 is still the serializer's.
"""

from decimal import Decimal

import pytest

from bankapi.models import Account
from payments.plain_inputs import payment_body_plain
from payments.serializers import PaymentCreateSerializer

BENEFICIARY = "0b97c690-4a11-47fc-90ac-a71044d089b6"
SIMPLE = {"amount": "10.50", "reference": "Invoice 42", "beneficiaryId": BENEFICIARY}


def account(**fields) -> Account:
    values = {"currency": "GBP", "reference_min": 1, "reference_max": 140}
    values.update(fields)
    return Account(**values)


BODIES = [
    SIMPLE,
    {**SIMPLE, "currency": "GBP"},
    {**SIMPLE, "amount": "1"},
    {**SIMPLE, "amount": "0.1"},
    {**SIMPLE, "amount": "9999999999999999.99"},
    {**SIMPLE, "amount": "10000000000000000.00"},
    {**SIMPLE, "amount": "0"},
    {**SIMPLE, "amount": "0.00"},
    {**SIMPLE, "amount": "1.001"},
    {**SIMPLE, "amount": " 1.00"},
    {**SIMPLE, "amount": "1e3"},
    {**SIMPLE, "amount": "-1.00"},
    {**SIMPLE, "amount": "١٢"},
    {**SIMPLE, "amount": 10},
    {**SIMPLE, "amount": None},
    {**SIMPLE, "reference": ""},
    {**SIMPLE, "reference": " "},
    {**SIMPLE, "reference": "x" * 140},
    {**SIMPLE, "reference": "x" * 141},
    {**SIMPLE, "reference": "line\nbreak"},
    {**SIMPLE, "reference": "Caf\u00e9"},
    {**SIMPLE, "reference": "nul\u0000"},
    {**SIMPLE, "reference": "\ud800"},
    {**SIMPLE, "reference": 42},
    {**SIMPLE, "beneficiaryId": "not-a-uuid"},
    {**SIMPLE, "beneficiaryId": f" {BENEFICIARY} "},
    {**SIMPLE, "beneficiaryId": BENEFICIARY.upper()},
    {**SIMPLE, "beneficiaryId": 7},
    {**SIMPLE, "currency": "EUR"},
    {**SIMPLE, "currency": "gbp"},
    {**SIMPLE, "currency": None},
    {**SIMPLE, "purpose": "SALA"},
    {**SIMPLE, "programId": "x"},
    {**SIMPLE, "sandbox": True},
    {**SIMPLE, "unknown": 1},
    {**SIMPLE, "payee": {"name": "A", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "1"}}},
    {key: value for key, value in SIMPLE.items() if key != "reference"},
    {key: value for key, value in SIMPLE.items() if key != "amount"},
    {key: value for key, value in SIMPLE.items() if key != "beneficiaryId"},
    [SIMPLE],
    "amount",
]
ACCOUNTS = [
    account(),
    account(reference_max=35),
    account(reference_min=12),
    account(reference_charset=Account.ReferenceCharset.SWIFT),
    account(currency="EUR"),
]


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
@pytest.mark.parametrize("target", ACCOUNTS, ids=["plain", "ref35", "min12", "swift", "eur"])
def test_the_plain_check_accepts_only_what_the_serializer_accepts_and_the_same_way(body, target):
    serializer = PaymentCreateSerializer(data=body, context={"account": target})
    accepted = serializer.is_valid()

    plain = payment_body_plain(body, target)

    if plain is not None:
        assert accepted, serializer.errors
        assert plain == dict(serializer.validated_data)
    if not accepted:
        assert plain is None


def test_the_common_body_takes_the_plain_path():
    assert payment_body_plain(SIMPLE, account()) == {
        "amount": Decimal("10.50"),
        "reference": "Invoice 42",
        "beneficiaryId": BENEFICIARY,
        "feeWaived": False,
        "currency": "GBP",
    }
    assert payment_body_plain({**SIMPLE, "amount": "7"}, account())["amount"] == Decimal("7.00")
