"""What an idempotency key is and what it keeps (see `bankapi.idempotency`): a
key sent as text and whose it is, the fingerprint of the request it was first
used for, and the answer stored with it."""

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.http import HttpResponse
from rest_framework.renderers import JSONRenderer

from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.models import IdempotencyRecord, Program
from bankapi.roles import Role

if TYPE_CHECKING:
    from bankapi.scope import Scope

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
OwnerKind = IdempotencyRecord.OwnerKind

# Canonical 8-4-4-4-12 hex only: `uuid.UUID` also takes braces, `urn:uuid:`,
# missing hyphens and non-ASCII digits, so two different strings could name one key.
_CANONICAL_UUID = re.compile(
    r"\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z"
)


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
