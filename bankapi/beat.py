"""The service's periodic work, run by `celery -A bankapi beat` (settings name it
`CELERY_BEAT_SCHEDULE`): each entry a task of its app, by dotted name, and when
it runs (UTC: `CELERY_TIMEZONE`). A new periodic task is one entry here."""

from celery.schedules import crontab

BEAT_SCHEDULE: dict = {
    # Webhook retries and deliveries whose task was lost (a worker killed mid-delivery).
    "sweep-webhook-deliveries": {"task": "events.tasks.deliveries_sweep", "schedule": 30.0},
    # Production payment requests only: sandbox ones settle when integrators say so.
    "settle-pending-payments": {"task": "payments.tasks.settle_pending_payments", "schedule": 60.0},
    # Scheduled payments run at about 02:00 UTC on their day; CELERY_TIMEZONE is UTC.
    "run-scheduled-payments": {
        "task": "payments.tasks.run_scheduled_payments",
        "schedule": crontab(hour=2, minute=0),
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
        "schedule": 300.0,
    },
    # Approvals past their expiry read EXPIRED at once; this marks them so (and writes the event).
    "approvals-expire": {"task": "approvals.tasks.expire_approvals", "schedule": 60.0},
    # A day on: spent and expired initiate challenges go, expired drafts lose their payload.
    "batches-purge-expired-records": {
        "task": "batches.tasks.purge_expired_records",
        "schedule": crontab(hour=3, minute=45),
    },
}
