"""What time it is for a customer's money and objects.

Every read of "now" that concerns a customer's own money and objects (created
and booking times, statement days, the limits day, expiry and "not in the past"
rules, events' times) goes through `customer_now`. A sandbox customer attached to
a test clock lives at that clock's time; everybody else lives at the real time.
Security (tokens, codes, lockouts, budgets), webhook delivery, logs, metrics,
audit and the operations' own bookkeeping (leases, purges, the outbox's age) keep
reading the real clock.

What it costs. A customer is attached to its clock when it is made and never
moves, so which clock a customer has (or that it has none) is immutable and
kept per process: a customer without a clock costs no query after its first
read, and none at all when the request's caller was loaded with its customer
(`customer_clock_known`). A clock's time changes, so it is read from the
database, at most once per request (`clock_reading` holds what was read while a
request runs) or per moment of an advance (`clock_moment`).

The kernel's models stamp their rows through this module (`ClockedDateTimeField`),
so it names the models it reads through the app registry (`apps.get_model`), as a
foreign key names its model, and never imports them.
"""

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any
from uuid import UUID

from django.apps import apps
from django.db import models
from django.utils import timezone

# customer id -> its clock's id, or None: immutable facts, bounded per process.
_CLOCK_OF: dict[UUID, UUID | None] = {}
_CLOCK_OF_KEPT = 100_000

# clock id -> its time, read at most once while a request runs (None: no reading open).
_READ: ContextVar[dict[UUID, datetime] | None] = ContextVar("clock_read", default=None)
# The clock an advance is running and the moment it reads (this process only).
_MOMENT: ContextVar[tuple[UUID, datetime] | None] = ContextVar("clock_moment", default=None)


def _as_uuid(value: UUID | str) -> UUID | None:
    if isinstance(value, UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def customer_clock_known(customer_id: UUID, clock_id: UUID | None) -> None:
    """Record which clock a customer has, read with its row (no query later)."""
    if len(_CLOCK_OF) >= _CLOCK_OF_KEPT:
        _CLOCK_OF.clear()
    _CLOCK_OF[customer_id] = clock_id


def customer_clock_id(customer_id: UUID | str | None) -> UUID | None:
    """The test clock the customer is attached to, or None."""
    if customer_id is None:
        return None
    key = _as_uuid(customer_id)
    if key is None:
        return None
    if key not in _CLOCK_OF:
        Customer = apps.get_model("bankapi", "Customer")
        row = Customer.objects.filter(id=key).values_list("test_clock_id").first()
        if row is None:
            # Not made yet (or never): not remembered, so a customer made later is read then.
            return None
        customer_clock_known(key, row[0])
    return _CLOCK_OF[key]


_CUSTOMER_OF_ACCOUNT: dict[UUID, UUID] = {}


def account_customer_id(account_id: UUID | None) -> UUID | None:
    """The customer an account belongs to (immutable, so kept per process)."""
    if account_id is None:
        return None
    if account_id not in _CUSTOMER_OF_ACCOUNT:
        Account = apps.get_model("bankapi", "Account")
        customer_id = Account.objects.filter(id=account_id).values_list("customer_id", flat=True).first()
        if customer_id is None:
            return None
        if len(_CUSTOMER_OF_ACCOUNT) >= _CLOCK_OF_KEPT:
            _CUSTOMER_OF_ACCOUNT.clear()
        _CUSTOMER_OF_ACCOUNT[account_id] = customer_id
    return _CUSTOMER_OF_ACCOUNT[account_id]


def clock_now(clock_id: UUID) -> datetime:
    """The time a test clock reads: the moment an advance in this process is
    running, else its `frozen_time` (the last moment an advance fully ran)."""
    moment = _MOMENT.get()
    if moment is not None and moment[0] == clock_id:
        return moment[1]
    read = _READ.get()
    if read is not None and clock_id in read:
        return read[clock_id]
    TestClock = apps.get_model("bankapi", "TestClock")
    frozen: datetime | None = (
        TestClock.objects.filter(id=clock_id).values_list("frozen_time", flat=True).first()
    )
    if frozen is None:
        return timezone.now()
    if read is not None:
        read[clock_id] = frozen
    return frozen


def customer_now(customer_id: UUID | str | None) -> datetime:
    """The time for this customer (the real time for a customer without a clock)."""
    clock_id = customer_clock_id(customer_id)
    if clock_id is None:
        return timezone.now()
    return clock_now(clock_id)


def row_now(row: Any) -> datetime:
    """The time for a row about to be written: its customer's (`clock_customer_id()`
    when the model names its customer another way, else its `customer_id`); a
    customer being made reads its own clock; a row of no customer, the real time."""
    clock_id = getattr(row, "test_clock_id", None)
    if clock_id is not None:
        return clock_now(clock_id)
    named = getattr(row, "clock_customer_id", None)
    customer_id = named() if callable(named) else getattr(row, "customer_id", None)
    return customer_now(customer_id)


@contextmanager
def clock_reading() -> Iterator[None]:
    """Within it, each clock's time is read from the database at most once (a request)."""
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


@contextmanager
def clock_moment(clock_id: UUID, moment: datetime) -> Iterator[None]:
    """Within it, the clock reads `moment` in this process (an advance running that moment)."""
    token = _MOMENT.set((clock_id, moment))
    try:
        yield
    finally:
        _MOMENT.reset(token)


class ClockedDateTimeField(models.DateTimeField):
    """`auto_now` / `auto_now_add` at the time of the row's customer
    (`bankapi.clock.row_now`): a test clock's customer's rows are made and
    changed at the clock's time. Stored and migrated as a plain DateTimeField."""

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        if self.auto_now or (self.auto_now_add and add):
            value = row_now(model_instance)
            setattr(model_instance, self.attname, value)
            return value
        return super().pre_save(model_instance, add)

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.DateTimeField", args, kwargs
