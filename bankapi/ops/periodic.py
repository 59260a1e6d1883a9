"""Periodic runs that never overlap themselves, and what the operator sees of them.

Every entry of beat's schedule runs its work through `periodic_run`: the run
first takes the entry's lease (`PeriodicLease`, a database row), and a run that
finds the lease held by a live run does nothing at all. Beat's next tick
therefore never starts a second run beside a slow one, whatever the load.

- A run covers what was due when it started (`Lease.started_at`): it does not
  chase work that arrives while it runs; the next tick takes that.
- A long run beats its heartbeat between chunks (`Lease.beat`). The lease
  expires `LEASE_SECONDS` after the last heartbeat, so the work of a worker
  that died mid-run is taken over by the first tick after that: beat's ticks
  for such work come every `RECOVERY_TICK_SECONDS` or less, so the work is
  taken up within 90 seconds of the death.
- A run whose lease was taken over (its worker froze past the lease's life)
  learns it at its next heartbeat and stops (`LeaseLost`): only one run works
  at a time, even then. The work itself stays safe if two ever did (rows are
  claimed with SKIP LOCKED and every movement is keyed), the lease only keeps
  runs from piling up.
- A success stamps `last_success_at`, which /metrics shows per entry
  (`bankapi_periodic_task_last_success_timestamp_seconds`).

Management commands and the sandbox's runs call the services directly: they
share the row claims (SKIP LOCKED), not the lease.
"""

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from django.db.models import Q
from django.utils import timezone

from bankapi.models import PeriodicLease
from config.beat import LEASE_SECONDS

logger = logging.getLogger(__name__)

T = TypeVar("T")


class LeaseLost(Exception):
    """The run's lease expired and another run took it over: stop now."""


@dataclass
class Lease:
    """A held lease of the periodic task `name`."""

    name: str
    started_at: datetime
    holder: uuid.UUID = field(default_factory=uuid.uuid4)

    def beat(self) -> None:
        """Tell the others this run is alive; raises LeaseLost when it no longer
        holds the lease. Call between chunks of work."""
        mine = PeriodicLease.objects.filter(name=self.name, holder=self.holder)
        if not mine.update(heartbeat_at=timezone.now()):
            raise LeaseLost(f"The lease of {self.name} was taken over by another run")


def lease_take(name: str) -> Lease | None:
    """The lease of `name`, or None while a live run holds it.

    One conditional UPDATE: two runs racing for an expired or free lease both
    run it, and PostgreSQL re-checks the condition on the row the first one
    changed, so the second changes nothing and gets None."""
    now = timezone.now()
    PeriodicLease.objects.get_or_create(name=name)
    lease = Lease(name=name, started_at=now)
    free = Q(holder__isnull=True) | Q(heartbeat_at__lt=now - timedelta(seconds=LEASE_SECONDS))
    taken = PeriodicLease.objects.filter(free, name=name).update(
        holder=lease.holder, started_at=now, heartbeat_at=now
    )
    return lease if taken else None


def lease_release(lease: Lease, *, succeeded: bool) -> None:
    """Give the lease back (if still held), stamping the success."""
    values: dict = {"holder": None}
    if succeeded:
        values["last_success_at"] = timezone.now()
    PeriodicLease.objects.filter(name=lease.name, holder=lease.holder).update(**values)


def periodic_run(name: str, work: Callable[[Lease], T]) -> T | None:
    """Run `work` under the lease of beat's entry `name`; None, doing nothing,
    while another run holds it. `work` gets the lease: its `started_at` bounds
    what the run covers, its `beat` is the heartbeat."""
    lease = lease_take(name)
    if lease is None:
        logger.info("Periodic task %s is already running elsewhere; this run does nothing", name)
        return None
    succeeded = False
    try:
        result = work(lease)
        succeeded = True
        return result
    except LeaseLost:
        logger.warning("Periodic task %s stopped: another run took over its expired lease", name)
        return None
    finally:
        lease_release(lease, succeeded=succeeded)


def periodic_entry_of(task_name: str) -> str | None:
    """The name of beat's entry that runs the task `task_name`, if any."""
    from django.conf import settings

    for entry, spec in settings.CELERY_BEAT_SCHEDULE.items():
        if spec["task"] == task_name:
            return str(entry)
    return None


def periodic_last_successes() -> dict[str, float]:
    """Each beat entry's last success as unix seconds (0 until its first)."""
    from django.conf import settings

    names = sorted(settings.CELERY_BEAT_SCHEDULE)
    stamps = {
        lease.name: lease.last_success_at.timestamp()
        for lease in PeriodicLease.objects.filter(name__in=names, last_success_at__isnull=False)
        if lease.last_success_at is not None
    }
    return {name: stamps.get(name, 0.0) for name in names}
