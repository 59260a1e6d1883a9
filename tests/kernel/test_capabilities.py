from decimal import Decimal

from tests.support.auth import access_header, id_header


def test_customer_sees_program_settings_and_own_accounts(api, sandbox, customer_auth):
    response = api.get("/v1/capabilities", **customer_auth)

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    data = body["data"]
    assert data["program"]["programId"] == sandbox["consumerProgramId"]
    assert data["program"]["accountType"] == "consumer"
    assert data["program"]["payments"]["international"] is True
    assert data["program"]["cards"]["cardholders"] is False
    accounts = {account["accountId"]: account for account in data["accounts"]}
    customer = sandbox["customer"]
    assert set(accounts) == {
        customer[key] for key in ("accountId", "shortRefAccountId", "lowBalanceAccountId", "eurAccountId")
    }
    main = accounts[customer["accountId"]]
    assert main["currency"] == "GBP"
    assert Decimal(main["balance"]) == Decimal("100000.00") and main["balance"] == "100000.00"
    assert main["availableBalance"] == "100000.00"
    assert main["payments"]["reference"]["max"] == 140
    assert accounts[customer["shortRefAccountId"]]["payments"]["reference"]["max"] == 35
    assert accounts[customer["lowBalanceAccountId"]]["balance"] == "5.00"


def test_other_customers_accounts_are_not_listed(api, sandbox):
    headers = access_header(sandbox["customer2"]["email"], sandbox["consumerProgramId"])
    data = api.get("/v1/capabilities", **headers).json()["data"]
    ids = {account["accountId"] for account in data["accounts"]}
    assert sandbox["customer"]["accountId"] not in ids
    assert sandbox["customer2"]["accountId"] in ids


def test_business_program_capabilities(api, sandbox):
    headers = access_header(sandbox["business"]["email"], sandbox["businessProgramId"])
    data = api.get("/v1/capabilities", **headers).json()["data"]
    assert data["program"]["accountType"] == "business"
    assert data["program"]["payments"]["international"] is False
    assert data["program"]["cards"] == {"cardholders": True, "pinConfirmation": True}


def test_custodian_sees_accounts_of_its_customers(api, sandbox):
    custodian = sandbox["custodian"]
    data = api.get("/v1/capabilities", **access_header(custodian["email"], custodian["programId"])).json()[
        "data"
    ]
    assert {a["accountId"] for a in data["accounts"]} == {a["accountId"] for a in custodian["accounts"]}


def test_id_token_is_refused(api, sandbox):
    headers = id_header(sandbox["customer"]["email"], sandbox["consumerProgramId"])
    response = api.get("/v1/capabilities", **headers)
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"


def test_management_role_is_forbidden(api, sandbox):
    headers = access_header(sandbox["management"]["email"], None)
    response = api.get("/v1/capabilities", **headers)
    assert response.status_code == 403
    assert response.json()["code"] == "FORBIDDEN"
