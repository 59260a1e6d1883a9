import pytest

from bankapi.banking import AccountObjectSerializer
from bankapi.codes import iban_problem


@pytest.mark.parametrize(
    "iban", ["GB82WEST12345698765432", "GB82 WEST 1234 5698 7654 32", "DE89370400440532013000"]
)
def test_valid_ibans_pass_mod97(iban):
    assert iban_problem(iban) is None


@pytest.mark.parametrize("iban", ["GB82WEST12345698765433", "GB82", "XX00", "", "GB82WEST1234569876543$"])
def test_invalid_ibans_fail(iban):
    assert iban_problem(iban) is not None


def test_uk_account_needs_six_and_eight_digits():
    bad = AccountObjectSerializer(data={"type": "uk", "sortCode": "12345", "accountNumber": "1234567"})
    assert not bad.is_valid()
    assert set(bad.errors) == {"sortCode", "accountNumber"}
    good = AccountObjectSerializer(data={"type": "uk", "sortCode": "12-34-56", "accountNumber": "12345678"})
    assert good.is_valid(), good.errors
    assert good.validated_data == {"type": "uk", "sortCode": "123456", "accountNumber": "12345678"}


def test_iban_account_is_normalised_and_bic_checked():
    good = AccountObjectSerializer(
        data={"type": "iban", "iban": "gb82 west 1234 5698 7654 32", "bic": "westgb2l"}
    )
    assert good.is_valid(), good.errors
    assert good.validated_data == {"type": "iban", "iban": "GB82WEST12345698765432", "bic": "WESTGB2L"}
    bad = AccountObjectSerializer(data={"type": "iban", "iban": "GB82WEST12345698765432", "bic": "W"})
    assert not bad.is_valid() and "bic" in bad.errors


@pytest.mark.parametrize(
    "account",
    [
        {"type": "uk", "sortCode": "٠٤٠٠٠٤", "accountNumber": "12345678"},
        {"type": "uk", "sortCode": "040004", "accountNumber": "١٢٣٤٥٦٧٨"},
        {"type": "uk", "sortCode": "04\n0004", "accountNumber": "12345678"},
        {"type": "iban", "iban": "GB٨٢WEST12345698765432"},
        {"type": "iban", "iban": "GB82WEST1234\n5698765432"},
    ],
)
def test_only_ascii_digits_and_no_line_breaks(account):
    assert not AccountObjectSerializer(data=account).is_valid()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sortCode", " 040004"),
        ("sortCode", "040004\n"),
        ("accountNumber", "12345678\n"),
        ("accountNumber", "\t12345678"),
    ],
)
def test_surrounding_whitespace_is_refused_not_trimmed(field, value):
    # A pattern-checked value is checked as sent: "040004\n" is not quietly made 040004.
    account = AccountObjectSerializer(
        data={"type": "uk", "sortCode": "040004", "accountNumber": "12345678"} | {field: value}
    )

    assert not account.is_valid()
    assert list(account.errors) == [field]


def test_a_bic_must_be_of_the_ibans_bank_where_the_registry_lists_it():
    account = AccountObjectSerializer(
        data={"type": "iban", "iban": "DE89370400440532013000", "bic": "DEUTDEFF"}
    )

    assert not account.is_valid()
    assert account.errors["bic"] == [
        "Is not the bank of the IBAN: the DE bank registry gives COBADEFF for its bank code."
    ]
