"""The service's periodic work, run by `celery -A config beat` (settings name it
`CELERY_BEAT_SCHEDULE`): each entry a task of its app, by dotted name, and when
it runs (UTC: `CELERY_TIMEZONE`). A new periodic task is one entry here.

Each entry's task runs under the entry's lease (`bankapi.ops.periodic`): a tick that
finds the last run still going does nothing. Work that a dead worker's run left
(settlement, the day's schedules) is ticked every `RECOVERY_TICK_SECONDS`, so a
run takes it up soon after the dead one's lease expires."""

from celery.schedules import crontab

# A periodic run's lease expires this long after its last heartbeat (`bankapi.ops.periodic`).
LEASE_SECONDS = 60
# Beat's interval for a periodic task whose unfinished work another worker must
# take up after a death: the lease's life plus this stays under 90 seconds.
RECOVERY_TICK_SECONDS = 20

BEAT_SCHEDULE: dict = {
    # Webhook retries and deliveries whose task was lost (a worker killed mid-delivery).
    "sweep-webhook-deliveries": {"task": "events.tasks.deliveries_sweep", "schedule": 30.0},
    # Production payment requests only: sandbox ones settle when integrators say so.
    "settle-pending-payments": {
        "task": "payments.tasks.settle_pending_payments",
        "schedule": float(RECOVERY_TICK_SECONDS),
    },
    # Scheduled payments run from 02:00 UTC on their day (CELERY_TIMEZONE is UTC):
    # each tick runs the latest day whose 02:00 has passed, which is one read once
    # the day is done, and takes up a day's run that a dead worker left.
    "run-scheduled-payments": {
        "task": "payments.tasks.run_scheduled_payments",
        "schedule": float(RECOVERY_TICK_SECONDS),
    },
    "purge-idempotency-records": {
        "task": "bankapi.tasks.purge_idempotency_records",
        "schedule": crontab(hour=3, minute=30),
    },
    "authn-purge-auth-records": {
        "task": "authn.tasks.purge_auth_records",
        "schedule": crontab(hour=3, minute=30),
    },
    # Yesterday's statement lines of the accounts that booked since midnight (UTC),
    # stored ahead of any statement; hourly, as accounts book through the day.
    "store-statement-days": {
        "task": "payments.tasks.store_statement_days",
        "schedule": crontab(minute=20),
    },
    # Batches and draft verifications a dead worker left unfinished run again.
    "batches-resume-stalled": {"task": "batches.tasks.resume_stalled_batches", "schedule": 60.0},
    # UBO verification e-mails whose task was lost (the broker away, a worker killed).
    "onboarding-resend-lost-ubo-emails": {
        "task": "onboarding.tasks.resend_lost_ubo_emails",
        # Every 30 s: an e-mail unsent 60 s after it was due is sent within 90 s.
        "schedule": 30.0,
    },
    # Approvals past their expiry read EXPIRED at once; this marks them so (and writes the event).
    "approvals-expire": {"task": "approvals.tasks.expire_approvals", "schedule": 60.0},
    # Card authorizations past their expiry read EXPIRED at once; this marks them so,
    # releases their holds and writes the event (well within the hour).
    "cards-expire-authorizations": {"task": "cards.tasks.expire_card_authorizations", "schedule": 600.0},
    # A day on: spent and expired initiate challenges go, expired drafts lose their payload.
    "batches-purge-expired-records": {
        "task": "batches.tasks.purge_expired_records",
        "schedule": crontab(hour=3, minute=45),
    },
}
