"""The sandbox's customer and clock routes at their edges, over HTTP: a
production token, a caller of the wrong kind, a missing programId, bodies of
the wrong type or size, timestamps at the ends of the calendar, a key reused
across programs, and what a made customer has and has not (its card's name,
no approval policy)."""

import uuid
from datetime import datetime, timedelta

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from bankapi.models import Customer, TestClock
from tests.sandbox.helpers import advance, as_customer, clock_make, customer_make, management, midnight, z
from tests.support.auth import access_header, id_header
from tests.support.factories import SignedIn, UserFactory

ROUTES = ("/v1/sandbox/customers", "/v1/sandbox/test-clocks")


@pytest.fixture
def program(sandbox) -> str:
    return sandbox["consumerProgramId"]


def refused(answer, status: int, code: str) -> None:
    assert answer.status_code == status, answer.content
    assert answer.json()["success"] is False and answer.json()["code"] == code


def test_a_production_token_gets_404_on_every_sandbox_route(api, sandbox, program):
    clock = clock_make(api, sandbox, program, midnight(-1))
    production = SignedIn(UserFactory(program_id=None, role="management", sandbox=False))
    clocks_before, customers_before = TestClock.objects.count(), Customer.objects.count()
    for path in ROUTES:
        answer = api.post(
            f"{path}?programId={program}", {"frozenTime": z(midnight(0))}, format="json", **production.id
        )
        refused(answer, 404, "RESOURCE_NOT_FOUND")
    for path in (f"/v1/sandbox/test-clocks/{clock['testClockId']}", "/v1/sandbox/test-clocks"):
        refused(api.get(f"{path}?programId={program}", **production.id), 404, "RESOURCE_NOT_FOUND")
    moved = api.post(
        f"/v1/sandbox/test-clocks/{clock['testClockId']}/advance?programId={program}",
        {"to": z(midnight(0))},
        format="json",
        **production.id,
    )
    refused(moved, 404, "RESOURCE_NOT_FOUND")
    assert (TestClock.objects.count(), Customer.objects.count()) == (clocks_before, customers_before)
    assert TestClock.objects.get(id=clock["testClockId"]).frozen_time == midnight(-1)


def test_callers_of_the_customers_route(api, sandbox, program):
    wrong_kind = access_header(sandbox["management"]["email"], None)
    url = f"/v1/sandbox/customers?programId={program}"
    refused(api.post(url, {}, format="json", **wrong_kind), 401, "UNAUTHORIZED")
    refused(
        api.post("/v1/sandbox/customers", {}, format="json", **management(sandbox)), 400, "VALIDATION_ERROR"
    )
    # A made customer's access token is of the wrong kind; its id token, another role.
    made = customer_make(api, sandbox, program)
    refused(api.post(url, {}, format="json", **as_customer(made, program)), 401, "UNAUTHORIZED")
    refused(api.post(url, {}, format="json", **id_header(made["email"], program)), 403, "FORBIDDEN")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"to": 5},
        {"to": None},
        {"to": ["2026-01-01T00:00:00Z"]},
        {"to": "2026-01-01"},
        {"to": "2026-01-01T00:00:00"},
        {"to": "9999-12-31T23:59:59-23:59"},
        {"to": "0001-01-01T00:00:00+23:59"},
        {"to": "tomorrow"},
    ],
)
def test_a_bad_advance_body_is_400_naming_to_and_moves_nothing(api, sandbox, program, body):
    frozen = midnight(-5)
    clock = clock_make(api, sandbox, program, frozen)
    answer = api.post(
        f"/v1/sandbox/test-clocks/{clock['testClockId']}/advance?programId={program}",
        body,
        format="json",
        **management(sandbox),
    )
    refused(answer, 400, "VALIDATION_ERROR")
    assert [error["field"] for error in answer.json()["errors"]] == ["to"]
    stored = TestClock.objects.get(id=clock["testClockId"])
    assert stored.frozen_time == frozen and stored.advancing_to is None


@pytest.mark.parametrize(
    "frozen", ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "0001-01-01T00:00:00Z"]
)
def test_a_frozen_time_at_the_ends_of_the_calendar_is_400(api, sandbox, program, frozen):
    before = TestClock.objects.count()
    answer = api.post(
        f"/v1/sandbox/test-clocks?programId={program}",
        {"frozenTime": frozen},
        format="json",
        **management(sandbox),
    )
    refused(answer, 400, "VALIDATION_ERROR")
    assert answer.json()["errors"][0]["field"] == "frozenTime"
    assert TestClock.objects.count() == before


def test_a_frozen_time_with_an_offset_is_answered_in_utc_and_created_at_is_real_time(api, sandbox, program):
    frozen_text = (midnight(-30) + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%S") + "+02:00"
    answer = api.post(
        f"/v1/sandbox/test-clocks?programId={program}",
        {"frozenTime": frozen_text},
        format="json",
        **management(sandbox),
    )
    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert data["frozenTime"] == z(midnight(-30) + timedelta(hours=1))
    created = datetime.fromisoformat(data["createdAt"].replace("Z", "+00:00"))
    assert abs(created - timezone.now()) < timedelta(minutes=5)


def test_an_oversized_body_is_refused_at_the_door(api, sandbox, program):
    clocks, customers = TestClock.objects.count(), Customer.objects.count()
    huge = "x" * (django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    for path in ROUTES:
        answer = api.post(f"{path}?programId={program}", {"name": huge}, format="json", **management(sandbox))
        refused(answer, 413, "PAYLOAD_TOO_LARGE")
    assert (TestClock.objects.count(), Customer.objects.count()) == (clocks, customers)


def test_a_key_reused_in_another_program_is_a_mismatch(api, sandbox):
    key = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())}
    body = {"frozenTime": z(midnight(-1)), "name": "Keyed"}
    first = api.post(
        f"/v1/sandbox/test-clocks?programId={sandbox['consumerProgramId']}",
        body,
        format="json",
        **management(sandbox),
        **key,
    )
    assert first.status_code == 200, first.content
    other = api.post(
        f"/v1/sandbox/test-clocks?programId={sandbox['businessProgramId']}",
        body,
        format="json",
        **management(sandbox),
        **key,
    )
    refused(other, 400, "IDEMPOTENCY_KEY_MISMATCH")
    assert TestClock.objects.filter(name="Keyed").count() == 1


def test_a_long_name_is_cut_on_the_card_and_the_customer_has_no_approval_policy(api, sandbox):
    program = sandbox["businessProgramId"]
    name = "Bartholomew-Maximilian O'Donnell-Featherstonehaugh III of Westmorlands"
    assert len(name) == 70
    made = customer_make(api, sandbox, program, name=name)
    from cards.models import Card

    on_card = Card.objects.get(id=made["cardId"]).name_on_card
    assert on_card == "BARTHOLOMEWMAXIMILIAN ODON" and len(on_card) == 26
    policy = api.get("/v1/approval-policy", **as_customer(made, program))
    assert policy.status_code == 200, policy.content
    assert policy.json()["data"] == {"tiers": [], "expiresAfterHours": 168, "passkeyRequired": True}
    # A payment over the bootstrap's tier (20000.00) is not held: it pays at once.
    paid = api.post(
        f"/v1/customers/{made['customerId']}/accounts/{made['accountId']}/payments",
        {"amount": "20001.00", "currency": "GBP", "reference": "Big", "beneficiaryId": made["beneficiaryId"]},
        format="json",
        **as_customer(made, program),
    )
    assert paid.status_code == 200, paid.content


def test_an_advance_by_the_most_allowed_runs_and_one_second_more_is_400(api, sandbox, program):
    frozen = midnight(-365)
    clock = clock_make(api, sandbox, program, frozen)
    too_far = advance(api, sandbox, program, clock["testClockId"], frozen + timedelta(days=366, seconds=1))
    refused(too_far, 400, "VALIDATION_ERROR")
    moved = advance(api, sandbox, program, clock["testClockId"], frozen + timedelta(days=366))
    assert moved.status_code == 200, moved.content
    assert moved.json()["data"]["frozenTime"] == z(frozen + timedelta(days=366))


def test_an_advance_key_reused_on_another_clock_is_a_mismatch_and_moves_nothing(api, sandbox, program):
    frozen = midnight(-5)
    first, second = (clock_make(api, sandbox, program, frozen)["testClockId"] for _ in range(2))
    key = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())}
    assert advance(api, sandbox, program, first, frozen + timedelta(days=1), **key).status_code == 200
    other = advance(api, sandbox, program, second, frozen + timedelta(days=1), **key)
    refused(other, 400, "IDEMPOTENCY_KEY_MISMATCH")
    assert TestClock.objects.get(id=second).frozen_time == frozen


@pytest.mark.parametrize("token", ["garbage", "eyJub3QiOiJ5b3VycyJ9", "%00"])
def test_a_foreign_or_forged_next_token_is_400_naming_it(api, sandbox, program, token):
    clock_make(api, sandbox, program, midnight(-1))
    clock_make(api, sandbox, program, midnight(-1))
    answer = api.get(f"/v1/sandbox/test-clocks?programId={program}&nextToken={token}", **management(sandbox))
    refused(answer, 400, "VALIDATION_ERROR")
    assert answer.json()["errors"][0]["field"] == "nextToken"
    # A token of another program's list is not good for this one.
    other = sandbox["businessProgramId"]
    clock_make(api, sandbox, other, midnight(-1))
    clock_make(api, sandbox, other, midnight(-1))
    page = api.get(f"/v1/sandbox/test-clocks?programId={other}&limit=1", **management(sandbox)).json()["data"]
    crossed = api.get(
        f"/v1/sandbox/test-clocks?programId={program}&nextToken={page['nextToken']}", **management(sandbox)
    )
    refused(crossed, 400, "VALIDATION_ERROR")
