"""One tenant-owned base for every tenant-owned row, one base view for the
account routes, one base for cursor-paginated lists."""

import uuid

from django.apps import apps
from django.db.models import ForeignKey
from django.urls import URLPattern, URLResolver, get_resolver

from bankapi.http.api import AccountScopedView, CursorListView
from bankapi.models import Account, Customer, Program, TenantOwned
from bankapi.scope import Role, Scope
from tests.support.factories import funded_account

# Users are the one exception: staff and management users belong to no program.
NOT_TENANT_OWNED = {"authn.User"}
ACCOUNT_ROUTE = "customers/<str:customerId>/accounts/<str:accountId>"


def routes(patterns=None, prefix=""):
    for pattern in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(pattern, URLResolver):
            yield from routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), getattr(pattern.callback, "view_class", None)


def test_every_model_with_a_program_and_an_environment_derives_from_the_tenant_owned_base():
    tenant_owned = []
    for model in apps.get_models():
        fields = {field.name: field for field in model._meta.get_fields()}
        program = fields.get("program")
        if isinstance(program, ForeignKey) and program.related_model is Program and "sandbox" in fields:
            if model._meta.label not in NOT_TENANT_OWNED:
                tenant_owned.append(model)

    assert {model._meta.label for model in tenant_owned} >= {
        "bankapi.Custodian",
        "bankapi.Customer",
        "bankapi.Account",
        "bankapi.IdempotencyRecord",
        "payments.Beneficiary",
        "payments.PaymentRequest",
        "payments.ScheduledPayment",
        "payments.FxQuote",
        "payments.StatementEntry",
        "payments.SystemAccount",
        "payments.LedgerTransaction",
    }
    assert [m._meta.label for m in tenant_owned if not issubclass(m, TenantOwned)] == []
    for model in tenant_owned:
        names = {field.name for field in model._meta.get_fields()}
        assert {"program", "sandbox", "created_at", "updated_at"} <= names, model


def test_for_scope_returns_the_rows_of_the_callers_program_and_environment_only(customer, account, business):
    mine = customer
    scope = Scope(
        program_id=mine.program_id,
        sandbox=True,
        role=Role.CUSTOMER,
        user_id=uuid.uuid4(),
        customer_id=mine.id,
        custodian_id=None,
    )
    in_production = Customer.objects.create(program=mine.program, sandbox=False, name="Production twin")
    elsewhere = business.customer
    funded_account(elsewhere, "10.00")

    seen = set(Customer.objects.for_scope(scope).values_list("id", flat=True))

    assert mine.id in seen
    assert in_production.id not in seen and elsewhere is not None and elsewhere.id not in seen
    tenants = set(Account.objects.for_scope(scope).values_list("program_id", "sandbox"))
    assert tenants == {(mine.program_id, True)}


def test_every_route_under_an_account_resolves_it_through_the_account_base_view():
    under_account = [(route, view) for route, view in routes() if ACCOUNT_ROUTE in route]

    assert len(under_account) >= 6
    assert [route for route, view in under_account if not issubclass(view, AccountScopedView)] == []


def test_the_account_lists_share_the_cursor_list_base():
    lists = {route.rsplit("/", 1)[-1]: view for route, view in routes() if ACCOUNT_ROUTE in route}

    for name in ("payment-requests", "transactions", "scheduled-payments"):
        assert issubclass(lists[name], CursorListView), name


def test_an_outsiders_account_is_not_found_before_the_body_is_read(api, customer2_account, customer_auth):
    theirs = customer2_account
    url = f"/v1/customers/{theirs.customer_id}/accounts/{theirs.id}/payments"

    response = api.post(url, {"amount": "not money", "unknown": True}, format="json", **customer_auth)

    assert response.status_code == 404
    assert response.json() == {
        "success": False,
        "code": "RESOURCE_NOT_FOUND",
        "message": "Customer not found",
    }
