"""The security matrix: every route of the URL configuration, every method, every
kind of caller that must not get in (tenancy and tokens).

Routes are found by walking Django's resolver, so a route added later is in the
matrix without anyone naming it. A route the matrix cannot call fails the test:
an unknown path parameter (add its value to `_objects`), or a route open to
anyone that is not listed in `PUBLIC` or `OPTIONAL_BEARER` with the reason.

Expected, for a route that takes a bearer:
- no token, garbage, an unsigned (alg=none) token, an expired one, one issued
  before a global logout, a refresh token, a token of the other use (id where
  access is due and the reverse): 401 UNAUTHORIZED;
- a valid token of another customer (or custodian), of another program (with and
  without a forged `x-program-id`), of the other environment: 404 when the path
  names the victim's objects; on a route naming none, whatever the caller's own
  scope answers;
- the victim's own token (the control): past authentication and tenancy, so the
  404s above are not an artefact of a wrong URL.
Every answer of every outsider is free of the victim's identifiers and values.
Public routes answer the same whatever bearer is sent (it is never read).
Bodies are `{}`: a route resolves what its path names before reading the body.
"""

import json
from collections import defaultdict

import pytest
from rest_framework.permissions import AllowAny
from rest_framework.test import APIClient

from authn.authentication import BearerAuthentication
from authn.models import User
from authn.tokens import ACCESS, ID
from bankapi.http.permissions import TokenRequired
from bankapi.models import Account, Customer
from bankapi.roles import Role
from cards.services import card_issue
from events.models import EventType, WebhookEndpoint
from events.recording import event_record
from onboarding.models import LegalDocument
from tests.batches.conftest import payment
from tests.batches.helpers import batch_submitted
from tests.payments.conftest import payments_url
from tests.proof.cast import (
    OUTSIDERS,
    UNAUTHENTICATED,
    VARIANTS,
    custodian_principal,
    customer_principal,
    management_principal,
)
from tests.proof.conftest import report_figures
from tests.proof.routes import all_routes, has_admin

# Routes anyone may call: no bearer is read, so every variant answers alike.
PUBLIC = {
    "": "the root address: links to the API description, Swagger UI and the back office",
    "healthz": "liveness probe",
    "readyz": "readiness probe",
    "metrics": "Prometheus scrape: open in development; a deployment takes METRICS_TOKEN, not a user token",
    ".well-known/jwks.json": "public keys that verify our tokens",
    "v1/openapi.json": "the API description",
    "v1/docs": "Swagger UI over the API description",
    "v1/auth/login": "sign-in starts without a token",
    "v1/auth/verify-2fa": "the session_token in the body is the credential",
    "v1/auth/verify-email": "the session_token in the body is the credential",
    "v1/auth/mfa/verify-setup": "the session_token in the body is the credential",
    "v1/auth/verify-passkey": "the session_token in the body is the credential",
    "v1/auth/refresh": "the refresh token in the body is the credential",
    "v1/documents/local": "a presigned document URL: its signature is the credential",
    "v1/ubo-verification/<str:token>": "a UBO's e-mailed verification link: its signature is the credential",
    "v1/sandbox/ubo-verification/<str:token>": "the sandbox provider's hosted UBO page: signed like the link",
}
# Routes whose bearer is optional (the body may carry the proof instead); a bearer
# sent must be a valid token of this use.
OPTIONAL_BEARER = {
    "v1/auth/change-password": ACCESS,
    "v1/auth/mfa/setup": ID,
    "v1/auth/passkey/register/start": ID,
    "v1/auth/passkey/register/complete": ID,
}
NOT_FOUND_CODES = {"RESOURCE_NOT_FOUND", "CARD_NOT_FOUND"}
ROLE_ORDER = (Role.CUSTOMER, Role.CUSTODIAN, Role.MANAGEMENT)


def _objects(api, principal_auth: dict, customer_id: str, account_id: str) -> dict[str, str]:
    """The victim's resources that path parameters name, made through the API."""
    url = payments_url(customer_id, account_id)
    payee = {
        "name": "Matrix Payee",
        "account": {"type": "uk", "sortCode": "040004", "accountNumber": "12345678"},
    }
    body = {"amount": "1.00", "reference": "Matrix", "payee": payee}
    paid = api.post(url, body, format="json", **principal_auth)
    assert paid.status_code == 200, paid.json()
    scheduled = api.post(
        url,
        body | {"scheduledDate": "2099-01-01", "frequency": "MONTHLY"},
        format="json",
        **principal_auth,
    )
    assert scheduled.status_code == 200, scheduled.json()
    return {
        "requestId": paid.json()["data"]["bankTransfer"]["requestId"],
        "scheduleId": scheduled.json()["data"]["bankTransfer"]["scheduleId"],
    }


def _event_and_endpoint(customer_id: str, custodian_id: str | None) -> dict[str, str]:
    """An event the victim may see and a webhook endpoint of its program."""
    customer = Customer.objects.get(id=customer_id)
    event = event_record(
        type=EventType.PAYMENT_REQUEST_ACCEPTED,
        program_id=customer.program_id,
        sandbox=customer.sandbox,
        customer_id=None if custodian_id else customer.id,
        custodian_id=custodian_id,
        resource_type="payment_request",
        resource_id="matrix",
        data={"requestId": "matrix"},
    )
    endpoint = WebhookEndpoint.objects.create(
        program_id=customer.program_id,
        sandbox=customer.sandbox,
        url="https://hooks.example.com/m",
        secret="whsec_",
    )
    return {"eventId": str(event.event_id), "endpointId": str(endpoint.id)}


def _approval(user: User) -> dict[str, str]:
    """A pending approval of the victim's customer (or custodian), initiated by
    another of its users (so the victim's own calls pass the initiator rule)."""
    from datetime import timedelta

    from django.utils import timezone

    from approvals.models import Approval
    from tests.support.factories import UserFactory

    initiator = UserFactory(
        program_id=user.program_id, role=user.role, customer=user.customer, custodian=user.custodian
    )
    approval = Approval.objects.create(
        program_id=user.program_id,
        sandbox=user.sandbox,
        kind=Approval.Kind.PAYMENT,
        customer=None if user.custodian_id else user.customer,
        custodian=user.custodian,
        initiator=initiator,
        required=1,
        passkey_required=False,
        content={"kind": "payment"},
        content_hash="0" * 64,
        replay={},
        expires_at=timezone.now() + timedelta(hours=1),
    )
    return {"approvalId": str(approval.id)}


def _test_clock(world) -> str:
    """A test clock of the victim's program (the sandbox's world routes are management's)."""
    from django.utils import timezone

    from bankapi.models import TestClock

    return str(TestClock.objects.create(program=world.consumer, sandbox=True, frozen_time=timezone.now()).id)


def _money_in_and_card_spend(account: Account, card_id: str, iban: str) -> dict[str, str]:
    """An incoming payment to the victim's account and an authorization of its card."""
    from decimal import Decimal

    from cards.authorizations import AuthorizationOrder, card_authorize
    from cards.models import Card
    from payments.incoming import IncomingOrder, incoming_payment_receive

    Account.objects.filter(id=account.id).update(iban=iban)
    incoming = incoming_payment_receive(
        program=account.program,
        sandbox=account.sandbox,
        order=IncomingOrder(creditor_iban=iban, amount=Decimal("5.00"), currency="GBP", debtor_name="Matrix"),
    )
    authorization = card_authorize(
        card=Card.objects.select_related("account", "program").get(id=card_id),
        order=AuthorizationOrder(amount=Decimal("1.00"), currency="GBP", merchant_name="Matrix Shop"),
    )
    return {"incomingPaymentId": str(incoming.id), "authorizationId": str(authorization.id)}


def _batch(user: User, account: Account) -> str:
    """A submitted batch of the victim (made by the service: a submit needs a step-up)."""
    return str(batch_submitted(user, [payment(account, "1.00")]).id)


@pytest.fixture
def principals(api, world):
    me = world.customer_ids
    customer_objects = _objects(api, world.customer.access, me["customerId"], me["accountId"]) | {
        key: value for key, value in me.items() if key != "customerId"
    }
    # A signed link names no object of the victim's: a made-up token (refused, 403, for everyone).
    customer_objects["token"] = "not-a-signed-token"
    customer_objects |= _event_and_endpoint(me["customerId"], None)
    customer_objects["documentId"] = str(
        LegalDocument.objects.get(
            document_set__program=world.consumer, document_set__is_current=True, key="terms"
        ).id
    )
    customer_objects["batchId"] = _batch(world.customer.user, world.account)
    customer_objects |= _approval(world.customer.user)
    customer_objects["testClockId"] = _test_clock(world)
    customer_objects |= _money_in_and_card_spend(world.account, me["cardId"], "GB29NWBK60161331926819")
    custodian = world.custodian
    custodian_account = custodian.accounts[0]
    custodian_objects = _objects(
        api, custodian.person.access, str(custodian_account.customer_id), str(custodian_account.id)
    ) | _event_and_endpoint(str(custodian_account.customer_id), str(custodian.custodian.id))
    custodian_objects["cardId"] = str(card_issue(account=custodian_account, name_on_card="Matrix Card").id)
    custodian_objects["batchId"] = _batch(custodian.user, custodian_account)
    custodian_objects |= _approval(custodian.user)
    custodian_objects |= _money_in_and_card_spend(
        custodian_account, custodian_objects["cardId"], "GB94BARC10201530093459"
    )
    customer = customer_principal(world, customer_objects)
    return {
        Role.CUSTOMER: customer,
        Role.CUSTODIAN: custodian_principal(world, custodian_objects),
        Role.MANAGEMENT: management_principal(world, customer_objects, customer.secrets),
    }


def _kind(route) -> str:
    view = route.view_class
    permissions = list(getattr(view, "permission_classes", []))
    if TokenRequired in permissions:
        assert route.pattern not in PUBLIC | OPTIONAL_BEARER, f"{route.pattern} is listed as open but is not"
        return "bearer"
    assert permissions == [AllowAny], f"{route.pattern}: unknown permission classes {permissions}"
    if route.pattern in OPTIONAL_BEARER:
        assert BearerAuthentication in view.authentication_classes, route.pattern
        return "optional"
    assert route.pattern in PUBLIC, (
        f"{route.pattern} answers without a token but is not in PUBLIC: list it with the reason, "
        "or protect it with TokenRequired"
    )
    return "public"


def _cases(routes, principals):
    """(route, method, principal, token use) for every way the matrix calls a route."""
    for route in routes:
        kind = _kind(route)
        for method in route.methods:
            if kind == "public":
                yield route, method, kind, principals[Role.CUSTOMER], ACCESS
            elif kind == "optional":
                yield route, method, kind, principals[Role.CUSTOMER], OPTIONAL_BEARER[route.pattern]
            else:
                view = route.view_class
                # A view whose roles differ per method (batches: management reads, never posts).
                roles = view.roles_for(method) if hasattr(view, "roles_for") else view.roles
                for role in ROLE_ORDER:
                    if role in roles:
                        use = route.view_class().required_token_use({"role": role})
                        yield route, method, kind, principals[role], use


def _call(client: APIClient, method: str, path: str, query: dict, headers: dict):
    if method in ("POST", "PUT", "PATCH", "DELETE"):
        suffix = "?" + "&".join(f"{key}={value}" for key, value in query.items()) if query else ""
        return client.generic(method, path + suffix, json.dumps({}), "application/json", **headers)
    return getattr(client, method.lower())(path, query, **headers)


def _leaks(response, secrets: set[str]) -> list[str]:
    body = response.content.decode(errors="replace")
    return sorted(secret for secret in secrets if secret and secret in body)


def _expect(kind: str, variant: str, route, response) -> str | None:
    """What is wrong with this answer, or None."""
    status = response.status_code
    if status >= 500:
        return f"server error {status}"
    if kind == "public":
        return None  # compared with the no-token answer by the caller
    if kind == "optional" and variant == "none":
        return None  # no bearer: the body's proof decides
    if variant in UNAUTHENTICATED:
        if status != 401 or response.json().get("code") != "UNAUTHORIZED":
            return f"expected 401 UNAUTHORIZED, got {status} {response.content[:120]!r}"
        return None
    if variant == "own":
        if status in (401, 403, 404):
            return f"the victim's own token was refused: {status} {response.content[:160]!r}"
        return None
    if kind == "bearer" and route.parameters:
        if status != 404 or response.json().get("code") not in NOT_FOUND_CODES:
            return f"expected 404, got {status} {response.content[:120]!r}"
    return None


def test_every_route_refuses_every_caller_it_must_and_leaks_nothing(api, principals):
    routes = all_routes()
    cases = list(_cases(routes, principals))
    table: dict[str, dict[str, str]] = defaultdict(dict)
    failures: list[str] = []
    # Outsiders first, the controls last: a control may change its object (cancel
    # a schedule, settle a request), which an outsider's 404 must not depend on.
    # Among the controls, removals go last: a control DELETE must not take away
    # what another route's control still names.
    cases.sort(key=lambda case: case[1] == "DELETE")
    for stage in (VARIANTS[:-1], ("own",)):
        for route, method, kind, principal, use in cases:
            missing = [name for name in route.parameters if name not in principal.path_values]
            assert not missing, (
                f"The matrix does not know how to call {method} /{route.pattern} as {principal.role}: "
                f"no value for {missing}. Add the victim's object to tests/proof/test_security_matrix.py."
            )
            path = route.path(principal.path_values)
            caller = "public" if kind == "public" else f"{principal.role}/{use}"
            row = f"{method:6} {route.display} [{caller}]"
            baseline = None
            for variant in stage:
                headers = principal.headers[use].get(variant)
                if headers is None:
                    table[row][variant] = "n/a"
                    continue
                if kind == "optional" and variant == "own":
                    # The auth routes name the program in a header: the victim's own.
                    headers = headers | {"HTTP_X_PROGRAM_ID": principal.program_id}
                response = _call(
                    APIClient(raise_request_exception=False), method, path, principal.query, headers
                )
                table[row][variant] = str(response.status_code)
                problem = _expect(kind, variant, route, response)
                if kind == "public":
                    baseline = baseline or response.status_code
                    if response.status_code != baseline and problem is None:
                        problem = (
                            f"a public route answered {response.status_code}, {baseline} without a token"
                        )
                leaked = _leaks(response, principal.secrets) if variant != "own" else []
                if leaked:
                    problem = f"leaked {leaked}"
                if problem:
                    failures.append(f"{row} {variant}: {problem}")
    if has_admin():
        row = "GET    /admin/ (every admin page: staff session only)"
        for variant in VARIANTS:
            headers = principals[Role.MANAGEMENT].headers[ACCESS].get(variant, {})
            response = APIClient(raise_request_exception=False).get("/admin/", **headers)
            table[row][variant] = str(response.status_code)
            if response.status_code != 302 or "/admin/login/" not in response["Location"]:
                failures.append(f"{row} {variant}: a bearer opened admin ({response.status_code})")
    _print(table)
    assert not failures, "\n".join(failures)
    # The matrix covered every route and method the resolver knows.
    assert {row.split(" [")[0] for row in table} >= {
        f"{method:6} {route.display}" for route in routes for method in route.methods
    }


def _print(table: dict[str, dict[str, str]]) -> None:
    width = max(len(row) for row in table)
    columns = [variant for variant in VARIANTS if variant in {v for cells in table.values() for v in cells}]
    header = f"{'route [victim role/token]':{width}} " + " ".join(f"{column[:10]:>10}" for column in columns)
    lines = [header]
    for row, cells in table.items():
        lines.append(f"{row:{width}} " + " ".join(f"{cells.get(column, ''):>10}" for column in columns))
    routes = len({row.split(" [")[0] for row in table})
    calls = sum(1 for cells in table.values() for value in cells.values() if value != "n/a")
    lines.append(
        f"{routes} route-methods, {len(table)} rows, {calls} requests; columns: {', '.join(columns)}"
    )
    report_figures("security matrix (HTTP status per route and caller)", "\n".join(lines))


@pytest.mark.parametrize("variant", OUTSIDERS)
def test_the_matrix_outsiders_are_real_users_with_working_tokens(api, principals, variant):
    """Guard against a vacuous matrix: every outsider's token is accepted on its own
    capabilities, so the 404s above come from tenancy, not from a broken token."""
    for principal in (principals[Role.CUSTOMER], principals[Role.CUSTODIAN]):
        response = api.get("/v1/capabilities", **principal.headers[ACCESS][variant])
        assert response.status_code == 200, (principal.role, variant, response.json())
        assert not _leaks(response, principal.secrets)
