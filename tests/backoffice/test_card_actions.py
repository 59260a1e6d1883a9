"""Operations issue cards in the admin (through the card service); every card
page shows the last four digits only, never the PAN or the CVV."""

import pytest
from django.contrib.admin.models import ADDITION, LogEntry

from bankapi.models import Account
from cards.models import Card
from tests.support.factories import funded_account, uk_account

URL = "/admin/cards/card/"


def _issue(client, account_id: str, name: str = "OPS ISSUED"):
    return client.post(f"{URL}add/", {"account": account_id, "name_on_card": name})


@pytest.fixture
def business_account(business) -> Account:
    """A GBP account of a customer of a business program, holding 100,000.00."""
    return funded_account(business.customer, "100000.00", **uk_account())


def test_operations_issue_a_sandbox_card_and_no_page_shows_its_secrets(staff_client, business_account):
    account = business_account
    client = staff_client("operations")

    response = _issue(client, str(account.id))

    assert response.status_code == 302
    card = Card.objects.get(account=account, name_on_card="OPS ISSUED")
    assert len(card.pan) >= 15 and card.last_four == card.pan[-4:]
    assert LogEntry.objects.filter(object_id=str(card.id), action_flag=ADDITION).exists()
    pages = [
        client.get(URL),
        client.get(f"{URL}{card.id}/change/"),
        client.get(f"{URL}{card.id}/history/"),
        client.get(URL, {"q": str(card.id)}),
        client.get("/admin/"),
    ]
    # A PAN is no id: searched, it finds nothing (the page only echoes what was typed).
    by_pan = client.get(URL, {"q": card.pan})

    assert [page.status_code for page in pages] == [200] * len(pages)
    for page in pages:
        html = page.content.decode()
        assert card.pan not in html
        assert f">{card.cvv}<" not in html and f'"{card.cvv}"' not in html
    assert f"•••• {card.last_four}" in pages[1].content.decode()
    assert f"•••• {card.last_four}" in pages[3].content.decode()
    assert by_pan.status_code == 200 and 'id="result_list"' not in by_pan.content.decode()


def test_support_and_compliance_cannot_issue_cards(staff_client, business_account):
    account = business_account
    for group in ("support", "compliance"):
        client = staff_client(group)
        page = client.get(f"{URL}add/")
        response = _issue(client, str(account.id), name=f"NOT {group.upper()}")
        assert (page.status_code, response.status_code) == (403, 403)
        client.logout()
    assert not Card.objects.filter(name_on_card__startswith="NOT ").exists()
