"""Card spending: authorizations, their clearing, reversal and expiry, and
freezing a card. One service for every door (the sandbox routes, the expiry
sweep and a clock's advance).

What an authorization does to money is decided and written by the payments
side (`payments.services.card_spending`): the acceptance decision with the
card's rule beside the payment rules, the hold, and a clearing paid from its
hold by the ledger. This module keeps the authorizations: it locks one before
changing it, so of a clear and a reverse racing one wins and the other finds
it no longer PENDING (409 INVALID_STATE).

Locks, always in this order: the card or the authorization, then the account
(`lock_accounts`, taken by the payments side).
"""

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from bankapi.clock import customer_now
from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.ids import write_ordered_uuid
from cards.models import Card, CardAuthorization
from cards.serializers_authorizations import card_authorization_data
from events.models import Event, EventType
from events.recording import event_new, events_record
from payments.card_decision import Authorized, CardSpend
from payments.services.card_spending import HoldGivenBack, card_hold_place, card_holds_settle

# A PENDING authorization expires this long after it was made.
AUTHORIZATION_LIFETIME = timedelta(days=7)
# Authorizations expired per transaction by the sweep.
EXPIRY_CHUNK = 500


@dataclass(frozen=True)
class AuthorizationOrder:
    amount: Decimal
    currency: str
    merchant_name: str
    merchant_category_code: str = ""


def authorization_event(authorization: CardAuthorization, type: EventType) -> Event:
    return event_new(
        type=type,
        program_id=authorization.program_id,
        sandbox=authorization.sandbox,
        customer_id=authorization.customer_id,
        resource_type="card_authorization",
        resource_id=authorization.id,
        data=card_authorization_data(authorization),
    )


def authorization_row(
    card: Card, order: AuthorizationOrder, now: datetime, **decided: Any
) -> CardAuthorization:
    """The authorization the network's request makes on `card` at `now` (the
    customer's time), not yet saved; `decided` sets what the decision gave."""
    return CardAuthorization(
        id=write_ordered_uuid(),
        program_id=card.program_id,
        sandbox=card.sandbox,
        card=card,
        account_id=card.account_id,
        customer_id=card.account.customer_id,
        amount=order.amount,
        currency=order.currency,
        merchant_name=order.merchant_name,
        merchant_category_code=order.merchant_category_code,
        authorized_at=now,
        **decided,
    )


def card_authorize(*, card: Card, order: AuthorizationOrder) -> CardAuthorization:
    """Decide the network's request to spend with `card` and record it:
    approved (PENDING, its amount held and counted) or declined (DECLINED with
    its reason, nothing held). Sends `card_authorization.created`."""
    account = card.account
    now = customer_now(account.customer_id)
    with transaction.atomic():
        # The card's row lock: a freeze racing the request is before or after it, never during.
        locked_card = Card.objects.select_for_update().get(id=card.id)
        # The card as read with its account (its account never changes): no second read.
        authorization = authorization_row(card, order, now)
        hold_id = uuid.uuid4()
        decided = card_hold_place(
            program=card.program,
            account_id=locked_card.account_id,
            spend=CardSpend(
                amount=order.amount,
                currency=order.currency,
                card_active=locked_card.status == Card.Status.ACTIVE,
            ),
            hold_id=hold_id,
            memo=f"Card authorization {authorization.id}",
            now=now,
        )
        if isinstance(decided, Authorized):
            authorization.status = CardAuthorization.Status.PENDING
            authorization.hold_id = hold_id
            authorization.usage_day = decided.day
            authorization.expires_at = now + AUTHORIZATION_LIFETIME
        else:
            authorization.status = CardAuthorization.Status.DECLINED
            authorization.decline_reason = decided.reason
        authorization.save(force_insert=True)
        events_record([authorization_event(authorization, EventType.CARD_AUTHORIZATION_CREATED)])
    return authorization


def _locked_pending(authorization: CardAuthorization, action: str) -> CardAuthorization:
    """The authorization under its row lock, if it may still be cleared or
    reversed: PENDING and not past its expiry (else 409 INVALID_STATE)."""
    locked = CardAuthorization.objects.select_for_update().get(id=authorization.id)
    expired = locked.expires_at is not None and locked.expires_at <= customer_now(locked.customer_id)
    if locked.status != CardAuthorization.Status.PENDING or expired:
        status = CardAuthorization.Status.EXPIRED if expired else locked.status
        raise ApiError(
            ErrorCode.INVALID_STATE, f"Only a PENDING authorization can be {action}; this one is {status}."
        )
    return locked


def _given_back(authorization: CardAuthorization, cleared: Decimal) -> HoldGivenBack:
    assert authorization.hold_id is not None and authorization.usage_day is not None
    return HoldGivenBack(
        hold_id=authorization.hold_id,
        account_id=authorization.account_id,
        authorized=authorization.amount,
        day=authorization.usage_day,
        cleared=cleared,
        merchant=authorization.merchant_name,
        authorization_id=authorization.id,
    )


def authorization_clear(authorization: CardAuthorization, amount: Decimal | None = None) -> CardAuthorization:
    """PENDING -> CLEARED: `amount` (default all of it; more than authorized is
    400) paid from its hold as one debit to the program's external account;
    what was not cleared goes back to available and to its day's count. Sends
    `card_authorization.cleared`."""
    cleared = authorization.amount if amount is None else amount
    if cleared > authorization.amount:
        raise validation_error(
            "amount", f"Must be at most {authorization.amount:.2f}, the authorized amount."
        )
    with transaction.atomic():
        locked = _locked_pending(authorization, "cleared")
        now = customer_now(locked.customer_id)
        movements = card_holds_settle([_given_back(locked, cleared)], now=now)
        locked.clearing = movements[locked.hold_id]  # type: ignore[index]
        locked.status = CardAuthorization.Status.CLEARED
        locked.cleared_amount = cleared
        locked.save(update_fields=["clearing", "status", "cleared_amount", "updated_at"])
        events_record([authorization_event(locked, EventType.CARD_AUTHORIZATION_CLEARED)])
    return locked


def authorizations_clear_run(authorization_ids: list[uuid.UUID], *, chunk: int = EXPIRY_CHUNK) -> int:
    """Clear many PENDING authorizations in full, as a network's clearing file
    does, a chunk per transaction: each paid from its own hold, one debit
    each, the chunk's movements, entries, rows and events written in a few
    statements (`card_holds_settle`). Only customers whose time is the real
    one; an authorization no longer PENDING, past its expiry or held by
    another request is left as it is. Answers how many were cleared."""
    cleared = 0
    for start in range(0, len(authorization_ids), chunk):
        with transaction.atomic():
            now = timezone.now()
            rows = list(
                _clock_customers(
                    CardAuthorization.objects.select_for_update(skip_locked=True).filter(
                        id__in=authorization_ids[start : start + chunk],
                        status=CardAuthorization.Status.PENDING,
                        expires_at__gt=now,
                    ),
                    None,
                ).order_by("id")
            )
            if not rows:
                continue
            movements = card_holds_settle([_given_back(row, row.amount) for row in rows], now=now)
            for row in rows:
                row.clearing = movements[row.hold_id]  # type: ignore[index]
                row.status = CardAuthorization.Status.CLEARED
                row.cleared_amount = row.amount
            CardAuthorization.objects.bulk_update(
                rows, ["clearing", "status", "cleared_amount"], batch_size=1000
            )
            events_record([authorization_event(row, EventType.CARD_AUTHORIZATION_CLEARED) for row in rows])
            cleared += len(rows)
    return cleared


def authorization_reverse(authorization: CardAuthorization) -> CardAuthorization:
    """PENDING -> REVERSED: the hold released unused and its amount given back
    to its day's count; nothing booked. Sends `card_authorization.reversed`."""
    with transaction.atomic():
        locked = _locked_pending(authorization, "reversed")
        card_holds_settle([_given_back(locked, Decimal("0.00"))], now=customer_now(locked.customer_id))
        locked.status = CardAuthorization.Status.REVERSED
        locked.save(update_fields=["status", "updated_at"])
        events_record([authorization_event(locked, EventType.CARD_AUTHORIZATION_REVERSED)])
    return locked


def _clock_customers(
    rows: QuerySet[CardAuthorization], clock_id: uuid.UUID | None
) -> QuerySet[CardAuthorization]:
    """The authorizations of the customers whose time is the real one (no
    clock: `clock_id` None) or that clock's."""
    return rows.filter(customer__test_clock_id=clock_id)


def authorizations_expire(now: datetime, clock_id: uuid.UUID | None) -> int:
    """Mark EXPIRED every PENDING authorization whose expiry is at or before
    `now`, of the customers without a clock (`clock_id` None: the real sweep,
    beat's) or of that clock's (at the clock's moment): each hold released
    unused and its amount given back to its day's count, with the event
    `card_authorization.expired`. In chunks, claimed with SKIP LOCKED (an
    authorization a clear or reverse holds is left to it). Answers how many."""
    expired = 0
    while True:
        with transaction.atomic():
            chunk = list(
                _clock_customers(
                    CardAuthorization.objects.select_for_update(skip_locked=True).filter(
                        status=CardAuthorization.Status.PENDING, expires_at__lte=now
                    ),
                    clock_id,
                ).order_by("expires_at", "id")[:EXPIRY_CHUNK]
            )
            if not chunk:
                return expired
            _expire(chunk, now)
            expired += len(chunk)


def authorizations_expiring(clock_id: uuid.UUID, after: datetime, until: datetime) -> list[datetime]:
    """When the PENDING authorizations of a clock's customers expire in `(after, until]`."""
    expiries = (
        CardAuthorization.objects.filter(
            customer__test_clock_id=clock_id,
            status=CardAuthorization.Status.PENDING,
            expires_at__gt=after,
            expires_at__lte=until,
        )
        .values_list("expires_at", flat=True)
        .distinct()
    )
    return [expiry for expiry in expiries if expiry is not None]


# An advance of a test clock runs the sweep at each of these moments: each
# authorization expires at its own time.
authorizations_expire.due_times = authorizations_expiring  # type: ignore[attr-defined]


def _expire(chunk: list[CardAuthorization], now: datetime) -> None:
    card_holds_settle([_given_back(authorization, Decimal("0.00")) for authorization in chunk], now=now)
    CardAuthorization.objects.filter(id__in=[a.id for a in chunk]).update(
        status=CardAuthorization.Status.EXPIRED
    )
    for authorization in chunk:
        authorization.status = CardAuthorization.Status.EXPIRED
    events_record(
        [authorization_event(authorization, EventType.CARD_AUTHORIZATION_EXPIRED) for authorization in chunk]
    )


def card_status_set(card: Card, status: str) -> Card:
    """FROZEN or ACTIVE again; a card already so answers as it is, a CANCELLED
    card is 409 INVALID_STATE."""
    with transaction.atomic():
        locked = Card.objects.select_for_update().select_related("account").get(id=card.id)
        if locked.status == Card.Status.CANCELLED:
            raise ApiError(ErrorCode.INVALID_STATE, "The card is cancelled.")
        if locked.status != status:
            locked.status = status
            locked.save(update_fields=["status", "updated_at"])
    return locked


def authorizations_of_card(card: Card, status: str | None = None) -> QuerySet[CardAuthorization]:
    """The card's authorizations, of one status as they read now when `status`
    is given (a PENDING one past its expiry reads EXPIRED)."""
    rows = CardAuthorization.objects.filter(card=card)
    if status is None:
        return rows
    now = customer_now(card.account.customer_id)
    if status == CardAuthorization.Status.EXPIRED:
        return rows.filter(Q(status=status) | Q(status=CardAuthorization.Status.PENDING, expires_at__lte=now))
    if status == CardAuthorization.Status.PENDING:
        return rows.filter(status=status, expires_at__gt=now)
    return rows.filter(status=status)
