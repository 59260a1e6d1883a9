"""initiate and passkey-challenge: the SCA challenge a submit must present.

initiate checks the items with verify's rules and binds a challenge to a hash of
the payments exactly as sent (and to the draft, if any), so the confirmation
authorises exactly what will be paid: the total of the valid items.
"""

import uuid
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from authn.models import User
from bankapi.clock import customer_now
from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.scope import get_or_not_found, parse_uuid
from batches.actors import Actor
from batches.errors import BatchErrorCode
from batches.models import Draft, ScaChallenge
from batches.rules import CheckedItem, PayerBook, items_check, payments_hash
from batches.sent import SentPayment

SCA_CHALLENGE_TTL = timedelta(minutes=5)
STEP_UP_PURPOSE = "batch-submit"


def draft_for_submit(actor: Actor, draft_id: str) -> Draft:
    """The caller's draft not yet submitted: 404 if none, 422 DRAFT_EXPIRED once expired."""
    draft: Draft = get_or_not_found(
        actor.drafts(Draft.objects.all()).filter(submitted_at__isnull=True), draft_id, "Batch"
    )
    if draft.expires_at <= customer_now(draft.owner_customer_id):
        raise ApiError(BatchErrorCode.DRAFT_EXPIRED, "The draft has expired; verify the payments again.")
    if draft.verified_at is None:
        raise ApiError(ErrorCode.INVALID_STATE, "The draft is still being verified; try again shortly.")
    return draft


def _valid_amount(item: CheckedItem) -> Decimal:
    """The amount of a valid item: items_check sets it on every item it finds valid."""
    if item.amount is None:
        raise ValueError(f"Valid payment {item.index} without an amount.")
    return item.amount


def payments_checked(actor: Actor, payments: list[SentPayment]) -> tuple[list[CheckedItem], str | None]:
    return items_check(payments, PayerBook.of(actor.payer_accounts()))


def payments_of_request(draft: Draft | None, payments: list[SentPayment] | None) -> list[SentPayment]:
    """What initiate or submit is about: the payments sent, or a file draft's own
    (a file draft's payments are the file's: sending others is refused)."""
    if draft is not None and draft.from_file:
        if payments is not None:
            raise validation_error(
                "payments", "Not taken with a draft made from a file: its payments are the file's."
            )
        return draft.sent_payments()
    if payments is None:
        raise validation_error("payments", "Required, unless batchId names a draft made from a file.")
    return payments


def submitted_payments(
    actor: Actor, payments: list[SentPayment] | None, draft_id: str | None
) -> list[SentPayment]:
    """submit's payments, found before its scaChallenge is checked against them: a
    file draft's (submitted or not: a used challenge is then what is refused)."""
    draft = None
    if draft_id is not None:
        draft = actor.drafts(Draft.objects.all()).filter(pk=parse_uuid(draft_id)).first()
    return payments_of_request(draft, payments)


@dataclass(frozen=True)
class Initiated:
    """What initiate made: the challenge, bound to `total` in `currency` (the sum
    of the valid payments: what the confirmation authorises)."""

    challenge: ScaChallenge
    total: Decimal
    currency: str


def batch_initiate(
    *, actor: Actor, user: User, payments: list[SentPayment] | None, draft_id: str | None
) -> Initiated:
    draft = draft_for_submit(actor, draft_id) if draft_id is not None else None
    payments = payments_of_request(draft, payments)
    if draft is not None and draft.sent_payments() != payments:
        raise validation_error("payments", "Must be the payments of the draft named by batchId.")
    checked, currency = payments_checked(actor, payments)
    valid = [item for item in checked if item.valid]
    if not valid:
        raise validation_error("payments", "No payment is valid: verify them to see each one's reasons.")
    amounts = [_valid_amount(item) for item in valid]
    if currency is None:
        # items_check takes the currency of the first valid item's payer: set when any is valid.
        raise ValueError("Valid payments without a batch currency.")
    total = sum(amounts, start=amounts[0] * 0)
    challenge = ScaChallenge.objects.create(
        program_id=actor.scope.program_id,
        sandbox=actor.scope.sandbox,
        **actor.owner_fields(),
        route_customer=actor.route_customer,
        user=user,
        payments_hash=payments_hash(payments, str(draft.id) if draft else None),
        draft=draft,
        total_amount=total,
        currency=currency,
        expires_at=timezone.now() + SCA_CHALLENGE_TTL,
    )
    return Initiated(challenge=challenge, total=total, currency=currency)


def sca_challenge_live(
    *,
    actor: Actor,
    user: User,
    challenge_id: uuid.UUID | None,
    payments: list[SentPayment] | None = None,
    draft_id: str | None = None,
) -> ScaChallenge:
    """The caller's unexpired, unused challenge of id `challenge_id` (None: an
    id that is not a UUID, so none); with `payments`, bound to them.

    Every refusal is a 400 on `scaChallenge`: unknown (another user's included),
    used, expired, or made for other payments or another draft.
    """
    challenge = (
        ScaChallenge.objects.for_scope(actor.scope)
        # Made on the same route: a challenge of the custodian-wide route does not
        # confirm a single-customer batch, nor the reverse.
        .filter(user=user, consumed_at__isnull=True, route_customer=actor.route_customer)
        # django-stubs: an exact lookup takes None (matching no challenge: the id is never null).
        .filter(id=challenge_id)  # type: ignore[misc]
        .first()
    )
    if challenge is None:
        raise validation_error("scaChallenge", "Unknown or already used scaChallenge; initiate again.")
    if challenge.expires_at <= timezone.now():
        raise validation_error("scaChallenge", "The scaChallenge has expired; initiate again.")
    if payments is not None and challenge.payments_hash != payments_hash(payments, draft_id):
        raise validation_error(
            "scaChallenge", "The payments (or batchId) differ from those the scaChallenge was initiated for."
        )
    return challenge
