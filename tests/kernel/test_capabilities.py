from decimal import Decimal

from bankapi.models import Program
from tests.support.factories import (
    ProgramFactory,
    custodian_with_clients,
    customer_user,
    funded_account,
    management_user,
    uk_account,
)


def test_customer_sees_program_settings_and_own_accounts(
    api, program, customer, customer_auth, account, low_account
):
    short_reference = funded_account(customer, "100000.00", reference_max=35, **uk_account())
    eur = funded_account(customer, "100000.00", currency="EUR")

    response = api.get("/v1/capabilities", **customer_auth)

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    data = body["data"]
    assert data["program"]["programId"] == str(program.id)
    assert data["program"]["accountType"] == "consumer"
    assert data["program"]["payments"]["international"] is True
    assert data["program"]["cards"]["cardholders"] is False
    accounts = {account["accountId"]: account for account in data["accounts"]}
    assert set(accounts) == {str(each.id) for each in (account, short_reference, low_account, eur)}
    main = accounts[str(account.id)]
    assert main["currency"] == "GBP"
    assert Decimal(main["balance"]) == Decimal("100000.00") and main["balance"] == "100000.00"
    assert main["availableBalance"] == "100000.00"
    assert main["payments"]["reference"]["max"] == 140
    assert accounts[str(short_reference.id)]["payments"]["reference"]["max"] == 35
    assert accounts[str(low_account.id)]["balance"] == "5.00"


def test_other_customers_accounts_are_not_listed(api, account, customer2, customer2_account):
    data = api.get("/v1/capabilities", **customer2.access).json()["data"]
    ids = {account["accountId"] for account in data["accounts"]}
    assert str(account.id) not in ids
    assert str(customer2_account.id) in ids


def test_business_program_capabilities(api, db):
    business = customer_user(
        ProgramFactory(
            account_type=Program.AccountType.BUSINESS,
            international_payments_enabled=False,
            cardholders_enabled=True,
            pin_confirmation_enabled=True,
        )
    )
    data = api.get("/v1/capabilities", **business.access).json()["data"]
    assert data["program"]["accountType"] == "business"
    assert data["program"]["payments"]["international"] is False
    assert data["program"]["cards"] == {"cardholders": True, "pinConfirmation": True}


def test_custodian_sees_accounts_of_its_customers(api, program):
    custodian = custodian_with_clients(program)
    data = api.get("/v1/capabilities", **custodian.person.access).json()["data"]
    assert {a["accountId"] for a in data["accounts"]} == {str(a.id) for a in custodian.accounts}


def test_id_token_is_refused(api, customer_id_auth):
    response = api.get("/v1/capabilities", **customer_id_auth)
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"


def test_management_role_is_forbidden(api, db):
    response = api.get("/v1/capabilities", **management_user().access)
    assert response.status_code == 403
    assert response.json()["code"] == "FORBIDDEN"
