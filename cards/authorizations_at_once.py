"""A card authorization approved in one statement (PostgreSQL), as a payment is
accepted in one (`payments.writer.work_write_at_once`).

The card route tries this first, with its Idempotency-Key's first use: the
acceptance decision's account-free part (`authorization_plan`: the card's
rule as the card was read with the caller, the currency, the per-payment
limit) and, if it approves, one statement whose steps are, in order of use:
- the card, still ACTIVE and on that account, read `FOR SHARE` (a freeze
  racing the request is before or after it, never during, as the card's row
  lock makes it on the other path);
- the account's conditional UPDATE (`payments.ledger.hold_place_steps`): the
  hold's amount added to `held` and counted on the day's limit, only if the
  available balance covers it and the count admits it, the plan's own rules
  as SQL (`DailyCount.sql`), and only if the card's step found it;
- the hold, the authorization (PENDING), its event and the key's record with
  its answer, each written only if the UPDATE returned its row.
Nothing is written when any condition fails: the route then goes the claimed
way (`cards.authorizations.card_authorize`), where the decision on the locked
rows says why (a decline, answered 200 like an approval). Both ways write the
same rows (`tests/cards/test_authorization_rows.py`).
"""

import uuid
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from django.db import connections, router

from bankapi.clock import customer_now
from bankapi.idempotency import FirstUse, StoredResponse
from bankapi.rows import fetch_one_bound, insert_select_sql, rows_pre_save, rows_stored
from cards.authorizations import (
    AUTHORIZATION_LIFETIME,
    AuthorizationOrder,
    authorization_event,
    authorization_row,
)
from cards.models import Card, CardAuthorization
from events.models import EventType
from events.recording import event_insert_sql, events_written
from payments.card_decision import CardSpend, Declined, authorization_plan
from payments.decision import Rules
from payments.ledger import HoldOrder, hold_place_steps


def _card_step(card: Card, connection: Any) -> tuple[str, list[Any]]:
    name = connection.ops.quote_name
    table = name(Card._meta.db_table)
    sql = (
        f"SELECT {name('id')} FROM {table} WHERE {name('id')} = %s AND {name('status')} = %s "  # noqa: S608
        f"AND {name('account_id')} = %s FOR SHARE"
    )
    pk = Card._meta.pk
    return sql, [
        pk.get_db_prep_value(card.id, connection),
        Card.Status.ACTIVE.value,
        pk.get_db_prep_value(card.account_id, connection),
    ]


def card_authorize_at_once(
    *,
    card: Card,
    order: AuthorizationOrder,
    claim: FirstUse | None,
    respond: Callable[[CardAuthorization], StoredResponse],
) -> StoredResponse | None:
    """Approve the authorization in one statement with the key's record
    (`claim`, its first use; None without a key) and its answer
    (`respond(authorization)`), outside any transaction. None when nothing was
    written: another database, a decline, or a row that no longer met the
    conditions; `card_authorize` then decides. A key already recorded refuses
    the whole statement (`KeyTaken`). `card` was read with its account and
    program."""
    connection = connections[router.db_for_write(CardAuthorization)]
    if connection.vendor != "postgresql":
        return None
    account = card.account
    now = customer_now(account.customer_id)
    planned = authorization_plan(
        Rules.of(card.program),
        CardSpend(
            amount=order.amount, currency=order.currency, card_active=card.status == Card.Status.ACTIVE
        ),
        account_currency=account.currency,
        now=now,
    )
    if isinstance(planned, Declined) or not planned.count.admits_any():
        return None
    name = connection.ops.quote_name
    held = name("held")
    authorization = authorization_row(
        card,
        order,
        now,
        status=CardAuthorization.Status.PENDING,
        usage_day=planned.day,
        expires_at=now + AUTHORIZATION_LIFETIME,
    )
    steps = hold_place_steps(
        HoldOrder(
            id=uuid.uuid4(),
            account_id=card.account_id,
            amount=order.amount,
            memo=f"Card authorization {authorization.id}",
        ),
        count=planned.count,
        now=now,
        update="held",
        guard=f"EXISTS (SELECT 1 FROM {name('card')})",  # noqa: S608 (a quoted name, no value)
        connection=connection,
    )
    authorization.hold = steps.hold
    rows_pre_save([authorization])
    event = authorization_event(authorization, EventType.CARD_AUTHORIZATION_CREATED)
    response = respond(authorization)
    parts: list[tuple[str, tuple[str, list[Any]]]] = [("card", _card_step(card, connection))]
    parts.append(("held", steps.update))
    parts += [(f"write_{index}", write) for index, write in enumerate(steps.writes)]
    parts.append(("authorization", insert_select_sql([authorization], held, connection)))
    parts.append(("event", event_insert_sql(event, held, connection)))
    if claim:
        parts.append(("key", claim.record_sql(connection, response, source=held)))
    # Only quoted names and the steps' own text go into it; every value is a parameter.
    steps_sql = ", ".join(f"{name(step)} AS ({text})" for step, (text, _) in parts)
    event_id = f"(SELECT {name('id')} FROM {name('event')})"  # noqa: S608
    answer = ", ".join(f"{held}.{name(column)}" for column in ("held", "outbound_day", "outbound_total"))
    sql = (
        f"WITH {steps_sql} SELECT {answer}, {event_id} FROM (SELECT 1) {name('one')} LEFT JOIN {held} ON TRUE"  # noqa: S608
    )
    params = [param for _, (_, step_params) in parts for param in step_params]
    with claim.writing(connection) if claim else nullcontext():
        row = fetch_one_bound(connection, sql, params)
    # The statement's last SELECT answers one row whatever the UPDATE did.
    assert row is not None
    held_after, day, total, event_id = row
    if held_after is None:
        return None
    steps.stored(account, held_after, day, total, connection)
    rows_stored([authorization], connection)
    events_written([event], [event_id], connection)
    return response
