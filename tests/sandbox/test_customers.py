"""Customers on demand over HTTP: what is made, how it is funded, callers,
bad input, tenancy, replays and the per-program budget."""

import uuid
from decimal import Decimal

import pyotp
import pytest

from authn.models import User
from bankapi.models import Account, Customer, IdempotencyRecord
from cards.models import Card
from payments.models import StatementEntry
from tests.sandbox.helpers import account_url, as_customer, clock_make, customer_make, management, midnight
from tests.support.auth import id_header


def test_a_customer_is_made_funded_and_signs_in(api, sandbox):
    program = sandbox["consumerProgramId"]
    made = customer_make(api, sandbox, program, name="Ada O'Hara-Lovelace 2nd")
    assert made["name"] == "Ada O'Hara-Lovelace 2nd" and made["testClockId"] is None and made["pin"] is None
    customer = Customer.objects.get(id=made["customerId"])
    assert str(customer.program_id) == program and customer.sandbox
    for key, currency in (("accountId", "GBP"), ("eurAccountId", "EUR")):
        account = Account.objects.get(id=made[key])
        assert account.customer_id == customer.id and account.currency == currency
        assert account.balance == Decimal("100000.00") and account.reference_max == 140
        # Funded through the ledger, as the bootstrap funds: one booked credit.
        assert StatementEntry.objects.filter(account=account, direction="CREDIT").count() == 1
    assert made["accountIban"].startswith("GB") and made["eurAccountIban"].startswith("DE")
    card = Card.objects.get(id=made["cardId"])
    assert str(card.account_id) == made["accountId"] and card.status == "ACTIVE"
    assert card.name_on_card == "ADA OHARALOVELACE ND"
    # The user signs in like any other.
    login = api.post(
        "/v1/auth/login",
        {"email": made["email"], "password": made["password"]},
        format="json",
        HTTP_X_PROGRAM_ID=program,
    )
    assert login.status_code == 200, login.content
    session = login.json()["data"]["session_token"]
    verified = api.post(
        "/v1/auth/verify-2fa",
        {"session_token": session, "totp_code": pyotp.TOTP(made["totpSecret"]).now()},
        format="json",
        HTTP_X_PROGRAM_ID=program,
    )
    assert verified.status_code == 200, verified.content
    balances = api.get(f"{account_url(made)}/balances", **as_customer(made, program))
    assert balances.status_code == 200 and balances.json()["data"]["balance"] == "100000.00"
    paid = api.post(
        f"{account_url(made)}/payments",
        {"amount": "10.00", "currency": "GBP", "reference": "First", "beneficiaryId": made["beneficiaryId"]},
        format="json",
        **as_customer(made, program),
    )
    assert paid.status_code == 200, paid.content


def test_a_pin_program_shows_the_pin_and_names_count_up(api, sandbox):
    program = sandbox["businessProgramId"]
    first, second = customer_make(api, sandbox, program), customer_make(api, sandbox, program)
    assert first["pin"] is not None and len(first["pin"]) == 6
    assert first["name"].startswith("Sandbox Customer ") and first["name"] != second["name"]
    assert first["email"] != second["email"]
    user = User.objects.get(email=first["email"], program_id=program)
    assert user.check_password(first["password"])


@pytest.mark.parametrize(
    "body",
    [{"name": ""}, {"name": "a\tb"}, {"name": "x" * 71}, {"name": 5}, {"testClockId": 5}, {"programId": "x"}],
)
def test_bad_input_is_400_and_makes_nothing(api, sandbox, body):
    program = sandbox["consumerProgramId"]
    before = Customer.objects.count()
    answer = api.post(
        f"/v1/sandbox/customers?programId={program}", body, format="json", **management(sandbox)
    )
    assert answer.status_code == 400 and answer.json()["code"] == "VALIDATION_ERROR"
    assert Customer.objects.count() == before


def test_another_programs_clock_in_the_body_is_404(api, sandbox):
    clock = clock_make(api, sandbox, sandbox["businessProgramId"], midnight(0))
    before = Customer.objects.count()
    for clock_id in (clock["testClockId"], str(uuid.uuid4()), "nope"):
        answer = api.post(
            f"/v1/sandbox/customers?programId={sandbox['consumerProgramId']}",
            {"testClockId": clock_id},
            format="json",
            **management(sandbox),
        )
        assert answer.status_code == 404 and answer.json()["code"] == "RESOURCE_NOT_FOUND"
    assert Customer.objects.count() == before


def test_callers(api, sandbox):
    program = sandbox["consumerProgramId"]
    url = f"/v1/sandbox/customers?programId={program}"
    assert api.post(url, {}, format="json").status_code == 401
    customer = sandbox["customer"]
    assert api.post(url, {}, format="json", **id_header(customer["email"], program)).status_code == 403


def test_a_replay_repeats_the_secrets_which_are_stored_encrypted(api, sandbox):
    program = sandbox["consumerProgramId"]
    key = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())}
    url = f"/v1/sandbox/customers?programId={program}"
    first = api.post(url, {"name": "Replay Me"}, format="json", **management(sandbox), **key)
    again = api.post(url, {"name": "Replay Me"}, format="json", **management(sandbox), **key)
    assert first.status_code == again.status_code == 200 and again.content == first.content
    assert Customer.objects.filter(name="Replay Me").count() == 1
    password = first.json()["data"]["password"]
    stored = bytes(IdempotencyRecord.objects.get(key=key["HTTP_IDEMPOTENCY_KEY"]).response_body)
    assert password.encode() not in stored and stored.startswith(b"sealed:")
    mismatch = api.post(url, {"name": "Someone Else"}, format="json", **management(sandbox), **key)
    assert mismatch.status_code == 400 and mismatch.json()["code"] == "IDEMPOTENCY_KEY_MISMATCH"


def test_at_most_the_budget_in_24_hours(api, sandbox, settings):
    program = sandbox["consumerProgramId"]
    settings.SANDBOX_CUSTOMERS_MAX = 1
    customer_make(api, sandbox, program)
    before = Customer.objects.count()
    answer = api.post(f"/v1/sandbox/customers?programId={program}", {}, format="json", **management(sandbox))
    assert answer.status_code == 422 and answer.json()["code"] == "LIMIT_EXCEEDED"
    assert Customer.objects.count() == before
