from authn.models import User
from bankapi.models import Custodian
from tests.support.auth import access_header


def test_a_custodian_user_without_a_custodian_acts_for_nobody(api, sandbox):
    # An admin saved a custodian user but forgot its custodian.
    user = User.objects.create_user(
        "orphan.custodian@sandbox.example",
        "Orphan-Password-42",
        program_id=sandbox["consumerProgramId"],
        role="custodian",
    )
    assert user.custodian_id is None and Custodian.objects.exists()

    data = api.get("/v1/capabilities", **access_header(user.email, sandbox["consumerProgramId"])).json()[
        "data"
    ]
    assert data["accounts"] == []

    customer = sandbox["customer"]
    response = api.get(
        f"/v1/customers/{customer['customerId']}/accounts/{customer['accountId']}/payment-requests",
        **access_header(user.email, sandbox["consumerProgramId"]),
    )
    assert response.status_code == 404


def test_a_customer_user_without_a_customer_acts_for_nobody(api, sandbox):
    user = User.objects.create_user(
        "orphan.customer@sandbox.example",
        "Orphan-Password-42",
        program_id=sandbox["consumerProgramId"],
    )
    data = api.get("/v1/capabilities", **access_header(user.email, sandbox["consumerProgramId"])).json()[
        "data"
    ]
    assert data["accounts"] == []
