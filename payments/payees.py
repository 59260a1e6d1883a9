"""Who a payment pays, in the domain's own names.

These types are what services pass around and what the database keeps in its
JSON columns (`PaymentRequest.payee`, `ScheduledPayment.details`). The API's
field names (`sortCode`, `accountType`, ...) are the serializers' business: they
convert at the edge (`payments.serializers.payee_from_wire`), so renaming an API
field never touches a stored row. docs/stored-data.md says more.

The stored form (`to_stored` / `from_stored`) is plain JSON with snake_case keys;
`from_stored` reads only what `to_stored` writes, and a migration rewrites rows
whenever that form changes.
"""

from dataclasses import dataclass
from typing import Any

# A payee in its stored form, where a frozen signature still takes a dict.
StoredPayee = dict[str, Any]


@dataclass(frozen=True)
class UkAccount:
    """A UK account: sort code (6 digits, no hyphens) and account number (8 digits)."""

    sort_code: str
    account_number: str

    def to_stored(self) -> dict[str, str]:
        return {"kind": "uk", "sort_code": self.sort_code, "account_number": self.account_number}


@dataclass(frozen=True)
class IbanAccount:
    """An account named by IBAN (normalised), with its BIC when one was given."""

    iban: str
    bic: str = ""

    def to_stored(self) -> dict[str, str]:
        stored = {"kind": "iban", "iban": self.iban}
        if self.bic:
            stored["bic"] = self.bic
        return stored


PayeeAccount = UkAccount | IbanAccount


def account_from_stored(data: dict[str, Any]) -> PayeeAccount:
    kind = data["kind"]
    if kind == "uk":
        return UkAccount(sort_code=data["sort_code"], account_number=data["account_number"])
    if kind == "iban":
        return IbanAccount(iban=data["iban"], bic=data.get("bic", ""))
    raise ValueError(f"Unknown stored account kind {kind!r}.")


@dataclass(frozen=True)
class Payee:
    """The payee as paid: a name, an account, and its type (CONSUMER, BUSINESS)
    when known, else ""."""

    name: str
    account: PayeeAccount
    payee_type: str = ""

    @property
    def is_uk(self) -> bool:
        return isinstance(self.account, UkAccount)

    def to_stored(self) -> StoredPayee:
        stored: StoredPayee = {"name": self.name, "account": self.account.to_stored()}
        if self.payee_type:
            stored["payee_type"] = self.payee_type
        return stored

    @classmethod
    def from_stored(cls, data: StoredPayee) -> "Payee":
        return cls(
            name=data["name"],
            account=account_from_stored(data["account"]),
            payee_type=data.get("payee_type", ""),
        )


def payee_of(stored: StoredPayee | None) -> Payee | None:
    """The payee a stored form holds (None for none: a crypto-funded payment)."""
    return None if stored is None else Payee.from_stored(stored)


def payee_stored(payee: Payee | None) -> StoredPayee | None:
    """`payee_of`'s inverse: the stored form a payment request keeps."""
    return None if payee is None else payee.to_stored()


@dataclass(frozen=True)
class ScheduleDetails:
    """What a schedule pays besides its amount, currency, reference and saved
    beneficiary: kept with the schedule, read again on every run."""

    purpose: str = ""
    charge_bearer: str = ""
    # The inline payee; None when the schedule pays a saved beneficiary (read
    # as it is on the day of each run).
    payee: Payee | None = None
    virtual_iban: str = ""
    fee_waived: bool = False

    def to_stored(self) -> dict[str, Any]:
        return {
            "purpose": self.purpose,
            "charge_bearer": self.charge_bearer,
            "payee": None if self.payee is None else self.payee.to_stored(),
            "virtual_iban": self.virtual_iban,
            "fee_waived": self.fee_waived,
        }

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "ScheduleDetails":
        return cls(
            purpose=data.get("purpose", ""),
            charge_bearer=data.get("charge_bearer", ""),
            payee=payee_of(data.get("payee")),
            virtual_iban=data.get("virtual_iban", ""),
            fee_waived=data.get("fee_waived", False),
        )
