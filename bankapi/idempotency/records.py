"""A key's record in the database (see `bankapi.idempotency`): the claim
committed on its own, the answer stored with the work, the claim released on a
refusal, and the record a key's first use writes in the work's own statement
(`FirstUse`)."""

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connections, router, transaction
from django.db.models import QuerySet
from django.utils import timezone

from bankapi.crypto import decrypt, encrypt
from bankapi.errors import ApiError, ErrorCode
from bankapi.idempotency.keys import Fingerprint, StoredResponse
from bankapi.models import IdempotencyRecord, Program
from bankapi.row_objects import row_new
from bankapi.rows import insert_select_sql, rows_pre_save

IN_PROGRESS_MESSAGE = "A request with this Idempotency-Key is still being processed; retry shortly."


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
        return row_new(
            IdempotencyRecord,
            **self._fields(),
            fingerprint=fingerprint.stored(),
            claimed_at=claimed_at,
            **fields,
        )

    def rows(self) -> QuerySet[IdempotencyRecord]:
        return IdempotencyRecord.objects.filter(**self._fields())

    def used_in_another_program(self) -> bool:
        """Whether a management user already used this key for this operation
        under another `programId`: the same key with another programId is a
        mismatch, not a new key (read on the key's index)."""
        if self.owner_kind != IdempotencyRecord.OwnerKind.MANAGEMENT:
            return False
        fields = {name: value for name, value in self._fields().items() if name != "program"}
        return IdempotencyRecord.objects.filter(**fields).exclude(program=self.program).exists()


# Operations whose answers hold secrets (a sandbox customer's password and TOTP
# secret): their stored answers are encrypted at rest, as card details are, and
# decrypted only to be replayed. Registered by the app that owns the operation.
SEALED_OPERATIONS: set[str] = set()
SEALED_PREFIX = b"sealed:"


def body_sealed(operation: str, content: bytes) -> bytes:
    """The answer as stored: encrypted for a sealed operation, else as sent."""
    if operation not in SEALED_OPERATIONS:
        return content
    return SEALED_PREFIX + encrypt(content.decode()).encode()


def body_unsealed(stored: bytes) -> bytes:
    return (
        decrypt(stored[len(SEALED_PREFIX) :].decode()).encode()
        if stored.startswith(SEALED_PREFIX)
        else stored
    )


def replay(record: IdempotencyRecord) -> StoredResponse:
    # A completed record always holds its answer: `complete` writes both at once.
    assert record.response_status is not None and record.response_body is not None
    return StoredResponse(
        status=record.response_status, content=body_unsealed(bytes(record.response_body)), replayed=True
    )


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


def claim(
    slot: KeySlot, fingerprint: Fingerprint, mismatch_message: str
) -> IdempotencyRecord | StoredResponse:
    """Claim the key, or return what its earlier use answered. Commits on return."""
    if slot.used_in_another_program():
        raise ApiError(ErrorCode.IDEMPOTENCY_KEY_MISMATCH, mismatch_message)
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
            return replay(record)
        if record.claimed_at > now - timedelta(seconds=settings.IDEMPOTENCY_STALE_CLAIM_SECONDS):
            raise ApiError(ErrorCode.IDEMPOTENCY_KEY_IN_PROGRESS, IN_PROGRESS_MESSAGE)
        record.claim_token = uuid.uuid4()
        record.claimed_at = now
        record.save(update_fields=["claim_token", "claimed_at", "updated_at"])
        return record


_COMPLETE_SQL: dict[str, str] = {}

_COMPLETE_SETS = ("state", "response_status", "response_body", "updated_at")

_COMPLETE_WHERE = ("id", "claim_token", "state")


def complete(record: IdempotencyRecord, response: StoredResponse) -> None:
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
        body_sealed(record.operation, response.content),
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
        and its parameters: the record `claim` and `complete` would leave."""
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


def release(record: IdempotencyRecord) -> None:
    IdempotencyRecord.objects.filter(
        id=record.id, claim_token=record.claim_token, state=IdempotencyRecord.State.CLAIMED
    ).delete()
