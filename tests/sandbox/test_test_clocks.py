"""Test clocks over HTTP: make, read, list, advance; callers, bad input, tenancy."""

import uuid
from datetime import timedelta

import pytest

from bankapi.models import TestClock
from tests.sandbox.helpers import advance, clock_make, management, midnight, z
from tests.support.auth import access_header, id_header


@pytest.fixture
def program(sandbox) -> str:
    return sandbox["consumerProgramId"]


def test_a_clock_is_made_read_and_listed(api, sandbox, program):
    frozen = midnight(-10)
    made = clock_make(api, sandbox, program, frozen, name="Month-end run")
    assert made["name"] == "Month-end run" and made["status"] == "ready"
    assert made["frozenTime"] == z(frozen) and made["createdAt"].endswith("Z")
    read = api.get(
        f"/v1/sandbox/test-clocks/{made['testClockId']}?programId={program}", **management(sandbox)
    )
    assert read.status_code == 200 and read.json()["data"] == made
    second = clock_make(api, sandbox, program, frozen)
    assert second["name"] is None
    listed = api.get(f"/v1/sandbox/test-clocks?programId={program}&limit=1", **management(sandbox))
    page = listed.json()["data"]
    assert [c["testClockId"] for c in page["testClocks"]] == [second["testClockId"]]
    rest = api.get(
        f"/v1/sandbox/test-clocks?programId={program}&nextToken={page['nextToken']}", **management(sandbox)
    )
    assert made["testClockId"] in [c["testClockId"] for c in rest.json()["data"]["testClocks"]]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"frozenTime": "2026-01-01"},
        {"frozenTime": "2026-01-01T00:00:00"},
        {"frozenTime": "2026-02-30T00:00:00Z"},
        {"frozenTime": 12},
        {"frozenTime": "FAR"},
        {"frozenTime": "2026-01-01T00:00:00Z", "name": ""},
        {"frozenTime": "2026-01-01T00:00:00Z", "name": "a\nb"},
        {"frozenTime": "2026-01-01T00:00:00Z", "name": "x" * 71},
        {"frozenTime": "2026-01-01T00:00:00Z", "colour": "red"},
    ],
)
def test_a_bad_clock_body_is_400_and_makes_nothing(api, sandbox, program, body):
    before = TestClock.objects.count()
    answer = api.post(
        f"/v1/sandbox/test-clocks?programId={program}", body, format="json", **management(sandbox)
    )
    assert answer.status_code == 400 and answer.json()["code"] == "VALIDATION_ERROR"
    assert TestClock.objects.count() == before


@pytest.mark.parametrize("days", [367, -367])
def test_frozen_time_within_366_days_of_now(api, sandbox, program, days):
    answer = api.post(
        f"/v1/sandbox/test-clocks?programId={program}",
        {"frozenTime": z(midnight(days))},
        format="json",
        **management(sandbox),
    )
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["field"] == "frozenTime"


def test_callers(api, sandbox, program):
    customer = sandbox["customer"]
    url = f"/v1/sandbox/test-clocks?programId={program}"
    body = {"frozenTime": z(midnight(0))}
    assert api.post(url, body, format="json").status_code == 401
    wrong_kind = api.post(url, body, format="json", **access_header(sandbox["management"]["email"], None))
    assert wrong_kind.status_code == 401
    other_role = api.post(url, body, format="json", **id_header(customer["email"], program))
    assert other_role.status_code == 403 and other_role.json()["code"] == "FORBIDDEN"
    assert api.post("/v1/sandbox/test-clocks", body, format="json", **management(sandbox)).status_code == 400


def test_another_programs_clock_is_404(api, sandbox, program):
    made = clock_make(api, sandbox, program, midnight(0))
    other = sandbox["businessProgramId"]
    for path in (f"/v1/sandbox/test-clocks/{made['testClockId']}", f"/v1/sandbox/test-clocks/{uuid.uuid4()}"):
        answer = api.get(f"{path}?programId={other}", **management(sandbox))
        assert answer.status_code == 404 and answer.json()["code"] == "RESOURCE_NOT_FOUND"
    moved = advance(api, sandbox, other, made["testClockId"], midnight(1))
    assert moved.status_code == 404
    assert (
        api.get(f"/v1/sandbox/test-clocks/not-an-id?programId={program}", **management(sandbox)).status_code
        == 404
    )
    listed = api.get(f"/v1/sandbox/test-clocks?programId={other}", **management(sandbox)).json()["data"]
    assert made["testClockId"] not in [c["testClockId"] for c in listed["testClocks"]]


def test_at_most_the_programs_clocks(api, sandbox, program, settings):
    settings.SANDBOX_CLOCKS_MAX = TestClock.objects.filter(program_id=program).count() + 1
    clock_make(api, sandbox, program, midnight(0))
    answer = api.post(
        f"/v1/sandbox/test-clocks?programId={program}",
        {"frozenTime": z(midnight(0))},
        format="json",
        **management(sandbox),
    )
    assert answer.status_code == 422 and answer.json()["code"] == "LIMIT_EXCEEDED"


def test_a_replay_answers_the_first_clock_and_a_changed_body_is_a_mismatch(api, sandbox, program):
    key = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())}
    url = f"/v1/sandbox/test-clocks?programId={program}"
    body = {"frozenTime": z(midnight(-1)), "name": "Replayed"}
    first = api.post(url, body, format="json", **management(sandbox), **key)
    again = api.post(url, body, format="json", **management(sandbox), **key)
    assert again.status_code == 200 and again.content == first.content
    assert again.headers["Idempotent-Replayed"] == "true"
    assert TestClock.objects.filter(name="Replayed").count() == 1
    other = api.post(url, {**body, "name": "Other"}, format="json", **management(sandbox), **key)
    assert other.status_code == 400 and other.json()["code"] == "IDEMPOTENCY_KEY_MISMATCH"


def test_advance_moves_the_clock_and_checks_to(api, sandbox, program):
    frozen = midnight(-5)
    made = clock_make(api, sandbox, program, frozen)
    clock_id = made["testClockId"]
    for to in (frozen, frozen - timedelta(seconds=1), frozen + timedelta(days=367)):
        refused = advance(api, sandbox, program, clock_id, to)
        assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "to"
    # Real time does not bound it: a year after a clock set in the past is in the future.
    to = frozen + timedelta(days=366)
    moved = advance(api, sandbox, program, clock_id, to)
    assert moved.status_code == 200, moved.content
    assert moved.json()["data"]["frozenTime"] == z(to) and moved.json()["data"]["status"] == "ready"


def test_an_advance_replays_and_is_not_run_twice(api, sandbox, program):
    frozen = midnight(-5)
    clock_id = clock_make(api, sandbox, program, frozen)["testClockId"]
    key = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())}
    first = advance(api, sandbox, program, clock_id, frozen + timedelta(days=2), **key)
    again = advance(api, sandbox, program, clock_id, frozen + timedelta(days=2), **key)
    assert first.status_code == again.status_code == 200 and first.content == again.content
    other = advance(api, sandbox, program, clock_id, frozen + timedelta(days=3), **key)
    assert other.status_code == 400 and other.json()["code"] == "IDEMPOTENCY_KEY_MISMATCH"


def test_an_advancing_clock_refuses_a_second_advance_and_a_dead_one_reads_ready(api, sandbox, program):
    from django.utils import timezone

    frozen = midnight(-5)
    clock_id = clock_make(api, sandbox, program, frozen)["testClockId"]
    TestClock.objects.filter(id=clock_id).update(
        advancing_to=frozen + timedelta(days=1), heartbeat_at=timezone.now()
    )
    read = api.get(f"/v1/sandbox/test-clocks/{clock_id}?programId={program}", **management(sandbox))
    assert read.json()["data"]["status"] == "advancing"
    busy = advance(api, sandbox, program, clock_id, frozen + timedelta(days=2))
    assert busy.status_code == 409 and busy.json()["code"] == "INVALID_STATE"
    # Its process died 91 s ago: ready again at the last moment it fully ran.
    TestClock.objects.filter(id=clock_id).update(heartbeat_at=timezone.now() - timedelta(seconds=91))
    read = api.get(f"/v1/sandbox/test-clocks/{clock_id}?programId={program}", **management(sandbox))
    assert read.json()["data"]["status"] == "ready" and read.json()["data"]["frozenTime"] == z(frozen)
    assert advance(api, sandbox, program, clock_id, frozen + timedelta(days=2)).status_code == 200
