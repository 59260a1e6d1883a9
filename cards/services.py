"""Cards: issuing, cardholders and invitations, and the step-up guarded details.

Each function takes rows already resolved in the caller's scope (see
`cards.selectors`); the views only parse and call one of them.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from django.db import transaction

from authn.models import User
from authn.services.stepup import Confirmation, PasskeyStepUp, step_up_confirm, step_up_passkey_challenge
from bankapi.clock import customer_now
from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.models import Account, Program
from cards.events import card_issued_event
from cards.models import Card, Cardholder
from cards.numbers import CVV_PATTERN, luhn_valid, sandbox_cvv, sandbox_pan

# The step-up purpose a card-details confirmation is bound to (with the card's id).
CARD_DETAILS = "card_details"
# Cards are issued for this many years.
CARD_LIFETIME_YEARS = 3
NAME_ON_CARD_MAX = 26


@dataclass(frozen=True)
class CardSecureDetails:
    pan: str
    cvv: str
    expiry_month: int
    expiry_year: int
    name_on_card: str


@dataclass(frozen=True)
class CardholderAddress:
    address_line1: str
    city: str
    postal_code: str
    country: str
    address_line2: str = ""
    state: str = ""


def cardholders_required(program: Program) -> None:
    """422 NOT_SUPPORTED unless the program's card provider supports cardholders."""
    if not program.cardholders_enabled:
        raise ApiError(ErrorCode.NOT_SUPPORTED, "Cardholders are not supported on this program")


def _name_on_card(text: str) -> str:
    name = " ".join(text.split()).upper()
    if not name or len(name) > NAME_ON_CARD_MAX or not all(char.isascii() for char in name):
        raise validation_error("nameOnCard", f"Must be 1 to {NAME_ON_CARD_MAX} ASCII characters.")
    return name


@dataclass(frozen=True)
class CardNumbers:
    pan: str
    cvv: str
    expiry_month: int
    expiry_year: int


def card_numbers_resolve(
    *,
    account: Account,
    pan: str | None = None,
    cvv: str | None = None,
    expiry_month: int | None = None,
    expiry_year: int | None = None,
) -> CardNumbers:
    """The numbers of a card to issue on the account, checked (400 VALIDATION_ERROR).

    A card processor supplies them. In the sandbox they may all be omitted: a
    Luhn-valid number of the sandbox test range, a random CVV and an expiry three
    years ahead are made up. Production cards need them.
    """
    today = customer_now(account.customer_id).date()
    if pan is None and cvv is None and expiry_month is None and expiry_year is None:
        if not account.sandbox:
            raise validation_error("pan", "Production cards take the numbers their card processor issued.")
        return CardNumbers(sandbox_pan(), sandbox_cvv(), today.month, today.year + CARD_LIFETIME_YEARS)
    if pan is None or not luhn_valid(pan):
        raise validation_error("pan", "Must be 12 to 19 digits passing the Luhn check.")
    if cvv is None or not CVV_PATTERN.fullmatch(cvv):
        raise validation_error("cvv", "Must be 3 or 4 digits.")
    if expiry_month is None or not 1 <= expiry_month <= 12:
        raise validation_error("expiryMonth", "Must be 1 to 12.")
    if expiry_year is None or (expiry_year, expiry_month) < (today.year, today.month):
        raise validation_error("expiryYear", "The card must not have expired.")
    return CardNumbers(pan, cvv, expiry_month, expiry_year)


def card_issue(
    *,
    account: Account,
    name_on_card: str,
    cardholders: Iterable[Cardholder] = (),
    numbers: CardNumbers | None = None,
) -> Card:
    """Issue a card on the account, `nameOnCard` in capitals.

    `numbers` from `card_numbers_resolve`; omitted, sandbox test numbers are made.
    """
    numbers = numbers or card_numbers_resolve(account=account)
    holders = list(cardholders)
    if any(holder.account_id != account.id for holder in holders):
        raise validation_error("cardholders", "Cardholders must be of the card's account.")
    with transaction.atomic():
        card = Card.objects.create(
            program=account.program,
            sandbox=account.sandbox,
            account=account,
            name_on_card=_name_on_card(name_on_card),
            last_four=numbers.pan[-4:],
            expiry_month=numbers.expiry_month,
            expiry_year=numbers.expiry_year,
            pan=numbers.pan,
            cvv=numbers.cvv,
        )
        card.cardholders.add(*holders)
        card_issued_event(card)
    return card


def cardholder_create(
    *,
    account: Account,
    first_name: str = "",
    last_name: str = "",
    email: str = "",
    date_of_birth: date | None = None,
    address: CardholderAddress | None = None,
) -> Cardholder:
    """A new cardholder on the account (input already checked by the route's serializer)."""
    cardholders_required(account.program)
    fields = {}
    if address is not None:
        fields = {
            "address_line1": address.address_line1,
            "address_line2": address.address_line2,
            "city": address.city,
            "state": address.state,
            "postal_code": address.postal_code,
            "country": address.country,
        }
    return Cardholder.objects.create(
        program=account.program,
        sandbox=account.sandbox,
        account=account,
        first_name=first_name,
        last_name=last_name,
        email=email,
        date_of_birth=date_of_birth,
        **fields,
    )


def card_cardholder_ids(card: Card) -> list[str]:
    return [str(pk) for pk in card.cardholders.order_by("created_at", "id").values_list("id", flat=True)]


def card_cardholder_invite(*, card: Card, cardholder: Cardholder) -> list[str]:
    """Put a cardholder of the card's account on the card (again: no change); its cardholder ids."""
    if cardholder.account_id != card.account_id:
        raise ApiError(ErrorCode.RESOURCE_NOT_FOUND, "Cardholder not found")
    card.cardholders.add(cardholder)
    return card_cardholder_ids(card)


def card_passkey_challenge(*, user: User, card: Card) -> PasskeyStepUp:
    """A passkey step-up that reveals this card's details only."""
    return step_up_passkey_challenge(user=user, purpose=CARD_DETAILS, bound_to=str(card.id))


def card_secure_details_reveal(*, user: User, card: Card, confirmation: Confirmation) -> CardSecureDetails:
    """The card's PAN, CVV and expiry, once the user confirmed (see `step_up_confirm`)."""
    step_up_confirm(
        user=user,
        program=card.program,
        confirmation=confirmation,
        purpose=CARD_DETAILS,
        bound_to=str(card.id),
    )
    return CardSecureDetails(
        pan=card.pan,
        cvv=card.cvv,
        expiry_month=card.expiry_month,
        expiry_year=card.expiry_year,
        name_on_card=card.name_on_card,
    )
