"""Test clocks as the kernel sees them: whether a clock is advancing, the
`Sandbox-Clock` header on its customers' answers, and the refusal of their
writes while it advances. The clock's routes and its advance live in `sandbox/`.
"""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import DatabaseError
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils import timezone

from bankapi.clock import clock_now, clock_reading, customer_clock_id
from bankapi.errors import ApiError, ErrorCode
from bankapi.models import TestClock

# An advance that has not beaten for this long has died: its clock reads ready
# again, at the last moment it fully ran, and may be advanced again.
ADVANCE_STALL = timedelta(seconds=90)
HEADER = "Sandbox-Clock"


class ClockStatus:
    READY = "ready"
    ADVANCING = "advancing"


def clock_advancing(clock: TestClock, now: datetime | None = None) -> bool:
    """Whether an advance of the clock is running (its heartbeat is fresh)."""
    if clock.advancing_to is None or clock.heartbeat_at is None:
        return False
    return clock.heartbeat_at > (now or timezone.now()) - ADVANCE_STALL


def clock_status(clock: TestClock) -> str:
    return ClockStatus.ADVANCING if clock_advancing(clock) else ClockStatus.READY


def utc_text(moment: datetime) -> str:
    """A time as the clock's routes answer it: UTC, `Z`."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def clock_still_require(customer_id: UUID | None) -> None:
    """Refuse (409 INVALID_STATE) a write for a customer whose clock is advancing:
    its time is moving, so nothing may move its money or make its objects now,
    whoever asks (its own users, at every route; a management caller, at the
    sandbox's money routes: incoming payments, card authorizations)."""
    clock_id = customer_clock_id(customer_id)
    if clock_id is None:
        return
    clock = TestClock.objects.filter(id=clock_id).first()
    if clock is not None and clock_advancing(clock):
        raise ApiError(
            ErrorCode.INVALID_STATE,
            "This customer's test clock is advancing; retry once it reads ready.",
        )


class SandboxClockMiddleware:
    """Each clock's time is read at most once per request, and every answer to
    a user of a clock's customer carries `Sandbox-Clock`: that clock's time."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        with clock_reading():
            response = self.get_response(request)
            user: Any = getattr(request, "user", None)
            customer_id = getattr(user, "customer_id", None) if user is not None else None
            if customer_id is not None and getattr(user, "sandbox", False):
                try:
                    clock_id = customer_clock_id(customer_id)
                    if clock_id is not None:
                        response[HEADER] = utc_text(clock_now(clock_id))
                except DatabaseError:
                    # The database went away after the answer was made: the answer
                    # stands (a 503 or what the route earned), without the header.
                    pass
        return response


def clock_ready_require(clock: TestClock) -> None:
    """Refuse (409 INVALID_STATE) to attach anything to a clock that is advancing."""
    if clock_advancing(clock):
        raise ApiError(ErrorCode.INVALID_STATE, "This test clock is advancing; retry once it reads ready.")
