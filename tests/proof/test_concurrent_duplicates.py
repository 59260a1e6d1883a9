"""Duplicates sent at once, on every idempotent route: they behave as one request.

The family is read from the URL configuration (`idempotent_routes`: every view
that declares the operation its POST makes once per key), so a new idempotent
route is raced here as soon as it declares itself, and fails until it has a
scenario below. A route whose OpenAPI operation takes an Idempotency-Key header
or an idempotencyKey field without declaring itself fails too.

For each route, N copies of one successful request with one key are released
together, each on its own PostgreSQL connection. Every copy answers the first
answer (200, naming the same object) or 409 IDEMPOTENCY_KEY_IN_PROGRESS; the
effect happens once (one payment, one batch, one application), the money moves
exactly once, and no copy spends or counts a credential.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pyotp
import pytest
from django.db.models import QuerySet
from django.utils import timezone
from rest_framework.test import APIClient

from authn.models import LoginThrottle, User
from bankapi.models import Account, Customer, IdempotencyRecord, Program, TestClock
from batches.models import Batch
from cards.models import Card, CardAuthorization
from cards.services import card_issue
from onboarding.models import Application
from payments.models import Beneficiary, IncomingPayment, PaymentRequest
from tests.conftest import requires_postgres
from tests.proof.conftest import report_figures
from tests.proof.routes import Route, all_routes, idempotent_routes
from tests.support.auth import access_header, id_header
from tests.support.factories import CustodianSetup, SignedIn, custodian_with_clients, management_user
from tests.support.openapi import openapi_document
from tests.support.race import run_at_once

DUPLICATES = 16
HEADER = "Idempotency-Key"
BODY_FIELD = "idempotencyKey"


@dataclass
class Race:
    """One successful request of a route, and how to see what it made."""

    path: str
    body: dict
    headers: dict[str, str]
    made: Callable[[], QuerySet]  # every object of the kind the route makes, for this caller
    made_id: Callable[[dict], str]  # the made object's id in the route's answer
    payer: Account | None = None  # the account the money leaves, if any
    debit: Decimal = Decimal("0")  # what leaves it, exactly once


@dataclass
class Callers:
    """Who sends the requests: the payer with its GBP account (100,000.00) and saved
    beneficiary, and a custodian of the same program with two funded clients."""

    payer: SignedIn
    account: Account
    beneficiary: Beneficiary
    custodian: CustodianSetup


@pytest.fixture
def callers(program, payer, account, beneficiary, fx_rates) -> Callers:
    return Callers(payer, account, beneficiary, custodian_with_clients(program))


def _debit(account: Account, amount: str) -> Decimal:
    return Decimal(amount) + Program.objects.get(id=account.program_id).fee_per_payment


def _payment(callers: Callers, key: str) -> Race:
    account, auth = callers.account, callers.payer.access
    return Race(
        path=f"/v1/customers/{account.customer_id}/accounts/{account.id}/payments",
        body={"amount": "10.00", "reference": "Once", "beneficiaryId": str(callers.beneficiary.id)},
        headers={"HTTP_IDEMPOTENCY_KEY": key, **auth},
        made=lambda: PaymentRequest.objects.filter(account=account),
        made_id=lambda data: data["bankTransfer"]["requestId"],
        payer=account,
        debit=_debit(account, "10.00"),
    )


def _international_transfer(callers: Callers, key: str) -> Race:
    account, auth = callers.account, callers.payer.access
    quote = APIClient().get(
        f"/v1/accounts/{account.id}/fx/quote",
        {"currencyOne": "GBP", "currencyTwo": "EUR", "amountCurrency": "GBP", "amount": "100.00"},
        **auth,
    )
    assert quote.status_code == 200, quote.json()
    return Race(
        path=f"/v1/customers/{account.customer_id}/accounts/{account.id}/international-transfers",
        body={
            "quoteId": quote.json()["data"]["quoteId"],
            "beneficiaryId": str(callers.beneficiary.id),
            "reference": "Tuition",
        },
        headers={"HTTP_IDEMPOTENCY_KEY": key, **auth},
        made=lambda: PaymentRequest.objects.filter(account=account),
        made_id=lambda data: data["internationalTransfer"]["requestId"],
        payer=account,
        debit=_debit(account, "100.00"),
    )


def _batch(path: str, user: User, account: Account, key: str) -> Race:
    auth = access_header(user.email, str(user.program_id))
    item = {
        "payer": {
            "account": {"type": "uk", "sortCode": account.sort_code, "accountNumber": account.account_number}
        },
        "payee": {
            "name": "Jane Payee",
            "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
        },
        "reference": "Invoice 1",
        "amount": "10.00",
    }
    initiate = APIClient().post(path, {"action": "initiate", "payments": [item]}, format="json", **auth)
    assert initiate.status_code == 200, initiate.json()
    return Race(
        path=path,
        body={
            "action": "submit",
            "payments": [item],
            "scaChallenge": initiate.json()["data"]["scaChallenge"],
            "confirmation": {"method": "totp", "code": pyotp.TOTP(user.totp_secret).now()},
            BODY_FIELD: key,
        },
        headers=auth,
        made=lambda: Batch.objects.filter(program_id=user.program_id),
        made_id=lambda data: data["batchId"],
        payer=account,
        debit=_debit(account, "10.00"),
    )


def _custodian_batch(callers: Callers, key: str) -> Race:
    return _batch("/v1/batch-payments", callers.custodian.user, callers.custodian.accounts[0], key)


def _customer_batch(callers: Callers, key: str) -> Race:
    account = callers.account
    path = f"/v1/customers/{account.customer_id}/batch-payments"
    return _batch(path, callers.payer.user, account, key)


def _application(callers: Callers, key: str) -> Race:
    user = callers.payer.user
    return Race(
        path="/v1/applications",
        body={"isCompany": False},
        headers={"HTTP_IDEMPOTENCY_KEY": key, **id_header(user.email, str(user.program_id))},
        made=lambda: Application.objects.filter(customer_id=user.customer_id),
        made_id=lambda data: data["application"]["applicationId"],
    )


def _management_header(program_id: uuid.UUID) -> dict[str, str]:
    from bankapi.roles import Role

    user = User.objects.create(
        email=f"manager-{uuid.uuid4().hex[:8]}@example.com", sandbox=True, role=Role.MANAGEMENT
    )
    return id_header(user.email, None)


def _sandbox_customer(callers: Callers, key: str) -> Race:
    program_id = callers.account.program_id
    return Race(
        path=f"/v1/sandbox/customers?programId={program_id}",
        body={"name": "Raced Customer"},
        headers={"HTTP_IDEMPOTENCY_KEY": key, **_management_header(program_id)},
        made=lambda: Customer.objects.filter(program_id=program_id, name="Raced Customer"),
        made_id=lambda data: data["customerId"],
    )


def _test_clock(callers: Callers, key: str) -> Race:
    program_id = callers.account.program_id
    return Race(
        path=f"/v1/sandbox/test-clocks?programId={program_id}",
        body={"frozenTime": timezone.now().isoformat()},
        headers={"HTTP_IDEMPOTENCY_KEY": key, **_management_header(program_id)},
        made=lambda: TestClock.objects.filter(program_id=program_id),
        made_id=lambda data: data["testClockId"],
    )


def _test_clock_advance(callers: Callers, key: str) -> Race:
    program_id = callers.account.program_id
    frozen = timezone.now()
    clock = TestClock.objects.create(program_id=program_id, sandbox=True, frozen_time=frozen)
    to = frozen + timedelta(days=40)
    return Race(
        path=f"/v1/sandbox/test-clocks/{clock.id}/advance?programId={program_id}",
        body={"to": to.isoformat()},
        headers={"HTTP_IDEMPOTENCY_KEY": key, **_management_header(program_id)},
        # What an advance makes is the clock at `to`: there once, however many copies.
        made=lambda: TestClock.objects.filter(id=clock.id, frozen_time=to),
        made_id=lambda data: data["testClockId"],
    )


def _incoming_payment(callers: Callers, key: str) -> Race:
    account = callers.account
    Account.objects.filter(id=account.id).update(iban="GB33BUKB20201555555555")
    management = management_user()
    return Race(
        path=f"/v1/sandbox/incoming-payments?programId={account.program_id}",
        body={
            "creditorIban": "GB33BUKB20201555555555",
            "amount": "25.00",
            "currency": "GBP",
            "debtorName": "Acme",
        },
        headers={"HTTP_IDEMPOTENCY_KEY": key, **management.id},
        made=lambda: IncomingPayment.objects.filter(account=account),
        made_id=lambda data: data["incomingPaymentId"],
        payer=account,
        debit=Decimal("-25.00"),
    )


def _card(callers: Callers) -> Card:
    return card_issue(account=callers.account, name_on_card="PAYER")


def _authorized(callers: Callers, card: Card) -> str:
    answer = APIClient().post(
        f"/v1/sandbox/cards/{card.id}/authorizations",
        {"amount": "30.00", "currency": "GBP", "merchantName": "Shop"},
        format="json",
        **callers.payer.access,
    )
    assert answer.status_code == 200, answer.json()
    return answer.json()["data"]["authorizationId"]


def _card_authorization(callers: Callers, key: str) -> Race:
    card = _card(callers)
    return Race(
        path=f"/v1/sandbox/cards/{card.id}/authorizations",
        body={"amount": "30.00", "currency": "GBP", "merchantName": "Shop"},
        headers={"HTTP_IDEMPOTENCY_KEY": key, **callers.payer.access},
        made=lambda: CardAuthorization.objects.filter(card=card),
        made_id=lambda data: data["authorizationId"],
        payer=callers.account,
    )


def _card_authorization_settled(action: str, status: str, debit: str) -> Callable[[Callers, str], Race]:
    def scenario(callers: Callers, key: str) -> Race:
        authorization_id = _authorized(callers, _card(callers))
        return Race(
            path=f"/v1/sandbox/card-authorizations/{authorization_id}/{action}",
            body={},
            headers={"HTTP_IDEMPOTENCY_KEY": key, **callers.payer.access},
            made=lambda: CardAuthorization.objects.filter(id=authorization_id, status=status),
            made_id=lambda data: data["authorizationId"],
            payer=callers.account,
            debit=Decimal(debit),
        )

    return scenario


def _card_status(action: str, before: str, after: str) -> Callable[[Callers, str], Race]:
    def scenario(callers: Callers, key: str) -> Race:
        card = _card(callers)
        Card.objects.filter(id=card.id).update(status=before)
        return Race(
            path=f"/v1/sandbox/cards/{card.id}/{action}",
            body={},
            headers={"HTTP_IDEMPOTENCY_KEY": key, **callers.payer.access},
            made=lambda: Card.objects.filter(id=card.id, status=after),
            made_id=lambda data: data["cardId"],
        )

    return scenario


# Route (as in the OpenAPI document) -> the scenario of one successful request.
SCENARIOS: dict[str, Callable[[Callers, str], Race]] = {
    "/v1/customers/{customerId}/accounts/{accountId}/payments": _payment,
    "/v1/customers/{customerId}/accounts/{accountId}/international-transfers": _international_transfer,
    "/v1/batch-payments": _custodian_batch,
    "/v1/customers/{customerId}/batch-payments": _customer_batch,
    "/v1/applications": _application,
    "/v1/sandbox/customers": _sandbox_customer,
    "/v1/sandbox/test-clocks": _test_clock,
    "/v1/sandbox/test-clocks/{testClockId}/advance": _test_clock_advance,
    "/v1/sandbox/incoming-payments": _incoming_payment,
    "/v1/sandbox/cards/{cardId}/authorizations": _card_authorization,
    "/v1/sandbox/card-authorizations/{authorizationId}/clear": _card_authorization_settled(
        "clear", "CLEARED", "30.00"
    ),
    "/v1/sandbox/card-authorizations/{authorizationId}/reverse": _card_authorization_settled(
        "reverse", "REVERSED", "0"
    ),
    "/v1/sandbox/cards/{cardId}/freeze": _card_status("freeze", "ACTIVE", "FROZEN"),
    "/v1/sandbox/cards/{cardId}/unfreeze": _card_status("unfreeze", "FROZEN", "ACTIVE"),
}


def _properties(document: dict, schema: Any, seen: frozenset[str] = frozenset()) -> set[str]:
    """Every property name a request schema can carry, through $refs and compositions."""
    if isinstance(schema, list):
        return set().union(*(_properties(document, part, seen) for part in schema))
    if not isinstance(schema, dict):
        return set()
    reference = schema.get("$ref")
    if reference is not None:
        if reference in seen:
            return set()
        target: Any = document
        for part in reference.removeprefix("#/").split("/"):
            target = target[part]
        return _properties(document, target, seen | {reference})
    names = set(schema.get("properties", {}))
    for key in ("properties", "allOf", "oneOf", "anyOf", "items", "additionalProperties"):
        value = schema.get(key)
        parts = list(value.values()) if key == "properties" and isinstance(value, dict) else value
        names |= _properties(document, parts, seen)
    return names


def _routes_taking_a_key() -> set[tuple[str, str]]:
    """(path, METHOD) of every OpenAPI operation with an Idempotency-Key header or an idempotencyKey field."""
    document = openapi_document()
    found = set()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            header = any(
                parameter.get("in") == "header" and parameter.get("name", "").lower() == HEADER.lower()
                for parameter in operation.get("parameters", [])
            )
            contents = operation.get("requestBody", {}).get("content", {}).values()
            field = any(BODY_FIELD in _properties(document, media.get("schema")) for media in contents)
            if header or field:
                found.add((path, method.upper()))
    return found


def test_every_route_that_takes_a_key_declares_itself_idempotent():
    declared = {(route.display, "POST") for route in idempotent_routes()}
    taking = _routes_taking_a_key()

    assert taking, "no route takes an idempotency key: the detection is broken"
    assert taking - declared == set(), "routes that take a key but do not declare idempotency_operation"
    assert declared - taking == set(), "routes declared idempotent whose OpenAPI operation takes no key"
    # The family is what the URL configuration serves, not a list kept by hand.
    served = {route.display for route in all_routes()}
    assert {path for path, _ in declared} <= served


def test_every_idempotent_route_has_a_scenario():
    missing = {route.display for route in idempotent_routes()} - set(SCENARIOS)
    assert not missing, f"idempotent routes without a duplicate race below: {sorted(missing)}"
    assert set(SCENARIOS) <= {route.display for route in idempotent_routes()}, "a scenario names no route"


def _family() -> list[Route]:
    return idempotent_routes()


def _second_factor_failures() -> int:
    rows = LoginThrottle.objects.filter(factor=LoginThrottle.Factor.SECOND_FACTOR)
    return sum(row.failures for row in rows)


@requires_postgres
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("route", _family(), ids=lambda route: route.display)
def test_duplicates_at_once_answer_the_first_answer_or_409_and_act_once(callers, route):
    # Given one successful request of the route, with a key
    if route.display not in SCENARIOS:
        pytest.fail(f"{route.display} is idempotent but has no scenario in SCENARIOS")
    key = str(uuid.uuid4())
    race = SCENARIOS[route.display](callers, key)
    before = race.payer.balance if race.payer else None
    made_before = set(race.made().values_list("id", flat=True))

    # When N copies of it arrive at once
    def send(_):
        response = APIClient().post(race.path, race.body, format="json", **race.headers)
        return response.status_code, response.json(), response.get("Idempotent-Replayed")

    results = run_at_once(DUPLICATES, send)

    # Then it happened once, and every copy answers that or "still in progress"
    made = [row for row in race.made().values_list("id", flat=True) if row not in made_before]
    assert len(made) == 1, results
    originals = [result for result in results if result[0] == 200 and result[2] is None]
    assert len(originals) == 1, results
    for status, answer, replayed in results:
        assert status in (200, 409), answer
        if status == 200:
            assert race.made_id(answer["data"]) == str(made[0])
            assert replayed in (None, "true")
        else:
            assert answer["code"] == "IDEMPOTENCY_KEY_IN_PROGRESS"
    replays = sum(1 for status, _, replayed in results if status == 200 and replayed == "true")
    report_figures(
        f"concurrent duplicates: {route.display}",
        f"{DUPLICATES} copies: 1 first answer, {replays} replays, {DUPLICATES - 1 - replays} x 409",
    )
    record = IdempotencyRecord.objects.get(key=key)
    assert (record.operation, record.state) == (
        route.view_class.idempotency_operation,
        IdempotencyRecord.State.COMPLETED,
    )
    # And the money moved exactly once, and no copy was taken for a wrong code
    if race.payer is not None:
        race.payer.refresh_from_db()
        assert race.payer.balance == before - race.debit
    assert _second_factor_failures() == 0
