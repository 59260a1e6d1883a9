"""What an operator reads on the pages of a working day: the confirm page of a
held payment, holds by state, the events list, and the zone of every time."""

import html
import re
from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from bankapi.models import Account, Customer
from events.models import Event
from payments.models import Hold
from payments.payees import Payee, UkAccount
from payments.services.acceptance import PaymentInstruction, payment_accept
from tests.backoffice.rows import _events
from tests.batches.factories import make_batch
from tests.support.factories import BeneficiaryFactory


def _text(page) -> str:
    """The page as an operator reads it: tags dropped, spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.content.decode()))


def test_the_confirm_page_of_a_held_payment_names_whose_money_goes_to_whom(staff_client, account):
    Customer.objects.filter(pk=account.customer_id).update(name="Margaret Smith")
    payee = BeneficiaryFactory(customer=account.customer, name="Big Supplier", account_number="12345678")
    instruction = PaymentInstruction(
        amount=Decimal("20000.00"),
        currency="GBP",
        reference="Machinery",
        beneficiary=payee,
        payee=Payee(name=payee.name, account=UkAccount(sort_code="200000", account_number="12345678")),
    )
    held = payment_accept(account=account, instruction=instruction)
    client = staff_client("compliance")

    page = client.post(
        "/admin/payments/paymentrequest/",
        {"action": "approve_held", "_selected_action": [str(held.id)], "index": "0"},
    )

    text = _text(page)
    assert page.status_code == 200 and 'name="reason"' in page.content.decode()
    for heading in ("Customer", "From account", "Payee", "Amount", "Status", "Created"):
        assert f" {heading} " in text
    assert " Margaret Smith " in text and " Big Supplier, 200000 12345678 " in text
    assert " 20,000.00 GBP " in text and " Held for compliance review " in text
    assert "PENDING_TM" not in text and "20000.00" not in text
    assert re.search(r" \d{1,2} \w{3} \d{4}, \d{2}:\d{2} UTC ", text)


def test_holds_filter_open_or_released_and_are_found_by_their_batch(staff_client, account):
    batch = make_batch(account=account, owner_customer=account.customer)
    now = timezone.now()
    open_hold = Hold.objects.create(
        account=account, amount=Decimal("5.00"), placed_at=now, memo=f"Batch {batch.id} item 0"
    )
    released = Hold.objects.create(
        account=account,
        amount=Decimal("6.00"),
        placed_at=now,
        released_at=now,
        memo=f"Batch {batch.id} item 1",
    )
    other = Hold.objects.create(
        account=account, amount=Decimal("7.00"), placed_at=now, memo="Batch elsewhere item 0"
    )
    # The account's held amount is its open holds' sum (the ledger check after each test says so).
    Account.objects.filter(pk=account.pk).update(held=Decimal("12.00"))
    client = staff_client("operations")
    url = "/admin/payments/hold/"

    def found(**query) -> set:
        page = client.get(url, query)
        assert page.status_code == 200
        return {hold.pk for hold in page.context["cl"].result_list}

    assert found(state="open") == {open_hold.pk, other.pk}
    assert found(state="released") == {released.pk}
    assert found(q=str(batch.id).upper()) == {open_hold.pk, released.pk}
    assert found(q=str(batch.id), state="open") == {open_hold.pk}
    assert found(q=account.account_number) == {open_hold.pk, released.pk, other.pk}
    assert "Open (lowers the available balance)" in _text(client.get(url))


def test_the_events_list_says_it_is_read_only_pages_by_25_and_filters_by_date(staff_client, customer):
    _events(customer, 48)
    Event.objects.filter(pk__in=Event.objects.order_by("pk").values("pk")[:10]).update(
        created_at=timezone.now() - timedelta(days=40)
    )
    client = staff_client("operations")

    page = client.get("/admin/events/event/")
    # The filter's own link, as an operator clicks it.
    (past_week,) = re.findall(
        r'href="(\?[^"]*created_at__gte=[^"]*)"[^>]*>\s*Past 7 days', page.content.decode()
    )
    this_week = client.get("/admin/events/event/" + html.unescape(past_week))

    text = _text(page)
    assert "Events (read-only" in text and "to change" not in text
    assert len(page.context["cl"].result_list) == 25
    assert " By created at " in text and " Past 7 days " in text
    assert this_week.context["cl"].result_count == Event.objects.count() - 10


def test_every_time_on_a_list_and_a_record_page_names_its_zone(staff_client, account):
    batch = make_batch(account=account, owner_customer=account.customer)
    client = staff_client("operations")

    texts = [
        _text(client.get("/admin/batches/batch/")),
        _text(client.get(f"/admin/batches/batch/{batch.pk}/change/")),
    ]

    for text in texts:
        times = re.findall(r"\d{1,2} \w{3} \d{4}, \d{2}:\d{2}(?: \w+)?", text)
        assert times and all(time.endswith(" UTC") for time in times), times
        assert "a.m." not in text and "p.m." not in text
