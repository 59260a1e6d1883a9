"""Events are written with the change that causes them, and only then; the events
list keeps to the caller's tenant."""

from datetime import timedelta, timezone
from decimal import Decimal

import pytest
from django.db import transaction

from authn.models import User
from authn.tokens import tokens_issue
from bankapi.models import Account, Customer
from events.models import Event
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.settlement import (
    payment_fail,
    payment_review_approve,
    payment_review_reject,
    payment_settle,
)
from tests.payments.conftest import payments_url
from tests.support.factories import funded_account


def accept(account: Account, amount: str = "10.00"):
    return payment_accept(
        account=account,
        instruction=PaymentInstruction(amount=Decimal(amount), currency=account.currency, reference="Rent"),
    )


def types_of(resource_id) -> list[str]:
    return list(
        Event.objects.filter(resource_id=str(resource_id)).order_by("id").values_list("type", flat=True)
    )


def test_each_payment_lifecycle_change_writes_its_event_and_nothing_else(customer, account):
    settled = accept(account)
    payment_settle(settled)
    failed = accept(account)
    payment_fail(failed, "Returned by the payee's bank")
    held = accept(account, "10000.00")
    payment_review_approve(held)
    rejected = accept(account, "10000.00")
    payment_review_reject(rejected, "Sanctions hit")

    assert types_of(settled.id) == ["payment_request.accepted", "payment_request.settled"]
    assert types_of(failed.id) == ["payment_request.accepted", "payment_request.failed"]
    assert types_of(held.id) == ["payment_request.held", "payment_request.approved"]
    assert types_of(rejected.id) == ["payment_request.held", "payment_request.failed"]
    event = Event.objects.filter(resource_id=str(settled.id), type="payment_request.settled").get()
    assert event.customer_id == customer.id
    assert event.data["requestId"] == str(settled.id)
    assert event.data["status"] == "SETTLED"


def test_a_rolled_back_change_leaves_no_event(account):
    before = Event.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        accept(account)
        raise RuntimeError("the caller's transaction fails after the payment")
    assert Event.objects.count() == before


def test_a_refused_payment_writes_no_event(api, customer_auth, low_account, beneficiary):
    before = Event.objects.count()
    response = api.post(
        payments_url(low_account.customer_id, low_account.id),
        {"amount": "50.00", "reference": "Too much", "beneficiaryId": str(beneficiary.id)},
        format="json",
        **customer_auth,
    )
    assert response.status_code == 422
    assert Event.objects.count() == before


def test_the_events_list_shows_the_callers_own_events_newest_first(api, customer_auth, account):
    first, second = accept(account), accept(account)
    payment_settle(first)

    response = api.get("/v1/events", **customer_auth)

    assert response.status_code == 200
    events = response.json()["data"]["events"]
    assert [(e["type"], e["data"]["requestId"]) for e in events[:3]] == [
        ("payment_request.settled", str(first.id)),
        ("payment_request.accepted", str(second.id)),
        ("payment_request.accepted", str(first.id)),
    ]
    assert set(events[0]) == {"eventId", "type", "createdAt", "sandbox", "data"}
    assert events[0]["sandbox"] is True


def test_filters_by_type_and_created_after(api, customer_auth, account):
    payment_settle(accept(account))
    cutoff = Event.objects.order_by("-id").first().created_at
    later = accept(account)

    by_type = api.get("/v1/events", {"type": "payment_request.settled"}, **customer_auth).json()["data"]
    assert {e["type"] for e in by_type["events"]} == {"payment_request.settled"}

    after = api.get("/v1/events", {"createdAfter": cutoff.isoformat()}, **customer_auth).json()["data"]
    assert [e["data"]["requestId"] for e in after["events"]] == [str(later.id)]


def test_created_after_takes_any_offset_and_the_calendar_edges(api, customer_auth, account):
    payment_settle(accept(account))
    cutoff = Event.objects.order_by("-id").first().created_at
    later = accept(account)

    def listed(created_after: str) -> list[str]:
        response = api.get("/v1/events", {"createdAfter": created_after}, **customer_auth)
        assert response.status_code == 200, response.content
        return [e["data"].get("requestId") for e in response.json()["data"]["events"]]

    # The same instant written with offsets beyond what PostgreSQL takes (+-15:59).
    plus_20 = cutoff.astimezone(timezone(timedelta(hours=20))).isoformat()
    minus_23 = cutoff.astimezone(timezone(-timedelta(hours=23, minutes=59))).isoformat()
    assert listed(plus_20) == listed(minus_23) == [str(later.id)]
    # Out of the calendar once in UTC: everything is after the first, nothing after the last.
    assert str(later.id) in listed("0001-01-01T00:00:00+20:00")
    assert listed("9999-12-31T23:59:59-20:00") == []


@pytest.mark.parametrize(
    "params",
    [
        {"type": "payment_request.exploded"},
        {"createdAfter": "yesterday"},
        {"createdAfter": "2026-02-30T00:00:00Z"},
        {"createdAfter": "2026-01-01T00:00:00"},
        {"limit": "0"},
        {"nextToken": "forged"},
    ],
)
def test_bad_list_parameters_are_400(api, customer_auth, params):
    response = api.get("/v1/events", params, **customer_auth)
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"


def test_pages_follow_each_other_without_gaps_or_repeats(api, customer_auth, account):
    for _ in range(5):
        accept(account)
    seen, token = [], None
    while True:
        params = {"limit": "2", **({"nextToken": token} if token else {})}
        data = api.get("/v1/events", params, **customer_auth).json()["data"]
        seen += [e["eventId"] for e in data["events"]]
        token = data["nextToken"]
        if not token:
            break
    assert len(seen) == len(set(seen)) == Event.objects.filter(customer_id=account.customer_id).count()
    # Five payments accepted: at least their five events, over several pages.
    assert len(seen) >= 5


def test_another_customers_events_are_never_listed_or_redelivered(api, customer2_auth, account):
    event = Event.objects.get(resource_id=str(accept(account).id))
    other = customer2_auth

    listed = api.get("/v1/events", **other).json()["data"]["events"]
    assert str(event.event_id) not in {e["eventId"] for e in listed}
    response = api.post(f"/v1/events/{event.event_id}/redeliver", **other)
    assert response.status_code == 404
    assert response.json()["code"] == "RESOURCE_NOT_FOUND"


def test_management_sees_the_named_programs_events_only(api, management, business, account):
    event = Event.objects.get(resource_id=str(accept(account).id))
    auth = management.id

    own = api.get("/v1/events", {"programId": str(account.program_id)}, **auth).json()["data"]
    other = api.get("/v1/events", {"programId": str(business.program_id)}, **auth).json()["data"]
    missing = api.get("/v1/events", **auth)

    assert str(event.event_id) in {e["eventId"] for e in own["events"]}
    assert str(event.event_id) not in {e["eventId"] for e in other["events"]}
    assert missing.status_code == 400


def test_events_of_the_other_environment_are_invisible(api, customer, account):
    accept(account)
    live = Customer.objects.create(program_id=customer.program_id, sandbox=False, name="Live")
    funded_account(live, "0.00")
    user = User.objects.create(
        email="live-events@example.com", program_id=customer.program_id, sandbox=False, customer=live
    )
    header = {"HTTP_AUTHORIZATION": f"Bearer {tokens_issue(user).access_token}"}

    response = api.get("/v1/events", **header)

    assert response.status_code == 200
    assert response.json()["data"]["events"] == []


def test_wrong_tokens_are_refused(api, customer_id_auth, management, program):
    assert api.get("/v1/events").status_code == 401
    assert api.get("/v1/events", **customer_id_auth).status_code == 401
    response = api.get("/v1/events", {"programId": str(program.id)}, **management.access)
    assert response.status_code == 401


def test_redeliver_of_an_event_with_no_endpoint_queues_nothing(api, customer_auth, account):
    event = Event.objects.get(resource_id=str(accept(account).id))
    response = api.post(f"/v1/events/{event.event_id}/redeliver", **customer_auth)
    assert response.status_code == 200
    assert response.json()["data"] == {"eventId": str(event.event_id), "queued": 0}


def test_programs_other_than_the_callers_are_not_a_way_in(api, business_auth, account):
    accept(account)
    events = api.get("/v1/events", **business_auth).json()["data"]["events"]
    assert not Event.objects.filter(
        event_id__in=[e["eventId"] for e in events], program_id=account.program_id
    )
