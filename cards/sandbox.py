"""`bootstrap_sandbox`, cards part: a card on `accountId` for each sandbox customer,
with a Luhn-valid test number, `nameOnCard` the customer's name in capitals."""

from bankapi.models import Account
from bankapi.sandbox import SandboxContext
from cards.models import Card
from cards.services import card_issue

CARD_CUSTOMERS = ("customer", "customer2", "business")


def bootstrap(ctx: SandboxContext) -> None:
    for key in CARD_CUSTOMERS:
        customer = ctx.objects[key]
        account = Account.objects.get(id=ctx.output[key]["accountId"])
        # The oldest card of the account is the sandbox's: a rerun finds it again,
        # and cards issued since in admin do not change what is printed.
        card = Card.objects.filter(account=account).order_by("created_at", "id").first()
        if card is None:
            card = card_issue(account=account, name_on_card=customer.name)
        ctx.output[key]["cardId"] = str(card.id)
