"""ISO 20022 files: a pain.001 becomes a draft as verify makes one; a draft or
batch is reported back as a pain.002.

A file's GrpHdr/MsgId is unique per owner (custodian or customer) and
environment, enforced by the database: of two uploads of one MsgId racing, the
second insert waits for the first and then fails, and answers 409 naming the
draft the first made.
"""

from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from bankapi.errors import ApiError, validation_error
from batches.actors import Actor
from batches.errors import BatchErrorCode
from batches.iso20022.reading import pain001_read
from batches.iso20022.schemas import PAIN002_VERSIONS
from batches.iso20022.status import (
    DEFAULT_VERSION,
    pain002_write,
    status_report_of_batch,
    status_report_of_draft,
)
from batches.models import Batch, Draft
from batches.selectors import batch_items, batch_or_draft
from batches.services.drafts import draft_create


def file_draft_create(*, actor: Actor, body: bytes) -> Draft:
    """The file read, checked and stored as a draft; its items are verified in the background."""
    document = pain001_read(body)
    known = _draft_of_message(actor, document.message_id)
    if known is not None:
        raise _duplicate(document.message_id, known)
    try:
        with transaction.atomic():
            return draft_create(actor=actor, payments=document.payments, document=document)
    except IntegrityError:
        known = _draft_of_message(actor, document.message_id)
        if known is None:
            raise
        raise _duplicate(document.message_id, known) from None


def _draft_of_message(actor: Actor, message_id: str) -> Draft | None:
    return Draft.objects.filter(
        program_id=actor.scope.program_id,
        sandbox=actor.scope.sandbox,
        message_id=message_id,
        **actor.owner_fields(),
    ).first()


def _duplicate(message_id: str, draft: Draft) -> ApiError:
    made = "batch" if draft.submitted_at is not None else "draft"
    return ApiError(
        BatchErrorCode.DUPLICATE_MESSAGE,
        f"A file with MsgId {message_id!r} was already uploaded: it made {made} {draft.id}.",
        batchId=str(draft.id),
    )


def status_report(*, actor: Actor, batch_id: str, version: str | None, now: datetime | None = None) -> bytes:
    """The pain.002 of the caller's batch or draft (404 if it has none of that id)."""
    version = version if version is not None else DEFAULT_VERSION
    if version not in PAIN002_VERSIONS:
        raise validation_error("version", f"Must be one of {', '.join(PAIN002_VERSIONS)}.")
    found = batch_or_draft(actor, batch_id)
    if isinstance(found, Batch):
        report = status_report_of_batch(found, batch_items(found))
    else:
        report = status_report_of_draft(found)
    return pain002_write(report, version=version, created_at=now or timezone.now())
