"""Celery tasks of batch payments: thin wrappers, each safe to run twice."""

from datetime import timedelta

from celery import shared_task

from bankapi.tasks import task_publish
from batches.services.housekeeping import batch_records_purge
from batches.services.processing import batch_process, batches_stalled
from batches.services.verification import draft_verify, drafts_stalled

# Unfinished work untouched this long is taken to be lost (its worker died, or
# its task was never queued: Redis away). A batch being worked shows progress
# far more often: every funding group and every chunk paid touches it (a
# heartbeat), each well under this. With the sweep every minute, a batch whose
# worker died is queued again at most STALLED_AFTER + 60 s after its last
# heartbeat (80 s; another worker takes it up within 90 s), and work sent while
# Redis was away within 80 s of its return. A sweep that races a slow live worker
# costs duplicate work, never a duplicate payment (items are claimed, and paid
# at most once).
STALLED_AFTER = timedelta(seconds=20)


@shared_task
def verify_draft(draft_id: str) -> None:
    draft_verify(draft_id)


@shared_task
def process_batch(batch_id: str) -> None:
    batch_process(batch_id)


@shared_task
def resume_stalled_batches(older_than_seconds: float = STALLED_AFTER.total_seconds()) -> dict:
    """Beat sweep: queue again the drafts and batches a dead worker left unfinished.

    Running a batch or a verification twice is safe, so a sweep that races a
    slow live worker costs only duplicate work, never a duplicate payment.
    """
    older_than = timedelta(seconds=older_than_seconds)
    drafts = drafts_stalled(older_than)
    batches = batches_stalled(older_than)
    for draft_id in drafts:
        task_publish(verify_draft, draft_id)
    for batch_id in batches:
        task_publish(process_batch, batch_id)
    return {"drafts": len(drafts), "batches": len(batches)}


@shared_task
def purge_expired_records() -> dict[str, int]:
    """Daily (CELERY_BEAT_SCHEDULE): spent and expired initiate challenges, and the
    payload of drafts expired unsubmitted, a day on."""
    return batch_records_purge()
