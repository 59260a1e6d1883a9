"""A batch submit as an approval holds it.

`batch_hold` asks the approval gate about a submit that has passed every check
(its scaChallenge and confirmation are spent by then); `batch_from_replay`
rebuilds, when the last approval comes, what submit would have made the batch
from, checking every item again with submit's own rules.
"""

from decimal import Decimal
from typing import Any

from bankapi.approval_gate import BATCH, Hold, HoldRequest, approval_needed
from bankapi.models import Customer
from bankapi.scope import Scope
from batches.actors import Actor
from batches.models import Draft
from batches.rules import CheckedItem
from batches.sent import SentPayment
from batches.services.challenges import payments_checked


def _item_currency(item: CheckedItem, fallback: str | None) -> str | None:
    if item.payment.currency:
        return item.payment.currency
    return item.payer.currency if item.payer is not None else fallback


def batch_content(checked: list[CheckedItem], currency: str | None) -> dict[str, Any]:
    """`{kind: "batch", items: [{accountId, amount, currency, reference, payee}]}`
    in the order sent; what an item lacks is null."""
    items = []
    for item in checked:
        payee = item.payee
        items.append(
            {
                "accountId": str(item.payer.id) if item.payer is not None else None,
                "amount": f"{item.amount:.2f}" if item.amount is not None else item.payment.amount,
                "currency": _item_currency(item, currency),
                "reference": item.payment.reference,
                "payee": {
                    "name": payee.name if payee.name else None,
                    "accountNumber": payee.account_number,
                    "sortCode": payee.sort_code,
                    "iban": payee.iban,
                    "bic": payee.bic,
                },
            }
        )
    return {"kind": BATCH, "items": items}


def batch_hold(
    *,
    actor: Actor,
    checked: list[CheckedItem],
    currency: str | None,
    payments: list[SentPayment],
    draft: Draft | None,
) -> Hold | None:
    """Whether the caller's policy holds this submit (each currency's total of
    the valid items is compared with its tiers)."""
    scope = actor.scope
    owner = actor.owner_fields()
    if owner["custodian_id"] is None and owner["owner_customer_id"] is None:
        return None
    totals: dict[str, Decimal] = {}
    for item in checked:
        code = _item_currency(item, currency)
        if item.valid and item.amount is not None and code:
            totals[code] = totals.get(code, Decimal(0)) + item.amount
    request = HoldRequest(
        kind=BATCH,
        program_id=scope.program_id,
        sandbox=scope.sandbox,
        initiator_id=scope.user_id,
        customer_id=None if owner["custodian_id"] else owner["owner_customer_id"],
        custodian_id=owner["custodian_id"],
        content=batch_content(checked, currency),
        totals=totals,
        replay={
            "role": scope.role,
            "customerId": str(scope.customer_id) if scope.customer_id else None,
            "custodianId": str(scope.custodian_id) if scope.custodian_id else None,
            "routeCustomerId": str(actor.route_customer.id) if actor.route_customer else None,
            "draftId": str(draft.id) if draft is not None else None,
            "payments": [payment.to_stored() for payment in payments],
        },
    )
    return approval_needed(request)


def batch_from_replay(
    replay: dict[str, Any], *, program_id: Any, sandbox: bool, user_id: Any
) -> tuple[Actor, list[CheckedItem], str | None, Draft | None]:
    """The submit again, as its caller: (actor, items checked now, currency, draft)."""
    scope = Scope(
        program_id=program_id,
        sandbox=sandbox,
        role=replay["role"],
        user_id=user_id,
        customer_id=replay["customerId"],
        custodian_id=replay["custodianId"],
    )
    route_customer = Customer.objects.get(id=replay["routeCustomerId"]) if replay["routeCustomerId"] else None
    actor = Actor(scope=scope, route_customer=route_customer)
    draft = Draft.objects.get(id=replay["draftId"]) if replay["draftId"] else None
    payments = [SentPayment.from_stored(stored) for stored in replay["payments"]]
    checked, currency = payments_checked(actor, payments)
    return actor, checked, currency, draft
