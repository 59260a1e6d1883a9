"""Every door that accepts a payment writes the same rows, not just the same answer.

One instruction (an inline payee, so that no door has a beneficiary the others
lack) is accepted through each door from an account in the same state: the
payment route (on PostgreSQL its one statement), the transactional writer the
route falls back to and schedule runs use, and the batch writer that pays
items from held funds. For each, every row the acceptance wrote is read back
(the ledger movement, its postings, the payment request, its event, the
account's ledger fields) with the ids and times that are the door's own
replaced by names, and the doors' rows must be equal.
"""

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from bankapi.errors import ApiError
from bankapi.models import Account, Program
from events.models import Event
from payments.ledger import HoldOrder
from payments.models import LedgerPosting, LedgerTransaction, PaymentRequest
from payments.payees import Payee, UkAccount
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.held import HeldPayment, funds_hold, payments_accept_held
from tests.payments.conftest import payments_url
from tests.support.factories import funded_account, uk_account

pytestmark = pytest.mark.django_db(transaction=True)

PAYEE = {
    "name": "Jane Payee",
    "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
}
# Columns a door sets for itself: row ids and creation times, the log's
# request id, and fan-out progress (in-process fan-out runs after commit).
VOLATILE = {"id", "event_id", "created_at", "updated_at", "written_at", "request_id", "fanned_out", "key"}
# The account's ledger fields besides its booking time (checked on its own).
LEDGER_FIELDS = ("balance", "held", "outbound_day", "outbound_total")

# (case, amount, program settings)
CASES = [
    ("a plain payment", "12.34", {}),
    ("with a fee", "12.34", {"fee_per_payment": Decimal("1.50")}),
    ("held for review at the threshold", "800.00", {"review_threshold": Decimal("800.00")}),
]


def _named(value: Any, names: dict[str, str]) -> Any:
    """`value` with every id of `names` (as UUID, text or hex) replaced by its name."""
    if isinstance(value, dict):
        return {key: _named(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [_named(item, names) for item in value]
    if isinstance(value, uuid.UUID):
        return names.get(str(value), value)
    if isinstance(value, str):
        for known, name in names.items():
            value = value.replace(known, name).replace(known.replace("-", ""), name)
        return value
    return value


def _row(values: dict, names: dict[str, str], since: datetime) -> dict:
    for column, value in values.items():
        if isinstance(value, datetime):
            assert value >= since, f"{column} {value} is before the door ran"
    return {column: _named(value, names) for column, value in values.items() if column not in VOLATILE}


def _written(request_id: uuid.UUID, account: Account, since: datetime) -> dict:
    """Every row the acceptance of `request_id` wrote, its ids named."""
    request = PaymentRequest.objects.filter(id=request_id).values().get()
    entry = LedgerTransaction.objects.filter(id=request["acceptance_id"]).values().get()
    names = {
        str(request_id): "REQUEST",
        str(entry["id"]): "ENTRY",
        str(account.id): "ACCOUNT",
        # The event shows the request's own times.
        request["created_at"].isoformat(): "REQUEST_CREATED",
        request["updated_at"].isoformat(): "REQUEST_UPDATED",
    }
    postings = LedgerPosting.objects.filter(transaction_id=entry["id"]).order_by("amount").values()
    events = Event.objects.filter(resource_id=str(request_id)).order_by("id").values()
    after = Account.objects.filter(id=account.id).values(*LEDGER_FIELDS).get()
    posted = LedgerPosting.objects.get(transaction_id=entry["id"], account_id=account.id)
    # The account's booking time is its posting's: the one time a door may choose.
    assert Account.objects.get(id=account.id).last_booked_at == posted.created_at
    return {
        "request": _row(request, names, since),
        "entry": _row(entry, names, since),
        "postings": [_row(posting, names, since) for posting in postings],
        "events": [_row(event, names, since) for event in events],
        "account": after,
        # One booking on the account, whatever the door: a batch's hold and its
        # release are not bookings.
        "account's postings": LedgerPosting.objects.filter(
            account_id=account.id, created_at__gte=since
        ).count(),
    }


def _instruction(amount: str) -> PaymentInstruction:
    return PaymentInstruction(
        amount=Decimal(amount),
        currency="GBP",
        reference="Invoice 42",
        payee=Payee(name="Jane Payee", account=UkAccount(sort_code="200000", account_number="55779911")),
    )


def _by_route(api, auth, account: Account, amount: str) -> uuid.UUID:
    response = api.post(
        payments_url(account.customer_id, account.id),
        {"amount": amount, "reference": "Invoice 42", "payee": PAYEE},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )
    assert response.status_code == 200, response.json()
    return uuid.UUID(response.json()["data"]["bankTransfer"]["requestId"])


def _by_transaction(account: Account, amount: str) -> uuid.UUID:
    with transaction.atomic():
        return payment_accept(account=account, instruction=_instruction(amount)).id


def _by_batch_writer(account: Account, amount: str) -> uuid.UUID:
    """As a batch pays an item: its funds held first, then accepted from them."""
    program = Program.objects.get(id=account.program_id)
    total = Decimal(amount) + program.fee_per_payment
    request_id = uuid.uuid4()
    hold = HoldOrder(id=uuid.uuid4(), account_id=account.id, amount=total)
    with transaction.atomic():
        assert funds_hold([hold]) == {account.id: None}
    assert Account.objects.get(id=account.id).available == Decimal("10000.00") - total
    with transaction.atomic():
        instruction = _instruction(amount)
        assert instruction.payee is not None and instruction.amount is not None
        [accepted] = payments_accept_held(
            program=program,
            sandbox=account.sandbox,
            payments=[
                HeldPayment(
                    request_id=request_id,
                    account_id=account.id,
                    hold_id=hold.id,
                    amount=instruction.amount,
                    currency="GBP",
                    reference=instruction.reference,
                    payee=instruction.payee,
                )
            ],
        )
    assert isinstance(accepted, PaymentRequest), accepted
    return request_id


@pytest.mark.parametrize(("case", "amount", "settings"), CASES, ids=[case for case, _, _ in CASES])
def test_every_door_writes_the_same_rows(api, customer, customer_auth, case, amount, settings):
    Program.objects.filter(id=customer.program_id).update(**settings)
    doors = {
        "route": lambda account: _by_route(api, customer_auth, account, amount),
        "transaction": lambda account: _by_transaction(account, amount),
        "batch": lambda account: _by_batch_writer(account, amount),
    }
    written = {}
    for door, accept in doors.items():
        account = funded_account(customer, "10000.00", **uk_account())
        since = timezone.now()
        written[door] = _written(accept(account), account, since)

    route = written.pop("route")
    for door, rows in written.items():
        for table, expected in route.items():
            assert rows[table] == expected, f"{door} wrote other {table} rows than the route ({case})"


# (case, balance, amount, program settings, code): refused by the decision.
REFUSED = [
    (
        "over the per-payment limit",
        "10000.00",
        "30.00",
        {"per_payment_limit": Decimal("25.00")},
        "LIMIT_EXCEEDED",
    ),
    (
        "over the day's limit",
        "10000.00",
        "30.00",
        {"daily_outbound_limit": Decimal("25.00")},
        "LIMIT_EXCEEDED",
    ),
    ("short of the amount", "20.00", "30.00", {}, "INSUFFICIENT_FUNDS"),
    ("short of the fee", "30.00", "30.00", {"fee_per_payment": Decimal("0.01")}, "INSUFFICIENT_FUNDS"),
]


def _counts() -> tuple[int, ...]:
    return tuple(model.objects.count() for model in (PaymentRequest, LedgerTransaction, LedgerPosting, Event))


def _refusal_by_route(api, auth, account: Account, amount: str) -> str:
    response = api.post(
        payments_url(account.customer_id, account.id),
        {"amount": amount, "reference": "Invoice 42", "payee": PAYEE},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )
    assert response.status_code == 422, response.json()
    return response.json()["code"]


def _refusal_by_transaction(account: Account, amount: str) -> str:
    with pytest.raises(ApiError) as refused, transaction.atomic():
        payment_accept(account=account, instruction=_instruction(amount))
    return str(refused.value.code)


def _refusal_by_batch_writer(account: Account, amount: str) -> str:
    """As a batch pays an item: its funds held first (the hold's own refusal),
    then accepted from them (the decision's)."""
    program = Program.objects.get(id=account.program_id)
    total = Decimal(amount) + program.fee_per_payment
    hold = HoldOrder(id=uuid.uuid4(), account_id=account.id, amount=total)
    with transaction.atomic():
        held = funds_hold([hold])[account.id]
    if held is not None:
        return str(held.code)
    with transaction.atomic():
        [refused] = payments_accept_held(
            program=program,
            sandbox=account.sandbox,
            payments=[
                HeldPayment(
                    request_id=uuid.uuid4(),
                    account_id=account.id,
                    hold_id=hold.id,
                    amount=Decimal(amount),
                    currency="GBP",
                    reference="Invoice 42",
                    payee=Payee(
                        name="Jane Payee", account=UkAccount(sort_code="200000", account_number="55779911")
                    ),
                )
            ],
        )
    assert not isinstance(refused, PaymentRequest)
    return str(refused.code)


@pytest.mark.parametrize(
    ("case", "balance", "amount", "settings", "code"), REFUSED, ids=[case for case, *_ in REFUSED]
)
def test_every_door_refuses_alike_and_writes_nothing(
    api, customer, customer_auth, case, balance, amount, settings, code
):
    Program.objects.filter(id=customer.program_id).update(**settings)
    doors = {
        "route": lambda account: _refusal_by_route(api, customer_auth, account, amount),
        "transaction": lambda account: _refusal_by_transaction(account, amount),
        "batch": lambda account: _refusal_by_batch_writer(account, amount),
    }
    for door, refuse in doors.items():
        account = funded_account(customer, balance, **uk_account())
        counts = _counts()
        before = Account.objects.filter(id=account.id).values(*LEDGER_FIELDS).get()

        assert refuse(account) == code, f"{door} ({case})"

        # A batch's hold that was placed is released: nothing booked, nothing held.
        written = tuple(after - was for after, was in zip(_counts(), counts, strict=True))
        assert written == (0, 0, 0, 0), door
        after = Account.objects.filter(id=account.id).values(*LEDGER_FIELDS).get()
        assert after == before, door


# The card doors: an authorization is decided by the same decision (no fee:
# cards pay none) and cleared from its own hold by the ledger's bulk writer.
NO_FEE_CASES = [
    (case, amount, settings) for case, amount, settings in CASES if "fee_per_payment" not in settings
]


def _card_of(account: Account) -> str:
    from cards.services import card_issue

    return str(card_issue(account=account, name_on_card="JANE PAYER").id)


def _by_card(api, auth, account: Account, amount: str) -> None:
    card_id = _card_of(account)
    authorized = api.post(
        f"/v1/sandbox/cards/{card_id}/authorizations",
        {"amount": amount, "currency": "GBP", "merchantName": "Invoice 42"},
        format="json",
        **auth,
    )
    assert authorized.json()["data"]["status"] == "PENDING", authorized.json()
    authorization_id = authorized.json()["data"]["authorizationId"]
    cleared = api.post(f"/v1/sandbox/card-authorizations/{authorization_id}/clear", {}, format="json", **auth)
    assert cleared.json()["data"]["status"] == "CLEARED", cleared.json()


def _account_moved(account: Account, since: datetime) -> dict:
    postings = LedgerPosting.objects.filter(account_id=account.id, created_at__gte=since)
    return {
        "account": Account.objects.filter(id=account.id).values(*LEDGER_FIELDS).get(),
        "postings": list(postings.values_list("amount", "balance_after")),
    }


@pytest.mark.parametrize(
    ("case", "amount", "settings"), NO_FEE_CASES, ids=[case for case, _, _ in NO_FEE_CASES]
)
def test_a_card_spend_moves_the_account_as_a_payment_does(
    api, customer, customer_auth, case, amount, settings
):
    Program.objects.filter(id=customer.program_id).update(**settings)
    doors = {
        "route": lambda account: _by_route(api, customer_auth, account, amount),
        "batch": lambda account: _by_batch_writer(account, amount),
        "card": lambda account: _by_card(api, customer_auth, account, amount),
    }
    moved = {}
    for door, accept in doors.items():
        account = funded_account(customer, "10000.00", **uk_account())
        since = timezone.now()
        accept(account)
        moved[door] = _account_moved(account, since)
    assert moved["card"] == moved["route"] == moved["batch"], case


def _decline_by_card(api, auth, account: Account, amount: str) -> str:
    response = api.post(
        f"/v1/sandbox/cards/{_card_of(account)}/authorizations",
        {"amount": amount, "currency": "GBP", "merchantName": "Invoice 42"},
        format="json",
        **auth,
    )
    assert response.json()["data"]["status"] == "DECLINED", response.json()
    return response.json()["data"]["declineReason"]


NO_FEE_REFUSED = [case for case in REFUSED if "fee_per_payment" not in case[3]]


@pytest.mark.parametrize(
    ("case", "balance", "amount", "settings", "code"),
    NO_FEE_REFUSED,
    ids=[case for case, *_ in NO_FEE_REFUSED],
)
def test_a_card_is_declined_as_a_payment_is_refused_and_moves_nothing(
    api, customer, customer_auth, case, balance, amount, settings, code
):
    Program.objects.filter(id=customer.program_id).update(**settings)
    refused = funded_account(customer, balance, **uk_account())
    assert _refusal_by_route(api, customer_auth, refused, amount) == code
    account = funded_account(customer, balance, **uk_account())
    ledger = (LedgerTransaction.objects.count(), LedgerPosting.objects.count())
    before = Account.objects.filter(id=account.id).values(*LEDGER_FIELDS).get()

    assert _decline_by_card(api, customer_auth, account, amount) == code, case

    assert (LedgerTransaction.objects.count(), LedgerPosting.objects.count()) == ledger
    assert Account.objects.filter(id=account.id).values(*LEDGER_FIELDS).get() == before
