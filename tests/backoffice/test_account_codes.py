"""An operator cannot give an account a currency, IBAN or BIC the API would refuse:
the admin form says why, and the database refuses a currency whatever writes it."""

import pytest
from django.db import DataError, IntegrityError, transaction

from bankapi.models import Account, Customer
from tests.payments.test_bank_codes import BAD_IBANS, COMMERZBANK_IBAN
from tests.support.factories_backoffice import operator_user

ADD = "/admin/bankapi/account/add/"


@pytest.fixture
def operator(client, db):
    """A client signed in as a staff user of the administrator group."""
    client.force_login(operator_user())
    return client


def account_form(customer: Customer, **fields) -> dict:
    return {
        "program": str(customer.program_id),
        "sandbox": "on",
        "customer": str(customer.id),
        "name": "Operator's account",
        "currency": "EUR",
        "reference_min": "1",
        "reference_max": "140",
        "reference_charset": "ANY",
        "sort_code": "",
        "account_number": "",
        "iban": "",
        "bic": "",
        "fx_quotes_supported": "on",
    } | fields


def form_errors(response) -> dict:
    return response.context["adminform"].form.errors


def test_an_operator_opens_an_account_with_a_real_iban_and_its_banks_bic(operator, customer):
    response = operator.post(
        ADD, account_form(customer, iban="de89 3704 0044 0532 0130 00", bic="cobadeffxxx")
    )

    assert response.status_code == 302, form_errors(response)
    account = Account.objects.get(name="Operator's account")
    assert (account.currency, account.iban, account.bic) == ("EUR", COMMERZBANK_IBAN, "COBADEFFXXX")


@pytest.mark.parametrize("currency", ["JPY", "KWD", "XAU", "ABC", "gbp"])
def test_a_currency_without_2_decimal_places_is_refused_in_admin(operator, customer, currency):
    response = operator.post(ADD, account_form(customer, currency=currency))

    assert response.status_code == 200
    assert list(form_errors(response)) == ["currency"]
    assert not Account.objects.filter(name="Operator's account").exists()


@pytest.mark.parametrize(("iban", "reason"), BAD_IBANS.items())
def test_an_iban_no_bank_would_take_is_refused_in_admin(operator, customer, iban, reason):
    response = operator.post(ADD, account_form(customer, iban=iban))

    assert response.status_code == 200
    assert form_errors(response) == {"iban": [reason]}
    assert not Account.objects.filter(name="Operator's account").exists()


@pytest.mark.parametrize("bic", ["DEUTXXFF", "DEUTDEFF"])
def test_a_bic_of_no_country_or_not_the_ibans_bank_is_refused_in_admin(operator, customer, bic):
    response = operator.post(ADD, account_form(customer, iban=COMMERZBANK_IBAN, bic=bic))

    assert response.status_code == 200
    assert list(form_errors(response)) == ["bic"]


@pytest.mark.parametrize("currency", ["JPY", "XYZ", "GBP\n"])
def test_the_database_refuses_an_unsupported_currency_whatever_writes_it(customer, currency):
    # On PostgreSQL varchar(3) stops "GBP\n" before the check constraint does.
    with pytest.raises((IntegrityError, DataError)), transaction.atomic():
        Account.objects.create(program_id=customer.program_id, customer=customer, currency=currency)
