"""Cards and cardholders as the caller may see them."""

from bankapi.models import Account
from bankapi.scope import Scope, get_or_not_found
from cards.errors import CardErrorCode
from cards.models import Card, Cardholder


def card_of(scope: Scope, account: Account, card_id: str) -> Card:
    """The card in the path, on the account already resolved in the caller's scope:
    a card unknown or not on that account (another customer's included), CARD_NOT_FOUND."""
    cards = Card.objects.for_scope(scope).filter(account=account).select_related("program", "account")
    return get_or_not_found(cards, card_id, "Card", CardErrorCode.CARD_NOT_FOUND)


def cardholder_of(scope: Scope, account: Account, cardholder_id: str) -> Cardholder:
    """A cardholder of the account: any other (another account's included) is RESOURCE_NOT_FOUND."""
    return get_or_not_found(
        Cardholder.objects.for_scope(scope).filter(account=account), cardholder_id, "Cardholder"
    )
