"""Idempotency keys for creates: a key makes a create happen at most once.

A record is kept per (owner, operation, key), in the owner's program and
environment. The owner is who the key belongs to: the customer (payments,
applications), the custodian or the management user (batch submits). The
operation (`payments.create`, `batches.submit`, ...) keeps one route's key from
ever replaying another route's answer: the same key on another operation is
simply another record.

The flow, for a domain's create:

    key = idempotency_key_resolve(program=..., header=request.headers.get(HEADER), body_key=...)
    stored = idempotent_checked_call(
        program=..., sandbox=..., owner_kind=OwnerKind.CUSTOMER, owner_id=customer.id,
        operation="payments.create", key=key, fingerprint=Fingerprint({...}), checks=checks, work=work,
    )
    return stored_response_http(stored)

`checks` resolves and checks what the request names (a beneficiary, a challenge,
a confirmation) and returns what `work` needs; `work` does the create and
returns `StoredResponse.rendered(status, data)`. A route with nothing to check
calls `idempotent_call(..., work=work)`.

Why it holds:
- The claim is committed in its own transaction before any check that reads
  changing state or spends something (an scaChallenge, a TOTP code, a passkey
  session, a beneficiary lookup) and before any work starts. So a concurrent
  duplicate sees the claim and answers 409 IDEMPOTENCY_KEY_IN_PROGRESS, and a
  later one the first answer, without checking its copy of the credential: the
  first request has spent it, and checking it again would answer 401 and count
  a wrong code against the user. Only what the fingerprint is made of (the
  body's shape) and whose key it is (the tenant, the account) are read before.
  The claim is opened with `durable=True`: a caller that wraps the call in a
  transaction would keep the claim uncommitted (and invisible to the concurrent
  request), so that mistake fails loudly instead of silently paying twice.
- `checks` runs outside any transaction: what it counts or spends (a wrong
  code, a passkey session) stays so when the request is then refused.
- The work and the completion of the claim (storing the response) commit
  together: after a crash either both happened or neither did, which is why a
  claim left behind for more than a minute (`IDEMPOTENCY_STALE_CLAIM_SECONDS`)
  can safely be taken over. A claim carries a fencing token: a request whose
  claim was taken over cannot complete.
- Checks or work that raise (a 4xx before anything was done) release the claim,
  so the client may retry with the same key: only a success is remembered.
- The response is stored as the bytes first sent and replayed byte for byte,
  with `Idempotent-Replayed: true`.
- A route whose checks only read may also give `work_at_once`: a key's first
  use (nearly every request) is then one statement that does the work and
  writes the key's record, completed with its answer (`FirstUse`). There is no
  separate claim: the key's unique constraint makes a concurrent copy wait for
  that statement and then refuses its own whole (`KeyTaken`), so it goes the
  claimed way above and answers from the record. Its checks ran before the key
  was held, but only to build the statement: a refusal there, like a key
  already recorded, is decided again the claimed way, where a retry replays.

A fingerprint (what the key was first used for) is named in the domain's names
and versioned (`Fingerprint`), so renaming a body's field never makes a retry
of an earlier request look like another request.

The modules: this one (the flow), `bankapi.idempotency.keys` (a key, its
owner, the fingerprint and the stored answer) and `bankapi.idempotency.records`
(the record: claim, completion, release, first use). Callers import the names
below from here.
"""

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from django.db import transaction
from django.utils import timezone

from bankapi.errors import ApiError
from bankapi.idempotency.keys import (
    HEADER,
    REPLAYED_HEADER,
    Fingerprint,
    OwnerKind,
    StoredResponse,
    idempotency_key_parse,
    idempotency_key_resolve,
    idempotency_owner_of,
    stored_response_http,
)
from bankapi.idempotency.records import (
    IN_PROGRESS_MESSAGE,
    KEY_CONSTRAINT,
    FirstUse,
    KeySlot,
    KeyTaken,
    claim,
    complete,
    release,
    replay,
)
from bankapi.models import IdempotencyRecord, Program
from bankapi.transactions import outside_transaction_require

__all__ = [
    "HEADER",
    "IN_PROGRESS_MESSAGE",
    "KEY_CONSTRAINT",
    "MISMATCH_MESSAGE",
    "REPLAYED_HEADER",
    "RETENTION",
    "Checked",
    "Fingerprint",
    "FirstUse",
    "KeySlot",
    "KeyTaken",
    "OwnerKind",
    "StoredResponse",
    "idempotency_key_parse",
    "idempotency_key_resolve",
    "idempotency_owner_of",
    "idempotency_records_purge",
    "idempotent_call",
    "idempotent_checked_call",
    "idempotent_replay",
    "stored_response_http",
]

RETENTION = timedelta(days=7)
MISMATCH_MESSAGE = "This Idempotency-Key was used for a different request."

Checked = TypeVar("Checked")


def idempotent_checked_call(
    *,
    program: Program,
    sandbox: bool,
    owner_kind: str,
    owner_id: uuid.UUID,
    operation: str,
    key: uuid.UUID | None,
    fingerprint: Fingerprint,
    checks: Callable[[], Checked],
    work: Callable[[Checked], StoredResponse],
    mismatch_message: str = MISMATCH_MESSAGE,
    work_at_once: Callable[[Checked, FirstUse | None], StoredResponse | None] | None = None,
) -> StoredResponse:
    """Claim the key, run `checks`, then `work(<what checks returned>)`, at most
    once per (owner, operation, key), and answer what the first success answered.

    `checks` runs once the key is held and outside any transaction; `work` runs
    in the transaction that completes the key. Without a key, the same two steps
    run unclaimed. `fingerprint` is what the key was first used for: the same
    key with another fingerprint is a 400 IDEMPOTENCY_KEY_MISMATCH. Must not
    be called inside a transaction (RuntimeError): the claim must commit before
    `checks`, and what `checks` counts or spends must stay so if `work` fails.

    `work_at_once`, if given, is tried first, outside any transaction: work that
    writes, and the key's record with its answer (`FirstUse`, None without a
    key), in one statement, atomic on its own. It answers None when it wrote
    nothing and `work` should run as usual (a case it does not take, or a
    refusal `work` explains). It needs `checks` first, so with it `checks` runs
    before the key is held, and must only read: a refusal there, or a key
    already recorded (`KeyTaken`), goes the claimed way, where a retry is
    answered from its record before anything is checked again.
    """
    outside_transaction_require("idempotent_checked_call")
    if key is None:
        checked = checks()
        done = work_at_once(checked, None) if work_at_once else None
        if done is not None:
            return done
        with transaction.atomic():
            return work(checked)
    slot = KeySlot(program, sandbox, owner_kind, owner_id, operation, key)
    early: tuple[Checked] | None = None
    if work_at_once is not None:
        # A key's first use, nearly every request: one statement.
        try:
            early = (checks(),)
        except ApiError:
            pass  # decided once the key is held: a retry is answered from its record first
        if early is not None:
            try:
                done = work_at_once(early[0], FirstUse(slot, fingerprint))
            except KeyTaken:
                done = None
            if done is not None:
                return done
    claimed = claim(slot, fingerprint, mismatch_message)
    if isinstance(claimed, StoredResponse):
        return claimed
    try:
        checked = early[0] if early is not None else checks()
        with transaction.atomic(durable=True):
            response = work(checked)
            complete(claimed, response)
            return response
    except Exception:
        # Refused, and the work (if it began) rolled back: free the key for a retry.
        release(claimed)
        raise


def _nothing_to_check() -> None:
    return None


def idempotent_call(
    *,
    program: Program,
    sandbox: bool,
    owner_kind: str,
    owner_id: uuid.UUID,
    operation: str,
    key: uuid.UUID | None,
    fingerprint: Fingerprint,
    work: Callable[[], StoredResponse],
    mismatch_message: str = MISMATCH_MESSAGE,
) -> StoredResponse:
    """`idempotent_checked_call` for a create with nothing to check once the key is held."""
    return idempotent_checked_call(
        program=program,
        sandbox=sandbox,
        owner_kind=owner_kind,
        owner_id=owner_id,
        operation=operation,
        key=key,
        fingerprint=fingerprint,
        checks=_nothing_to_check,
        work=lambda _: work(),
        mismatch_message=mismatch_message,
    )


def idempotent_replay(
    *,
    program: Program,
    sandbox: bool,
    owner_kind: str,
    owner_id: uuid.UUID,
    operation: str,
    key: uuid.UUID | None,
) -> StoredResponse | None:
    """The stored answer of a completed key, if any: for routes that must replay
    before any other check (a batch submit whose confirmation was spent)."""
    if key is None:
        return None
    slot = KeySlot(program, sandbox, owner_kind, owner_id, operation, key)
    record = slot.rows().filter(state=IdempotencyRecord.State.COMPLETED).first()
    if record is None:
        return None
    return replay(record)


def idempotency_records_purge() -> int:
    """Delete keys older than the retention period; returns how many went."""
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=timezone.now() - RETENTION).delete()
    return deleted
