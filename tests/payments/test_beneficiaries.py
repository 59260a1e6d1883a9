"""Saved beneficiaries: validated in admin, made by bootstrap_sandbox."""

import pytest
from django.core.exceptions import ValidationError

from payments.models import Beneficiary
from tests.support.factories_backoffice import operator_user


@pytest.fixture
def operator_client(client, db):
    client.force_login(operator_user())
    return client


def admin_form(customer, **fields):
    return {
        "customer": str(customer.id),
        "name": "Landlord",
        "account_kind": "uk",
        "sort_code": "",
        "account_number": "",
        "iban": "",
        "bic": "",
        "payee_type": "",
    } | fields


def test_bootstrap_gives_each_sandbox_customer_a_beneficiary(sandbox):
    for key in ("customer", "customer2", "business"):
        beneficiary = Beneficiary.objects.get(id=sandbox[key]["beneficiaryId"])
        assert str(beneficiary.customer_id) == sandbox[key]["customerId"]
        assert beneficiary.sandbox is True
        assert beneficiary.program_id == beneficiary.customer.program_id


def test_an_operator_adds_a_uk_beneficiary_in_admin(operator_client, customer):
    response = operator_client.post(
        "/admin/payments/beneficiary/add/",
        admin_form(customer, sort_code="200000", account_number="55779911"),
    )

    assert response.status_code == 302
    beneficiary = Beneficiary.objects.get(name="Landlord")
    assert (beneficiary.sort_code, beneficiary.program_id, beneficiary.sandbox) == (
        "200000",
        customer.program_id,
        True,
    )


def test_an_operator_adds_an_iban_beneficiary_in_admin(operator_client, customer, beneficiary):
    response = operator_client.post(
        "/admin/payments/beneficiary/add/",
        admin_form(customer, account_kind="iban", iban="de89 3704 0044 0532 0130 00", bic="cobadeff"),
    )

    assert response.status_code == 302
    assert Beneficiary.objects.get(name="Landlord").iban == "DE89370400440532013000"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"sort_code": "12345", "account_number": "55779911"}, "sort_code"),
        ({"sort_code": "200000", "account_number": "5577991a"}, "account_number"),
        ({"sort_code": "200000", "account_number": "55779911", "iban": "DE89370400440532013000"}, "iban"),
        ({"account_kind": "iban", "iban": "DE89370400440532013001"}, "iban"),
        ({"account_kind": "iban", "iban": "DE89370400440532013000", "bic": "XX"}, "bic"),
        ({"account_kind": "iban", "iban": "DE89370400440532013000", "sort_code": "200000"}, "sort_code"),
    ],
)
def test_admin_refuses_invalid_account_details(operator_client, customer, fields, field, beneficiary):
    response = operator_client.post("/admin/payments/beneficiary/add/", admin_form(customer, **fields))

    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert not Beneficiary.objects.filter(name="Landlord").exists()


def test_a_beneficiary_without_account_details_is_invalid(customer):
    beneficiary = Beneficiary(customer=customer, name="Nobody", account_kind="uk")

    with pytest.raises(ValidationError):
        beneficiary.full_clean()
