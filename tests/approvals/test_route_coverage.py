"""One enforcement point: every route that can move money asks the approval gate
before it moves anything, or says why not.

Routes are found from the URL configuration (tests/proof/routes.py), so a route
added later is checked without this test naming it. A route can move money when
its view belongs to an app that moves money, or when its view's code calls a
service that does; each such route must declare `approval_policy`: COVERED, or
exempt with its reason. Each covered route has a test showing its 202.
"""

import inspect
from pathlib import Path

from bankapi.approval_gate import COVERED
from tests.proof.routes import all_routes

ROOT = Path(__file__).resolve().parents[2]

# A DELETE cancels or removes (a schedule, an endpoint); what moves money is a POST or PUT.
WRITES = {"POST", "PUT", "PATCH"}
MONEY_APPS = {"payments", "batches", "approvals"}
# Services that accept, pay, schedule or batch money; a view calling one moves money.
MONEY_CALLS = (
    "payment_submit",
    "payment_accept",
    "international_transfer_submit",
    "batch_submit",
    "batch_create",
    "schedule_create",
    "ledger_",
    "payment_settle",
    "payment_fail",
    "sandbox_clock_run",
    "approval_approve",
)
# Where each covered route's 202 is shown.
PROVEN = {
    "/v1/customers/{customerId}/accounts/{accountId}/payments": (
        "tests/approvals/test_payment_approvals.py::test_over_the_threshold_answers_202_and_moves_nothing",
        "tests/approvals/test_lifecycle.py::test_a_schedule_exists_only_once_approved",
    ),
    "/v1/batch-payments": (
        "tests/approvals/test_batch_approvals.py::test_a_custodian_batch_over_the_threshold_waits_then_pays",
        "tests/approvals/test_batch_approvals.py::test_a_file_draft_held_leaves_the_drafts_list_and_becomes_the_batch",
    ),
    "/v1/customers/{customerId}/batch-payments": (
        "tests/approvals/test_batch_approvals.py::test_the_single_customer_route_takes_the_customers_policy",
    ),
}


def _source(view_class: type) -> str:
    parts = []
    for klass in view_class.__mro__:
        if klass.__module__.split(".")[0] in {
            "payments",
            "batches",
            "approvals",
            "cards",
            "onboarding",
            "events",
            "authn",
        }:
            try:
                parts.append(inspect.getsource(klass))
            except (OSError, TypeError):
                pass
    return "\n".join(parts)


def money_routes():
    for route in all_routes():
        if not WRITES & set(route.methods):
            continue
        app = route.view_class.__module__.split(".")[0]
        if app in MONEY_APPS or any(call in _source(route.view_class) for call in MONEY_CALLS):
            yield route


def test_every_route_that_can_move_money_is_covered_or_exempt_with_a_reason():
    undeclared = [
        route.display
        for route in money_routes()
        if not (
            getattr(route.view_class, "approval_policy", None) == COVERED
            or (
                isinstance(getattr(route.view_class, "approval_policy", None), str)
                and route.view_class.approval_policy.startswith("exempt: ")
                and len(route.view_class.approval_policy) > len("exempt: ") + 5
            )
        )
    ]
    assert undeclared == [], f"Routes that may move money without asking the approval gate: {undeclared}"


def test_the_routes_found_include_every_known_money_route():
    found = {route.display for route in money_routes()}
    assert set(PROVEN) <= found
    assert "/v1/customers/{customerId}/accounts/{accountId}/international-transfers" in found
    assert "/v1/sandbox/payment-requests/{requestId}/settle" in found


def test_each_covered_route_has_a_test_of_its_202():
    covered = {route.display for route in money_routes() if route.view_class.approval_policy == COVERED}
    assert covered == set(PROVEN)
    for tests in PROVEN.values():
        for node in tests:
            path, name = node.split("::")
            assert f"def {name}(" in (ROOT / path).read_text(), node
