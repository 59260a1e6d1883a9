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
"""

import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, connections, router, transaction
from django.db.models import QuerySet
from django.http import HttpResponse
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.models import IdempotencyRecord, Program
from bankapi.roles import Role
from bankapi.rows import insert_select_sql, rows_pre_save
from bankapi.transactions import outside_transaction_require

if TYPE_CHECKING:
    from bankapi.scope import Scope

RETENTION = timedelta(days=7)
HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
OwnerKind = IdempotencyRecord.OwnerKind

# Canonical 8-4-4-4-12 hex only: `uuid.UUID` also takes braces, `urn:uuid:`,
# missing hyphens and non-ASCII digits, so two different strings could name one key.
_CANONICAL_UUID = re.compile(
    r"\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z"
)

IN_PROGRESS_MESSAGE = "A request with this Idempotency-Key is still being processed; retry shortly."
MISMATCH_MESSAGE = "This Idempotency-Key was used for a different request."

Checked = TypeVar("Checked")


@dataclass(frozen=True)
class StoredResponse:
    """An answer as sent: its status and the exact bytes of its JSON body."""

    status: int
    content: bytes
    replayed: bool = False

    @classmethod
    def rendered(cls, status: int, data: Any) -> "StoredResponse":
        """Render `data` with the API's JSON renderer, as a view's Response would be."""
        return cls(status=status, content=JSONRenderer().render(data))


@dataclass(frozen=True)
class Fingerprint:
    """What a key is bound to: the parts of a request that make it the same
    request, in the domain's names (JSON values).

    A record keeps it as `{"version": <version>, "fields": <fields>}`. Records
    written under another version keep the same request's fingerprint in that
    version's form: `earlier` gives it, by version, and under None the form of
    records written before fingerprints had a version (the body's own field
    names). A retry of a request made before a change of names then still finds
    its record, and another request still does not. When the names change,
    bump `version` and move the previous form into `earlier`.
    """

    fields: Mapping[str, Any]
    version: int = 1
    earlier: Mapping[int | None, Mapping[str, Any]] = field(default_factory=dict)

    def stored(self) -> dict[str, Any]:
        return {"version": self.version, "fields": dict(self.fields)}

    def matches(self, stored: Any) -> bool:
        """Whether a record's stored fingerprint is this request's."""
        if isinstance(stored, dict) and set(stored) == {"version", "fields"}:
            version, fields = stored["version"], stored["fields"]
            if version == self.version:
                return bool(fields == dict(self.fields))
            return version in self.earlier and bool(fields == dict(self.earlier[version]))
        return None in self.earlier and bool(stored == dict(self.earlier[None]))


def stored_response_http(response: StoredResponse) -> HttpResponse:
    """The HTTP answer of a stored response: its bytes, marked when replayed."""
    http = HttpResponse(response.content, status=response.status, content_type="application/json")
    if response.replayed:
        http[REPLAYED_HEADER] = "true"
    return http


def idempotency_owner_of(scope: "Scope") -> tuple[str, uuid.UUID]:
    """Whose key a caller's key is, for routes where the caller is the owner
    (a custodian's or a management user's batch, a customer's application)."""
    if scope.role == Role.MANAGEMENT:
        return OwnerKind.MANAGEMENT, scope.user_id
    kind, owner = (
        (OwnerKind.CUSTODIAN, scope.custodian_id)
        if scope.role == Role.CUSTODIAN
        else (OwnerKind.CUSTOMER, scope.customer_id)
    )
    if owner is None:
        # Sign-in refuses such a user; a token of one must not share a key space.
        raise ApiError(ErrorCode.FORBIDDEN, "This user acts for no customer or custodian")
    return kind, owner


def idempotency_key_parse(text: str, field: str = HEADER) -> uuid.UUID:
    """A key sent as text: a UUID in its canonical form (either case), else 400."""
    if not isinstance(text, str) or not _CANONICAL_UUID.fullmatch(text.strip()):
        what = "The Idempotency-Key header" if field == HEADER else field
        raise validation_error(field, f"{what} must be a UUID.")
    return uuid.UUID(text.strip())


def idempotency_key_resolve(
    *, program: Program, header: str | None, body_key: uuid.UUID | None
) -> uuid.UUID | None:
    """The request's key: the header wins over the body field; both must be UUIDs."""
    if header is not None:
        return idempotency_key_parse(header, HEADER)
    if body_key is None and program.require_idempotency_key:
        raise validation_error(HEADER, "This program requires an Idempotency-Key header (or idempotencyKey).")
    return body_key


@dataclass(frozen=True)
class KeySlot:
    """A key as its record is found: the fields of the records' unique constraint."""

    program: Program
    sandbox: bool
    owner_kind: str
    owner_id: uuid.UUID
    operation: str
    key: uuid.UUID

    def _fields(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "sandbox": self.sandbox,
            "owner_kind": self.owner_kind,
            "owner_id": self.owner_id,
            "operation": self.operation,
            "key": self.key,
        }

    def record(self, fingerprint: Fingerprint, claimed_at: datetime, **fields: Any) -> IdempotencyRecord:
        """An unsaved record of this key, claimed at `claimed_at` (`fields`: its
        state and answer, when written completed)."""
        return IdempotencyRecord(
            **self._fields(), fingerprint=fingerprint.stored(), claimed_at=claimed_at, **fields
        )

    def rows(self) -> QuerySet[IdempotencyRecord]:
        return IdempotencyRecord.objects.filter(**self._fields())


def _replay(record: IdempotencyRecord) -> StoredResponse:
    # A completed record always holds its answer: `complete` writes both at once.
    assert record.response_status is not None and record.response_body is not None
    return StoredResponse(status=record.response_status, content=bytes(record.response_body), replayed=True)


def _insert_claim(slot: KeySlot, fingerprint: Fingerprint, now: datetime) -> IdempotencyRecord | None:
    """The claim in one statement, `INSERT ... ON CONFLICT DO NOTHING RETURNING id`,
    committed on its own (autocommit); None when the key already has a record.

    No transaction, no savepoint: a key's first use (nearly every request) costs
    one round trip instead of five. The ORM cannot say "insert unless it exists,
    and tell me", so the statement is written here from the model's own fields
    and their database values.
    """
    record = slot.record(fingerprint, now)
    meta = IdempotencyRecord._meta
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    connection = connections[router.db_for_write(IdempotencyRecord)]
    values = [field.get_db_prep_save(field.pre_save(record, add=True), connection) for field in fields]
    name = connection.ops.quote_name
    # Only the model's own table and column names go into the text; every value
    # is a parameter.
    sql = (
        f"INSERT INTO {name(meta.db_table)} ({', '.join(name(str(field.column)) for field in fields)}) "  # noqa: S608
        f"VALUES ({', '.join(['%s'] * len(fields))}) ON CONFLICT DO NOTHING "
        f"RETURNING {name(str(meta.pk.column))}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        row = cursor.fetchone()
    if row is None:
        return None
    record.pk = row[0]
    record._state.adding = False
    record._state.db = connection.alias
    return record


def _claim(
    slot: KeySlot, fingerprint: Fingerprint, mismatch_message: str
) -> IdempotencyRecord | StoredResponse:
    """Claim the key, or return what its earlier use answered. Commits on return."""
    now = timezone.now()
    claimed = _insert_claim(slot, fingerprint, now)
    if claimed is not None:
        return claimed
    with transaction.atomic(durable=True):
        record = None
        while record is None:
            try:
                with transaction.atomic():
                    created = slot.record(fingerprint, now)
                    created.save(force_insert=True)
                    return created
            except IntegrityError:
                # Locked so that two requests finding the same stale claim cannot
                # both take it over. None when the claim we collided with has just
                # been released: try to claim again.
                record = slot.rows().select_for_update().first()
        if not fingerprint.matches(record.fingerprint):
            raise ApiError(ErrorCode.IDEMPOTENCY_KEY_MISMATCH, mismatch_message)
        if record.state == IdempotencyRecord.State.COMPLETED:
            return _replay(record)
        if record.claimed_at > now - timedelta(seconds=settings.IDEMPOTENCY_STALE_CLAIM_SECONDS):
            raise ApiError(ErrorCode.IDEMPOTENCY_KEY_IN_PROGRESS, IN_PROGRESS_MESSAGE)
        record.claim_token = uuid.uuid4()
        record.claimed_at = now
        record.save(update_fields=["claim_token", "claimed_at", "updated_at"])
        return record


_COMPLETE_SQL: dict[str, str] = {}
_COMPLETE_SETS = ("state", "response_status", "response_body", "updated_at")
_COMPLETE_WHERE = ("id", "claim_token", "state")


def _complete(record: IdempotencyRecord, response: StoredResponse) -> None:
    """Store the answer with the claim, if the claim is still ours: `UPDATE ...
    WHERE id, claim_token and state CLAIMED`, written once from the model's own
    table and column names (every value a parameter) rather than compiled on
    every create."""
    connection = connections[router.db_for_write(IdempotencyRecord)]
    meta = IdempotencyRecord._meta
    sql = _COMPLETE_SQL.get(connection.vendor)
    if sql is None:
        name = connection.ops.quote_name

        def column(field: str) -> str:
            return name(str(meta.get_field(field).column))  # type: ignore[union-attr]

        sets = ", ".join(f"{column(field)} = %s" for field in _COMPLETE_SETS)
        where = " AND ".join(f"{column(field)} = %s" for field in _COMPLETE_WHERE)
        sql = _COMPLETE_SQL[connection.vendor] = f"UPDATE {name(meta.db_table)} SET {sets} WHERE {where}"  # noqa: S608
    values = (
        IdempotencyRecord.State.COMPLETED,
        response.status,
        response.content,
        timezone.now(),
        record.id,
        record.claim_token,
        IdempotencyRecord.State.CLAIMED,
    )
    fields = [meta.get_field(field) for field in (*_COMPLETE_SETS, *_COMPLETE_WHERE)]
    params = [field.get_db_prep_save(value, connection) for field, value in zip(fields, values, strict=True)]  # type: ignore[union-attr]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        completed = cursor.rowcount
    if not completed:
        # Our claim went stale and another request took the key over: it does
        # the work, we roll back.
        raise ApiError(ErrorCode.IDEMPOTENCY_KEY_IN_PROGRESS, IN_PROGRESS_MESSAGE)


KEY_CONSTRAINT = "idempotency_key_per_owner_operation"


class KeyTaken(Exception):
    """A key's first use written at once (`FirstUse`) found the key already
    recorded: its unique constraint refused the statement, so nothing of it
    was written."""


def _refused_by(error: IntegrityError) -> str | None:
    """The constraint a database refused a write by, when the driver says."""
    diag = getattr(error.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None)


@dataclass(frozen=True)
class FirstUse:
    """The record of a key's first use, written by the same statement as the
    work (`idempotent_checked_call`'s `work_at_once`): completed, with the
    answer, by an INSERT that writes one row per row of the step saying the work
    was done. The key's unique constraint decides as a committed claim would: a
    concurrent request with the same key waits for this statement, then its own
    is refused whole (`KeyTaken`), and it answers from the key's record."""

    slot: KeySlot
    fingerprint: Fingerprint

    def record_sql(self, connection: Any, response: StoredResponse, *, source: str) -> tuple[str, list[Any]]:
        """`INSERT INTO <records> SELECT <the completed record> FROM <source>`
        and its parameters: the record `_claim` and `_complete` would leave."""
        record = self.slot.record(
            self.fingerprint,
            timezone.now(),
            state=IdempotencyRecord.State.COMPLETED,
            response_status=response.status,
            response_body=response.content,
        )
        rows_pre_save([record])
        return insert_select_sql([record], source, connection)

    @contextmanager
    def writing(self, connection: Any) -> Iterator[None]:
        """Around the statement that writes the record: KeyTaken when the key's
        constraint refused it. A request runs it autocommitted; inside a test
        case's wrapping transaction it runs under a savepoint, which the refusal
        would otherwise leave aborted."""
        try:
            if connection.in_atomic_block:
                with transaction.atomic(using=connection.alias):
                    yield
            else:
                yield
        except IntegrityError as error:
            if _refused_by(error) == KEY_CONSTRAINT:
                raise KeyTaken from error
            raise


def _release(record: IdempotencyRecord) -> None:
    IdempotencyRecord.objects.filter(
        id=record.id, claim_token=record.claim_token, state=IdempotencyRecord.State.CLAIMED
    ).delete()


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
    claimed = _claim(slot, fingerprint, mismatch_message)
    if isinstance(claimed, StoredResponse):
        return claimed
    try:
        checked = early[0] if early is not None else checks()
        with transaction.atomic(durable=True):
            response = work(checked)
            _complete(claimed, response)
            return response
    except Exception:
        # Refused, and the work (if it began) rolled back: free the key for a retry.
        _release(claimed)
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
    return _replay(record)


def idempotency_records_purge() -> int:
    """Delete keys older than the retention period; returns how many went."""
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=timezone.now() - RETENTION).delete()
    return deleted
