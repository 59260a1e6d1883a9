"""The operations' own times are real time whatever a customer's test clock
reads: a clock customer's unfinished batch is seen stalled, its unfanned event
counted and swept, its unverified draft re-queued and its expired draft purged
exactly as a real customer's would be, however far its clock is from now."""

from datetime import timedelta
from decimal import Decimal

import pyotp
import pytest
import time_machine
from django.utils import timezone

from batches.models import Batch, Draft
from batches.services.housekeeping import batch_records_purge
from batches.services.processing import batches_stalled
from batches.services.verification import drafts_stalled
from batches.tasks import STALLED_AFTER
from events.delivery import FAN_OUT_GRACE, outbox_fan_out
from events.models import Event
from events.selectors import outbox_oldest_pending_seconds
from tests.sandbox.helpers import account_url, advance, as_customer, clock_make, customer_make, midnight
from tests.sandbox.test_clock_world import batch_item, pay

# A clock this far from now, either way (and a customer without one).
OFFSETS = [-300, 300, None]
IDS = ["clock a year behind", "clock a year ahead", "no clock"]


@pytest.fixture
def program(sandbox) -> str:
    return sandbox["consumerProgramId"]


def made_at(api, sandbox, program, days: int | None) -> tuple[dict, dict | None]:
    if days is None:
        return customer_make(api, sandbox, program), None
    clock = clock_make(api, sandbox, program, midnight(days))
    return customer_make(api, sandbox, program, clock["testClockId"]), clock


def batch_submit(api, made: dict, program: str, body: dict) -> dict:
    """Initiate and submit over HTTP as the customer's user. The test's
    transaction never commits, so no worker takes the batch: as if one died."""
    url = f"/v1/customers/{made['customerId']}/batch-payments"
    headers = as_customer(made, program)
    initiated = api.post(url, {"action": "initiate", **body}, format="json", **headers)
    assert initiated.status_code == 200, initiated.content
    confirmation = {"method": "totp", "code": pyotp.TOTP(made["totpSecret"]).now()}
    submitted = api.post(
        url,
        {
            "action": "submit",
            **body,
            "scaChallenge": initiated.json()["data"]["scaChallenge"],
            "confirmation": confirmation,
        },
        format="json",
        **headers,
    )
    assert submitted.status_code == 200, submitted.content
    return submitted.json()


def draft_verify(api, made: dict, program: str) -> str:
    verified = api.post(
        f"/v1/customers/{made['customerId']}/batch-payments",
        {"action": "verify", "payments": [batch_item(made)]},
        format="json",
        **as_customer(made, program),
    )
    assert verified.status_code == 200, verified.content
    return verified.json()["requestId"]


@pytest.mark.parametrize("days", OFFSETS, ids=IDS)
def test_an_unfinished_batch_is_stalled_after_the_same_real_time(api, sandbox, program, days):
    made, _ = made_at(api, sandbox, program, days)
    written = timezone.now()
    with time_machine.travel(written, tick=False):
        batch_submit(api, made, program, {"payments": [batch_item(made)]})
    batch = Batch.objects.get(owner_customer_id=made["customerId"])
    assert batch.status == "CREATED"
    with time_machine.travel(written + STALLED_AFTER - timedelta(seconds=1), tick=False):
        assert str(batch.id) not in batches_stalled(STALLED_AFTER)
    with time_machine.travel(written + STALLED_AFTER + timedelta(seconds=1), tick=False):
        assert str(batch.id) in batches_stalled(STALLED_AFTER)
    if days is not None:
        # What the customer sees stays its clock's time.
        assert batch.created_at.date() == midnight(days).date()


@pytest.mark.parametrize("days", OFFSETS, ids=IDS)
def test_an_unfanned_event_ages_and_is_swept_in_real_time(api, sandbox, program, days):
    made, _ = made_at(api, sandbox, program, days)
    Event.objects.update(fanned_out=True)
    assert outbox_oldest_pending_seconds() == 0
    written = timezone.now()
    with time_machine.travel(written, tick=False):
        paid = pay(api, made, program)
        assert paid.status_code == 200, paid.content
    # Not fanned out: the test's transaction never commits, so its task never ran.
    event = Event.objects.get(fanned_out=False, customer_id=made["customerId"])
    if days is not None:
        assert event.created_at.date() == midnight(days).date()
    with time_machine.travel(written + timedelta(minutes=10), tick=False):
        assert outbox_oldest_pending_seconds() == 600
    with time_machine.travel(written + FAN_OUT_GRACE - timedelta(seconds=1), tick=False):
        assert outbox_fan_out(10, created_before=timezone.now() - FAN_OUT_GRACE)[0] == 0
    with time_machine.travel(written + FAN_OUT_GRACE + timedelta(seconds=1), tick=False):
        assert outbox_fan_out(10, created_before=timezone.now() - FAN_OUT_GRACE)[0] == 1
    assert Event.objects.get(id=event.id).fanned_out


@pytest.mark.parametrize("days", OFFSETS, ids=IDS)
def test_an_unverified_draft_is_queued_again_after_the_same_real_time(api, sandbox, program, days):
    made, _ = made_at(api, sandbox, program, days)
    written = timezone.now()
    with time_machine.travel(written, tick=False):
        draft_id = draft_verify(api, made, program)
    assert Draft.objects.get(id=draft_id).verified_at is None
    with time_machine.travel(written + timedelta(seconds=59), tick=False):
        assert draft_id not in drafts_stalled(timedelta(seconds=60))
    with time_machine.travel(written + timedelta(seconds=61), tick=False):
        assert draft_id in drafts_stalled(timedelta(seconds=60))


def test_a_live_draft_of_a_clock_far_behind_keeps_its_payload_until_it_expired_by_its_clock(
    api, sandbox, program
):
    made, clock = made_at(api, sandbox, program, -300)
    assert clock is not None
    draft_id = draft_verify(api, made, program)
    url = f"/v1/customers/{made['customerId']}/batch-payments/{draft_id}"
    # A year of real time after its clock's expiry, but the clock has not got there: still a draft.
    assert batch_records_purge()["draftPayloads"] == 0
    assert Draft.objects.get(id=draft_id).payments
    assert api.get(url, **as_customer(made, program)).json()["data"]["draft"]["status"] == "DRAFT"
    frozen = midnight(-300)
    assert advance(api, sandbox, program, clock["testClockId"], frozen + timedelta(days=1)).status_code == 200
    # Expired by its clock, but not yet a day of its clock's time ago.
    assert batch_records_purge()["draftPayloads"] == 0
    assert advance(api, sandbox, program, clock["testClockId"], frozen + timedelta(days=3)).status_code == 200
    # A day of its clock's time after expiry, but written less than a day of real time ago.
    assert batch_records_purge()["draftPayloads"] == 0
    with time_machine.travel(timezone.now() + timedelta(days=1, seconds=1), tick=False):
        assert batch_records_purge()["draftPayloads"] == 1
    assert Draft.objects.get(id=draft_id).payments == []


def test_a_real_customers_draft_is_purged_a_day_after_it_expires(api, sandbox, program):
    made, _ = made_at(api, sandbox, program, None)
    draft_id = draft_verify(api, made, program)
    expires = Draft.objects.get(id=draft_id).expires_at
    assert batch_records_purge(expires + timedelta(days=1) - timedelta(seconds=1))["draftPayloads"] == 0
    assert batch_records_purge(expires + timedelta(days=1))["draftPayloads"] == 1
    assert Decimal(
        api.get(f"{account_url(made)}/balances", **as_customer(made, program)).json()["data"]["balance"]
    ) == Decimal("100000.00")
