"""passkey-challenge and submit: the step-up that turns payments into a batch.

submit checks, in this order (a refused submit changes nothing and keeps its
scaChallenge usable until it expires):
1. a remembered idempotencyKey: the first answer again (done by the view, before
   the body is even read: the first submit's confirmation is already spent);
2. the body's shape: 400;
   then the idempotencyKey is claimed: a duplicate of a submit still in flight
   answers 409 IDEMPOTENCY_KEY_IN_PROGRESS, one of a submit just finished the
   first answer, before 3-6, so a duplicate never spends or counts the
   confirmation it carries (the first submit's);
3. the scaChallenge: unknown, used, expired, or for other payments: 400;
4. the draft named by batchId: 404, or 422 DRAFT_EXPIRED;
5. the confirmation method the program offers: 422 NOT_SUPPORTED;
6. the confirmation itself: 401 INVALID_CREDENTIALS (429 while locked).
Then, in one transaction, the challenge (and draft) are consumed and the batch
created (or, when the caller's approval policy holds the submit, an approval
that makes the batch once approved: 202); only that success is remembered under
the idempotencyKey (a refusal releases it).
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from authn.models import User
from authn.services.stepup import Confirmation, PasskeyStepUp, step_up_confirm, step_up_passkey_challenge
from bankapi.approval_gate import approval_hold
from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.idempotency import (
    Fingerprint,
    StoredResponse,
    idempotency_owner_of,
    idempotent_checked_call,
    idempotent_replay,
)
from bankapi.models import Program
from batches.actors import Actor
from batches.approval_content import batch_hold
from batches.models import Batch, Draft, ScaChallenge
from batches.rules import payments_hash
from batches.sent import SentPayment
from batches.services.challenges import (
    STEP_UP_PURPOSE,
    draft_for_submit,
    payments_checked,
    sca_challenge_live,
)
from batches.services.creation import batch_create

OPERATION = "batches.submit"


def batch_passkey_challenge(*, actor: Actor, user: User, challenge_id: uuid.UUID | None) -> PasskeyStepUp:
    """A single-use passkey session bound to the caller's live scaChallenge."""
    challenge = sca_challenge_live(actor=actor, user=user, challenge_id=challenge_id)
    return step_up_passkey_challenge(user=user, purpose=STEP_UP_PURPOSE, bound_to=str(challenge.id))


def batch_submit_replay(*, actor: Actor, key: uuid.UUID | None) -> StoredResponse | None:
    """The answer of an earlier successful submit with this key, if any."""
    if key is None:
        return None
    owner_kind, owner_id = idempotency_owner_of(actor.scope)
    return idempotent_replay(
        program=Program.objects.get(id=actor.scope.program_id),
        sandbox=actor.scope.sandbox,
        owner_kind=owner_kind,
        owner_id=owner_id,
        operation=OPERATION,
        key=key,
    )


@dataclass(frozen=True)
class _Confirmed:
    """What a submit's checks found: its live challenge and the draft it names."""

    challenge: ScaChallenge
    draft: Draft | None


def batch_submit(
    *,
    actor: Actor,
    user: User,
    payments: list[SentPayment],
    challenge_id: uuid.UUID | None,
    confirmation: Confirmation,
    draft_id: str | None,
    idempotency_key: uuid.UUID | None,
    present: Callable[[Batch], Any],
) -> StoredResponse:
    """Make the batch once per key, and answer `{success, data: present(batch)}`:
    rendered in the transaction that makes the batch, stored with the key and
    replayed byte for byte on a retry."""
    program = Program.objects.get(id=actor.scope.program_id)
    submitted = payments_hash(payments, draft_id)

    def confirmed() -> _Confirmed:
        # Run with the key held, so a duplicate of this submit never gets here,
        # and outside any transaction: a counted wrong code, or a spent passkey
        # session, must stay so when the request then fails.
        challenge = sca_challenge_live(
            actor=actor, user=user, challenge_id=challenge_id, payments=payments, draft_id=draft_id
        )
        draft = draft_for_submit(actor, draft_id) if draft_id is not None else None
        step_up_confirm(
            user=user,
            program=program,
            confirmation=confirmation,
            purpose=STEP_UP_PURPOSE,
            bound_to=str(challenge.id),
        )
        return _Confirmed(challenge=challenge, draft=draft)

    def work(found: _Confirmed) -> StoredResponse:
        challenge, draft = found.challenge, found.draft
        now = timezone.now()
        # Conditional updates: of two submits racing with one challenge (or one
        # draft), exactly one consumes it and makes a batch.
        consumed = ScaChallenge.objects.filter(
            id=challenge.id, consumed_at__isnull=True, expires_at__gt=now
        ).update(consumed_at=now)
        if not consumed:
            raise validation_error(
                "scaChallenge", "The scaChallenge was used or has expired; initiate again."
            )
        if draft is not None:
            taken = Draft.objects.filter(id=draft.id, submitted_at__isnull=True).update(submitted_at=now)
            if not taken:
                raise ApiError(ErrorCode.INVALID_STATE, "This draft has already been submitted.")
        checked, currency = payments_checked(actor, payments)
        # The approval policy, once the challenge (and draft) are spent: a held
        # submit answers 202 and makes its batch only when approved.
        hold = batch_hold(actor=actor, checked=checked, currency=currency, payments=payments, draft=draft)
        if hold is not None:
            return approval_hold(hold)
        batch = batch_create(actor=actor, user=user, checked=checked, currency=currency, draft=draft)
        return StoredResponse.rendered(200, {"success": True, "data": present(batch)})

    owner_kind, owner_id = idempotency_owner_of(actor.scope)
    return idempotent_checked_call(
        program=program,
        sandbox=actor.scope.sandbox,
        owner_kind=owner_kind,
        owner_id=owner_id,
        operation=OPERATION,
        key=idempotency_key,
        fingerprint=Fingerprint(
            {"payments_hash": submitted},
            # Records written before fingerprints had a version named it as the body names the payments.
            earlier={None: {"payments": submitted}},
        ),
        checks=confirmed,
        work=work,
        mismatch_message="This idempotencyKey was used for a submit of other payments.",
    )
