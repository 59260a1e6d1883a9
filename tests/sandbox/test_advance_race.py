"""Two advances of one clock at once: one runs, the other answers 409
INVALID_STATE (real concurrent sessions: PostgreSQL)."""

import time
from datetime import datetime, timedelta
from uuid import UUID

import pytest
from django.db import connection
from rest_framework.test import APIClient

from bankapi.models import TestClock
from tests.sandbox.helpers import advance, clock_make, midnight
from tests.support.race import run_at_once

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="real concurrent sessions: PostgreSQL only"
)


def slow_sweep(now: datetime, clock_id: UUID | None) -> int:
    """An expiry sweep that takes its time, so the second advance arrives mid-run."""
    time.sleep(0.3)
    return 0


def test_two_advances_at_once_one_runs_the_other_is_409(transactional_db, sandbox, settings):
    settings.SANDBOX_CLOCK_EXPIRY_SWEEPS = [*settings.SANDBOX_CLOCK_EXPIRY_SWEEPS, f"{__name__}.slow_sweep"]
    program = sandbox["consumerProgramId"]
    frozen = midnight(-10)
    clock_id = clock_make(APIClient(), sandbox, program, frozen)["testClockId"]

    def send(index: int):
        answer = advance(APIClient(), sandbox, program, clock_id, frozen + timedelta(days=3 + index))
        return answer.status_code, answer.json()

    results = run_at_once(2, send)
    statuses = sorted(status for status, _ in results)
    assert statuses == [200, 409], results
    refused = next(body for status, body in results if status == 409)
    assert refused["code"] == "INVALID_STATE"
    clock = TestClock.objects.get(id=clock_id)
    assert clock.advancing_to is None and clock.frozen_time in (
        frozen + timedelta(days=3),
        frozen + timedelta(days=4),
    )
