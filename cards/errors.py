"""The codes only cards answer, registered with their statuses when the app is
ready (see `bankapi.errors`)."""

from bankapi.errors import DomainErrorCode


class CardErrorCode(DomainErrorCode):
    # No such card on the account (another customer's included).
    CARD_NOT_FOUND = "CARD_NOT_FOUND"


STATUSES: dict[DomainErrorCode, int] = {CardErrorCode.CARD_NOT_FOUND: 404}
