"""The payee of a batch item, in the domain's own names.

What the item rules made of the payee sent: its account normalised when valid,
as sent otherwise (an invalid item keeps what it was sent, to show its reasons
against). `BatchItem.payee` keeps it in its stored form (`to_stored`); the API
shows it as `{name, accountNumber, sortCode, iban, bic}` (`batches.presenters`).
"""

from dataclasses import dataclass
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
