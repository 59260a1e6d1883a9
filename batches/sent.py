"""A batch's payments as the caller sent them, in the domain's own names.

Nothing here is checked yet: a draft keeps what verify (or a pain.001 file) was
sent, and the item rules (`batches.rules`) find each payment valid or give its
reasons. Every field is optional; None means "not sent", which the rules tell
apart from an empty string.

`to_stored` / `from_stored` are how `Draft.payments` keeps them: JSON with
snake_case keys, absent fields left out. The API's names are the edge's business
(`batches.rules.sent_payment_from_wire` and `sent_payment_to_wire`), so renaming
an API field never touches a stored draft.

Each stored key is its field's name: the draft's GET writes stored results in the
API's names without `from_stored` (`batches.rules.WireShape`, made from these
fields), so a stored key that is not its field's name must be written there too.
"""

from dataclasses import dataclass
from datetime import date
from typing import Any


def _sent(value: object) -> dict[str, Any]:
    """The fields of one of the dataclasses below that were sent (read from its
    `__dict__`: a verify of 10,000 payments stores each one)."""
    return {name: item for name, item in vars(value).items() if item is not None}


@dataclass(frozen=True)
class SentAccount:
    """An account object as sent: `kind` is "uk" or "iban" when valid."""

    kind: str | None = None
    sort_code: str | None = None
    account_number: str | None = None
    iban: str | None = None
    bic: str | None = None

    def to_stored(self) -> dict[str, Any]:
        return _sent(self)

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "SentAccount":
        return cls(**data)


def _account_of(data: dict[str, Any], key: str) -> SentAccount | None:
    return SentAccount.from_stored(data[key]) if key in data else None


@dataclass(frozen=True)
class SentPayer:
    """The payer as sent: only the account it pays from."""

    account: SentAccount | None = None

    def to_stored(self) -> dict[str, Any]:
        return {} if self.account is None else {"account": self.account.to_stored()}

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "SentPayer":
        return cls(account=_account_of(data, "account"))


@dataclass(frozen=True)
class SentPayee:
    """The payee as sent: name, account, and its type (CONSUMER, BUSINESS)."""

    name: str | None = None
    account: SentAccount | None = None
    payee_type: str | None = None

    def to_stored(self) -> dict[str, Any]:
        stored = _sent(self)
        if self.account is not None:
            stored["account"] = self.account.to_stored()
        return stored

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "SentPayee":
        return cls(
            name=data.get("name"), account=_account_of(data, "account"), payee_type=data.get("payee_type")
        )


@dataclass(frozen=True)
class SentPayment:
    """One payment of a batch as sent. `amount` is the decimal text sent.
    `end_to_end_id`, `currency` and `instruction_id` come only from a file (its
    transaction's EndToEndId, the currency its amount is stated in, and its
    InstrId when it has one)."""

    payer: SentPayer | None = None
    payee: SentPayee | None = None
    reference: str | None = None
    amount: str | None = None
    end_to_end_id: str | None = None
    currency: str | None = None
    instruction_id: str | None = None

    def to_stored(self) -> dict[str, Any]:
        stored = _sent(self)
        if self.payer is not None:
            stored["payer"] = self.payer.to_stored()
        if self.payee is not None:
            stored["payee"] = self.payee.to_stored()
        return stored

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "SentPayment":
        return cls(
            payer=SentPayer.from_stored(data["payer"]) if "payer" in data else None,
            payee=SentPayee.from_stored(data["payee"]) if "payee" in data else None,
            reference=data.get("reference"),
            amount=data.get("amount"),
            end_to_end_id=data.get("end_to_end_id"),
            currency=data.get("currency"),
            instruction_id=data.get("instruction_id"),
        )


@dataclass(frozen=True)
class FileInstruction:
    """A pain.001 payment instruction (PmtInf): its PmtInfId, its requested
    execution day, and how many of the file's payments it covers (the next
    `count`, in file order)."""

    id: str
    execution_date: date
    count: int

    def to_stored(self) -> dict[str, Any]:
        return {"id": self.id, "execution_date": self.execution_date.isoformat(), "count": self.count}

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "FileInstruction":
        return cls(
            id=data["id"], execution_date=date.fromisoformat(data["execution_date"]), count=data["count"]
        )


@dataclass(frozen=True)
class CheckedPayment:
    """What verification found of one of a draft's payments: its index in the
    draft, the payment as sent, and the reasons it is invalid (none when valid).

    The reasons are the messages the draft's GET shows, kept as text: they are
    what verification said, with the accounts as they were then, and are never
    read back as fields.
    """

    index: int
    payment: SentPayment
    reasons: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.reasons

    def to_stored(self) -> dict[str, Any]:
        stored: dict[str, Any] = {"index": self.index, "payment": self.payment.to_stored()}
        if self.reasons:
            stored["reasons"] = list(self.reasons)
        return stored

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "CheckedPayment":
        return cls(
            index=data["index"],
            payment=SentPayment.from_stored(data["payment"]),
            reasons=tuple(data.get("reasons", ())),
        )
