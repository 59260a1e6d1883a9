"""Idempotency-Key handling for creates (DESIGN 7).

A key is claimed in its own, committed transaction before any payment work, so a
concurrent request with the same key sees the claim and answers 409. The work
and the completion of the claim (storing the response) commit together: after a
crash either both happened or neither did, which is why a claim left behind for
more than a minute can safely be taken over. A request stopped before acceptance
releases its claim, so the client may retry with the same key.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.models import Customer, Program
from payments.formats import uuid_parse
from payments.models import IdempotencyRecord

STALE_CLAIM = timedelta(seconds=60)
RETENTION = timedelta(days=7)
HEADER = "Idempotency-Key"


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: dict[str, Any]
    replayed: bool = False


def idempotency_key_resolve(
    *, program: Program, header: str | None, body_key: uuid.UUID | None
) -> uuid.UUID | None:
    """The request's key: the header wins over the body field; both must be UUIDs."""
    if header is not None:
        try:
            return uuid_parse(header.strip())
        except ValueError:
            raise validation_error(HEADER, "The Idempotency-Key header must be a UUID.")
    if body_key is None and program.require_idempotency_key:
        raise validation_error(HEADER, "This program requires an Idempotency-Key header (or idempotencyKey).")
    return body_key


def _claim(customer: Customer, key: uuid.UUID, fingerprint: dict) -> IdempotencyRecord | StoredResponse:
    """Claim the key, or return what its earlier use answered. Commits on return."""
    now = timezone.now()
    with transaction.atomic():
        record = None
        while record is None:
            try:
                with transaction.atomic():
                    return IdempotencyRecord.objects.create(
                        customer=customer, key=key, fingerprint=fingerprint, claimed_at=now
                    )
            except IntegrityError:
                # Locked so that two requests finding the same stale claim cannot
                # both take it over. None when the claim we collided with has just
                # been released: try to claim again.
                record = (
                    IdempotencyRecord.objects.select_for_update().filter(customer=customer, key=key).first()
                )
        if record.fingerprint != fingerprint:
            raise ApiError(
                ErrorCode.IDEMPOTENCY_KEY_MISMATCH,
                "This Idempotency-Key was used for a different payment (amount, accountId or beneficiaryId).",
            )
        if record.state == IdempotencyRecord.State.COMPLETED:
            return StoredResponse(status=record.response_status, body=record.response_body, replayed=True)
        if record.claimed_at > now - STALE_CLAIM:
            raise ApiError(
                ErrorCode.IDEMPOTENCY_KEY_IN_PROGRESS,
                "A request with this Idempotency-Key is still being processed; retry shortly.",
            )
        record.claim_token = uuid.uuid4()
        record.claimed_at = now
        record.save(update_fields=["claim_token", "claimed_at"])
        return record


def _complete(record: IdempotencyRecord, response: StoredResponse) -> None:
    completed = IdempotencyRecord.objects.filter(
        id=record.id, claim_token=record.claim_token, state=IdempotencyRecord.State.CLAIMED
    ).update(
        state=IdempotencyRecord.State.COMPLETED, response_status=response.status, response_body=response.body
    )
    if not completed:
        # Our claim went stale and another request took the key over: it pays,
        # we roll back.
        raise ApiError(
            ErrorCode.IDEMPOTENCY_KEY_IN_PROGRESS,
            "A request with this Idempotency-Key is still being processed; retry shortly.",
        )


def _release(record: IdempotencyRecord) -> None:
    IdempotencyRecord.objects.filter(
        id=record.id, claim_token=record.claim_token, state=IdempotencyRecord.State.CLAIMED
    ).delete()


def idempotent_call(
    *,
    customer: Customer,
    key: uuid.UUID | None,
    fingerprint: dict,
    work: Callable[[], StoredResponse],
) -> StoredResponse:
    """Run `work` at most once per (customer, key) and answer what it answered."""
    if key is None:
        with transaction.atomic():
            return work()
    claimed = _claim(customer, key, fingerprint)
    if isinstance(claimed, StoredResponse):
        return claimed
    try:
        with transaction.atomic():
            response = work()
            _complete(claimed, response)
            return response
    except Exception:
        # The work rolled back, so nothing was paid: free the key for a retry.
        _release(claimed)
        raise


def idempotency_records_purge() -> int:
    """Delete keys older than the retention period; returns how many went."""
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=timezone.now() - RETENTION).delete()
    return deleted
