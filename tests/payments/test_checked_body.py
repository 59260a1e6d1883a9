"""The payment route checks its body with its serializer alone, kept per thread
(`InputSerializer.checked`), and answers exactly as a serializer made for the
request would: the same validated data, the same errors, whatever body or
account came before on the same thread or on another."""

import threading
from decimal import Decimal

import pytest
from rest_framework.exceptions import ValidationError

from bankapi.models import Account
from payments.serializers import PaymentCreateSerializer

BENEFICIARY = "0b97c690-4a11-47fc-90ac-a71044d089b6"
SIMPLE = {"amount": "10.50", "reference": "Invoice 42", "beneficiaryId": BENEFICIARY}
PAYEE = {"name": "Jane", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"}}


def account(**fields) -> Account:
    values = {"currency": "GBP", "reference_min": 1, "reference_max": 140}
    values.update(fields)
    return Account(**values)


BODIES = [
    SIMPLE,
    {**SIMPLE, "currency": "GBP"},
    {**SIMPLE, "amount": "1"},
    {**SIMPLE, "amount": "9999999999999999.99"},
    {**SIMPLE, "amount": "10000000000000000.00"},
    {**SIMPLE, "amount": "0"},
    {**SIMPLE, "amount": "1.001"},
    {**SIMPLE, "amount": " 1.00"},
    {**SIMPLE, "amount": "-1.00"},
    {**SIMPLE, "amount": 10},
    {**SIMPLE, "amount": None},
    {**SIMPLE, "reference": ""},
    {**SIMPLE, "reference": "x" * 141},
    {**SIMPLE, "reference": "line\nbreak"},
    {**SIMPLE, "reference": "Caf\u00e9"},
    {**SIMPLE, "reference": 42},
    {**SIMPLE, "beneficiaryId": 7},
    {**SIMPLE, "currency": "EUR"},
    {**SIMPLE, "currency": "gbp"},
    {**SIMPLE, "purpose": "SALA"},
    {**SIMPLE, "feeWaived": True},
    {**SIMPLE, "feeWaived": "yes"},
    {**SIMPLE, "scheduledDate": "2030-01-02"},
    {**SIMPLE, "frequency": "WEEKLY", "scheduledDate": "2030-01-02"},
    {**SIMPLE, "programId": "x"},
    {**SIMPLE, "unknown": 1},
    {**SIMPLE, "payee": PAYEE},
    {"amount": "5.00", "reference": "Inline", "payee": PAYEE},
    {"amount": "5.00", "reference": "Inline", "payee": {**PAYEE, "extra": 1}},
    {"amount": "5.00", "reference": "Inline", "payee": {**PAYEE, "account": {"type": "uk"}}},
    {
        "amount": "5.00",
        "reference": "Quote",
        "cryptoQuote": {"quoteId": BENEFICIARY},
        "scheduledDate": "2030-01-02",
    },
    {key: value for key, value in SIMPLE.items() if key != "reference"},
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


def made_for_the_request(body, target) -> tuple[bool, object]:
    serializer = PaymentCreateSerializer(data=body, context={"account": target})
    if serializer.is_valid():
        return True, dict(serializer.validated_data)
    return False, serializer.errors


def checked(body, target) -> tuple[bool, object]:
    try:
        return True, dict(PaymentCreateSerializer.checked(body, {"account": target}))
    except ValidationError as error:
        return False, error.detail


def test_every_body_on_every_account_answers_as_a_serializer_made_for_it():
    expected = {
        (b, a): made_for_the_request(body, target)
        for b, body in enumerate(BODIES)
        for a, target in enumerate(ACCOUNTS)
    }
    # In order, then backwards: a body follows every kind of answer before it.
    cases = list(expected)
    for b, a in cases + cases[::-1]:
        assert checked(BODIES[b], ACCOUNTS[a]) == expected[(b, a)], (BODIES[b], a)


def test_threads_keep_their_own_serializer():
    found: dict[int, list] = {}

    def run(index: int) -> None:
        found[index] = [checked(body, ACCOUNTS[index % len(ACCOUNTS)]) for body in BODIES * 3]

    threads = [threading.Thread(target=run, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, answers in found.items():
        target = ACCOUNTS[index % len(ACCOUNTS)]
        assert answers == [made_for_the_request(body, target) for body in BODIES * 3]


def test_the_common_body():
    assert PaymentCreateSerializer.checked(SIMPLE, {"account": account()}) == {
        "amount": Decimal("10.50"),
        "reference": "Invoice 42",
        "beneficiaryId": BENEFICIARY,
        "feeWaived": False,
        "currency": "GBP",
    }


def test_a_refused_body_leaves_nothing_behind_for_the_next():
    with pytest.raises(ValidationError):
        PaymentCreateSerializer.checked({**SIMPLE, "amount": "0"}, {"account": account()})
    assert PaymentCreateSerializer.checked(SIMPLE, {"account": account()})["amount"] == Decimal("10.50")
