"""The payee of a batch item, in the domain's own names.

What the item rules made of the payee sent: its account normalised when valid,
as sent otherwise (an invalid item keeps what it was sent, to show its reasons
against). `BatchItem.payee` keeps it in its stored form (`to_stored`); the API
shows it as `{name, accountNumber, sortCode, iban, bic}` (`batches.presenters`).
"""

import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from payments.payees import IbanAccount, Payee, PayeeAccount, UkAccount

_TEXTS = ("sort_code", "account_number", "iban", "bic")


@dataclass(frozen=True)
class ItemPayee:
    name: str
    sort_code: str | None = None
    account_number: str | None = None
    iban: str | None = None
    bic: str | None = None
    # CONSUMER or BUSINESS (or what was sent instead, on an invalid item); None when not sent.
    payee_type: str | None = None

    def to_stored(self) -> dict[str, Any]:
        stored: dict[str, Any] = {"name": self.name} | {name: getattr(self, name) for name in _TEXTS}
        if self.payee_type is not None:
            stored["payee_type"] = self.payee_type
        return stored

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "ItemPayee":
        return cls(
            name=data["name"],
            **{name: data.get(name) for name in _TEXTS},
            payee_type=data.get("payee_type"),
        )

    def as_paid(self) -> Payee:
        """The payee a valid item pays: an IBAN account when it names one, else a UK account."""
        account: PayeeAccount = (
            IbanAccount(iban=self.iban, bic=self.bic or "")
            if self.iban
            else UkAccount(sort_code=self.sort_code or "", account_number=self.account_number or "")
        )
        return Payee(name=self.name, account=account, payee_type=self.payee_type or "")


@dataclass(frozen=True)
class ItemInstruction:
    """A batch item's payment instruction, whole, as it was given: the payer
    account, the payee, the amount and the currency it is stated in, the
    reference, and its ids (the end-to-end id; from a file also the message,
    payment information and instruction ids, empty when absent).

    Every later reader takes the item's instruction from here: processing and
    the back office's retry decide on it (`payments.decision`), the API, the
    admin, status reports and statements show it. `amount` is None, and
    `account_id` may be, only on an item that was invalid at submit.
    """

    account_id: uuid.UUID | None
    payee: ItemPayee
    amount: Decimal | None
    currency: str
    reference: str
    end_to_end_id: str = ""
    message_id: str = ""
    payment_information_id: str = ""
    instruction_id: str = ""
