"""The body's shape (a 400) and the rules of each payment item (its reasons).

Shape is about JSON: objects where objects go, strings where strings go, no
unknown or duplicate keys, at most `MAX_PAYMENTS` items. Everything about an
item's content (an empty name, a bad sort code, an amount of zero, a payer the
caller may not pay from, a reference the payer account refuses) is an item rule:
the item is reported invalid with its reasons and the others go on.

Written as plain functions rather than one DRF serializer per item: a batch has
up to 10,000 items and these checks run on every verify, initiate and submit.
"""

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from bankapi.banking import ACCOUNT_NUMBER, SORT_CODE
from bankapi.codes import bic_problem, iban_problem, normalise_bic, normalise_iban
from bankapi.formats import single_line_text_problem
from bankapi.identifiers import sepa_identifier_problem
from bankapi.models import Account
from batches.payees import ItemPayee
from batches.sent import CheckedPayment, SentAccount, SentPayee, SentPayer, SentPayment
from payments.decision import currency_refusal
from payments.formats import AMOUNT, MAX_AMOUNT
from payments.rules import account_reference_error

MAX_PAYMENTS = 10_000
ITEM_KEYS = {"payer", "payee", "reference", "amount"}
PAYER_KEYS = {"account"}
PAYEE_KEYS = {"name", "account", "accountType"}
ACCOUNT_KEYS = {"type", "sortCode", "accountNumber", "iban", "bic"}
ACCOUNT_TYPES = ("uk", "iban")
PAYEE_TYPES = ("CONSUMER", "BUSINESS")
PAYEE_NAME_MAX = 140


@dataclass(frozen=True)
class ShapeError:
    """What is wrong with the body's JSON at `field`: a path into the body as
    sent (its keys, dot-separated; "" or `payments` for the list itself)."""

    field: str
    message: str


def _object_errors(value: Any, path: str, allowed: set[str], strings: set[str]) -> list[ShapeError]:
    if not isinstance(value, dict):
        return [ShapeError(path, "Must be an object.")]
    errors = [ShapeError(f"{path}.{key}", "Unknown field.") for key in value if key not in allowed]
    errors += [
        ShapeError(f"{path}.{key}", "Must be a string.")
        for key in strings
        if key in value and not isinstance(value[key], str)
    ]
    # As every text field of the API: a NUL is refused (PostgreSQL cannot store one in JSON).
    errors += [
        ShapeError(f"{path}.{key}", "Null characters are not allowed.")
        for key in strings
        if isinstance(value.get(key), str) and "\x00" in value[key]
    ]
    return errors


def payments_shape_errors(payments: Any, path: str = "payments") -> list[ShapeError]:
    """The errors of the `payments` list's JSON shape (empty when it is fine)."""
    if not isinstance(payments, list):
        return [ShapeError(path, "Must be an array of payment objects.")]
    if not payments:
        return [ShapeError(path, "Must hold at least one payment.")]
    if len(payments) > MAX_PAYMENTS:
        return [ShapeError(path, f"At most {MAX_PAYMENTS} payments per batch.")]
    errors: list[ShapeError] = []
    for index, item in enumerate(payments):
        where = f"{path}.{index}"
        item_errors = _object_errors(item, where, ITEM_KEYS, {"reference", "amount"})
        if isinstance(item, dict):
            for name, keys, strings in (
                ("payer", PAYER_KEYS, set()),
                ("payee", PAYEE_KEYS, {"name", "accountType"}),
            ):
                if name not in item:
                    continue
                party = item[name]
                item_errors += _object_errors(party, f"{where}.{name}", keys, strings)
                if isinstance(party, dict) and "account" in party:
                    item_errors += _object_errors(
                        party["account"], f"{where}.{name}.account", ACCOUNT_KEYS, ACCOUNT_KEYS
                    )
        errors += item_errors
        if len(errors) >= 50:
            # Enough to fix the client; a 10,000-item body of errors helps nobody.
            break
    return errors[:50]


# The API's names of a payment's fields, and the domain's (`batches.sent`).
ACCOUNT_NAMES = {
    "type": "kind",
    "sortCode": "sort_code",
    "accountNumber": "account_number",
    "iban": "iban",
    "bic": "bic",
}
PAYEE_NAMES = {"name": "name", "accountType": "payee_type"}
PAYMENT_NAMES = {
    "reference": "reference",
    "amount": "amount",
    # Only a file's payments carry these two (the JSON body refuses them as unknown fields).
    "endToEndId": "end_to_end_id",
    "currency": "currency",
}


@dataclass(frozen=True)
class WireShape:
    """How one of `batches.sent`'s dataclasses, in its stored form (`to_stored`:
    its field names as keys, absent fields left out), is written in the API's
    names: its text fields (field name, API name) in the order the API writes
    them, then the objects it holds (named alike in both), each with its shape.

    Made from the dataclass's fields and the names above (`wire_shape`), so a
    stored payment is put in the API's names without first becoming a dataclass:
    the draft's GET does this for up to 10,000 payments.
    """

    texts: tuple[tuple[str, str], ...]
    nested: tuple[tuple[str, "WireShape"], ...] = ()
    # Fields the API does not show (kept for the service's own use).
    hidden: tuple[str, ...] = ()

    def render(self, stored: dict[str, Any]) -> dict[str, Any]:
        """`stored` in the API's names: the keys the API's names give, in that
        order, then the objects it holds; absent fields stay absent."""
        # Loops, not a comprehension: one call of this per object of each of
        # 10,000 payments, and a comprehension is one function call more.
        wire = {}
        for name, api in self.texts:
            value = stored.get(name)
            if value is not None:
                wire[api] = value
        for name, shape in self.nested:
            value = stored.get(name)
            if value is not None:
                wire[name] = shape.render(value)
        return wire


def wire_shape(
    cls: type,
    names: dict[str, str],
    nested: dict[str, WireShape] | None = None,
    hidden: frozenset[str] = frozenset(),
) -> WireShape:
    """The shape of `cls` from its fields: each is a text field named in `names`
    (API name -> field name), an object field of `nested`, or one the API does
    not show (`hidden`). A field that is none of these, or a name that is no
    field, is an error at import: a field added to a dataclass without an API
    name would otherwise vanish from what is shown unnoticed."""
    nested = nested or {}
    fields = [field.name for field in dataclasses.fields(cls)]
    unnamed = set(fields) - set(names.values()) - set(nested) - hidden
    unknown = (set(names.values()) | set(nested)) - set(fields)
    if unnamed or unknown:
        raise TypeError(
            f"{cls.__name__}: fields without an API name {sorted(unnamed)}, "
            f"names of no field {sorted(unknown)}."
        )
    return WireShape(
        texts=tuple((name, api) for api, name in names.items()),
        nested=tuple((name, nested[name]) for name in fields if name in nested),
        hidden=tuple(name for name in fields if name in hidden),
    )


# The stored form of each dataclass of a sent payment, in the API's names.
ACCOUNT_SHAPE = wire_shape(SentAccount, ACCOUNT_NAMES)
PAYER_SHAPE = wire_shape(SentPayer, {}, {"account": ACCOUNT_SHAPE})
PAYEE_SHAPE = wire_shape(SentPayee, PAYEE_NAMES, {"account": ACCOUNT_SHAPE})
# A file transaction's InstrId is kept on its item (and its statement entry),
# not shown as part of the payment sent: nor is it part of what initiate binds.
PAYMENT_SHAPE = wire_shape(
    SentPayment,
    PAYMENT_NAMES,
    {"payer": PAYER_SHAPE, "payee": PAYEE_SHAPE},
    hidden=frozenset({"instruction_id"}),
)


# What `checked_payments_to_wire` writes of a `CheckedPayment`: a field added to
# it must be written there too.
CHECKED_FIELDS = ("index", "payment", "reasons")
if tuple(field.name for field in dataclasses.fields(CheckedPayment)) != CHECKED_FIELDS:
    raise TypeError(f"CheckedPayment's fields are not {CHECKED_FIELDS}: write the new ones to the API too.")


def checked_payments_to_wire(stored: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Stored verification results (`CheckedPayment.to_stored()` of each) as the
    draft's GET shows them: `{index, payment}` of a valid payment, `{index,
    payment, reasons}` of an invalid one, the payment in the API's names exactly
    as it was sent. Written from the stored JSON directly, not through a
    `CheckedPayment.from_stored()` each."""
    render = PAYMENT_SHAPE.render
    shown = []
    for entry in stored or ():
        data = {"index": entry["index"], "payment": render(entry["payment"])}
        reasons = entry.get("reasons")
        if reasons:
            data["reasons"] = reasons
        shown.append(data)
    return shown


def _texts(data: dict, names: dict[str, str], nested: set[str]) -> dict[str, str]:
    """`data`'s text fields under their domain names. Anything else (a key not
    named, a value not a string) is a ValueError: the body's shape was checked
    before, so it would be a bug, never a silently dropped field."""
    texts = {}
    for key, value in data.items():
        if key in nested:
            continue
        if key not in names or not isinstance(value, str):
            raise ValueError(f"Not a field of a batch payment as sent: {key!r}.")
        texts[names[key]] = value
    return texts


def _object(data: dict, key: str) -> dict | None:
    value = data.get(key)
    if value is not None and not isinstance(value, dict):
        raise ValueError(f"{key!r} of a batch payment as sent is not an object.")
    return value


def _account_from_wire(data: dict | None) -> SentAccount | None:
    return None if data is None else SentAccount(**_texts(data, ACCOUNT_NAMES, set()))


def sent_payment_from_wire(payment: dict) -> SentPayment:
    """A payment of a body whose shape `payments_shape_errors` passed (or of a
    pain.001 read into that shape), in the domain's names."""
    payer, payee = _object(payment, "payer"), _object(payment, "payee")
    return SentPayment(
        payer=None if payer is None else SentPayer(account=_account_from_wire(_object(payer, "account"))),
        payee=None
        if payee is None
        else SentPayee(
            **_texts(payee, PAYEE_NAMES, {"account"}), account=_account_from_wire(_object(payee, "account"))
        ),
        **_texts(payment, PAYMENT_NAMES, {"payer", "payee"}),
    )


def sent_payment_to_wire(payment: SentPayment) -> dict:
    """The payment in the API's names, exactly as it was sent (`sent_payment_from_wire`'s
    inverse): its stored form written by `PAYMENT_SHAPE`, as the draft's GET writes
    stored payments, so the mapping to the API's names is written once."""
    return PAYMENT_SHAPE.render(payment.to_stored())


def payments_hash(payments: list[SentPayment], draft_id: str | None) -> str:
    """What initiate binds its challenge to: the payments exactly as sent (in the
    API's names, whatever names they are stored under), and the draft."""
    canonical = json.dumps(
        {"payments": [sent_payment_to_wire(payment) for payment in payments], "draft": draft_id},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class PayerBook:
    """The accounts a caller may pay from, found by their identifiers."""

    by_uk: dict[tuple[str, str], Account]
    by_iban: dict[str, Account]

    @classmethod
    def of(cls, accounts) -> "PayerBook":
        by_uk, by_iban = {}, {}
        for account in accounts:
            if account.sort_code and account.account_number:
                by_uk[(account.sort_code, account.account_number)] = account
            if account.iban:
                by_iban[account.iban] = account
        return cls(by_uk=by_uk, by_iban=by_iban)

    def find(self, account: SentAccount) -> Account | None:
        """The caller's account a normalised account (see `_account`) names, if any."""
        if account.kind == "uk":
            return self.by_uk.get((account.sort_code or "", account.account_number or ""))
        return self.by_iban.get(account.iban or "")


@dataclass
class CheckedItem:
    index: int
    payment: SentPayment
    reasons: list[str] = field(default_factory=list)
    payer: Account | None = None
    payee: ItemPayee = field(default_factory=lambda: ItemPayee(name=""))
    amount: Decimal | None = None
    # The currency the payment is instructed in (see `item_check`).
    currency: str = ""

    @property
    def valid(self) -> bool:
        return not self.reasons


def _account(value: SentAccount | None, path: str, reasons: list[str]) -> SentAccount | None:
    """The account normalised (a UK sort code without hyphens, an IBAN and BIC in
    their normal form), or None with its reasons added. Reasons name the API's fields."""
    if value is None:
        reasons.append(f"{path}: required.")
        return None
    if value.kind not in ACCOUNT_TYPES:
        reasons.append(f"{path}.type: must be one of uk, iban.")
        return None
    before = len(reasons)
    if value.kind == "uk":
        sort_code = (value.sort_code or "").replace("-", "")
        account_number = value.account_number or ""
        if not SORT_CODE.fullmatch(sort_code):
            reasons.append(f"{path}.sortCode: must be 6 digits.")
        if not ACCOUNT_NUMBER.fullmatch(account_number):
            reasons.append(f"{path}.accountNumber: must be 8 digits.")
        for name, sent in (("iban", value.iban), ("bic", value.bic)):
            if sent is not None:
                reasons.append(f"{path}.{name}: not used with type uk.")
        normalised = SentAccount(kind="uk", sort_code=sort_code, account_number=account_number)
    else:
        iban, bic = value.iban or "", value.bic or ""
        iban_error = iban_problem(iban)
        if iban_error:
            reasons.append(f"{path}.iban: {iban_error}")
        bic_error = bic_problem(bic, iban) if bic else None
        if bic_error:
            reasons.append(f"{path}.bic: {bic_error}")
        for name, sent in (("sortCode", value.sort_code), ("accountNumber", value.account_number)):
            if sent is not None:
                reasons.append(f"{path}.{name}: not used with type iban.")
        normalised = SentAccount(kind="iban", iban=normalise_iban(iban), bic=normalise_bic(bic) or None)
    return normalised if len(reasons) == before else None


def parse_amount(value: Any) -> Decimal | None:
    """A positive amount with at most two decimals, as a decimal string; else None."""
    if not isinstance(value, str) or not AMOUNT.fullmatch(value):
        return None
    try:
        amount = Decimal(value)
    except InvalidOperation:
        return None
    return amount if Decimal(0) < amount <= MAX_AMOUNT else None


def _payee(value: SentPayee | None, reasons: list[str]) -> ItemPayee:
    """The payee as its batch item keeps it."""
    value = value or SentPayee()
    name = value.name or ""
    if not name.strip():
        reasons.append("payee.name: required.")
    elif len(name) > PAYEE_NAME_MAX:
        reasons.append(f"payee.name: at most {PAYEE_NAME_MAX} characters.")
    elif problem := single_line_text_problem(name):
        reasons.append(f"payee.name: {problem[0].lower()}{problem[1:]}")
    if value.payee_type is not None and value.payee_type not in PAYEE_TYPES:
        reasons.append("payee.accountType: must be one of CONSUMER, BUSINESS.")
    # As normalised when valid, else as sent.
    account = _account(value.account, "payee.account", reasons) or value.account or SentAccount()
    return ItemPayee(
        name=name,
        sort_code=account.sort_code,
        account_number=account.account_number,
        iban=account.iban,
        bic=account.bic,
        payee_type=value.payee_type,
    )


def _reference(reference: Any, payer: Account | None, reasons: list[str]) -> None:
    """The payer account's reference rules, as every payment from it meets them
    (`payments.rules`); without a payer (itself a reason) only the longest
    reference any account takes."""
    reference = reference if isinstance(reference, str) else ""
    error = account_reference_error(payer, reference)
    if error is not None:
        reasons.append(f"reference: {error}")


def item_check(index: int, payment: SentPayment, book: PayerBook) -> CheckedItem:
    """Every rule of one item, each broken rule one reason."""
    checked = CheckedItem(index=index, payment=payment)
    reasons = checked.reasons
    payer_account = _account((payment.payer or SentPayer()).account, "payer.account", reasons)
    if payer_account is not None:
        checked.payer = book.find(payer_account)
        if checked.payer is None:
            reasons.append("payer.account: not an account the caller may pay from.")
    # Only a file's payment states its currency (a JSON item cannot: unknown
    # field); a JSON item pays in its payer account's.
    if checked.payer is not None:
        checked.currency = payment.currency if payment.currency is not None else checked.payer.currency
        mismatch = currency_refusal(checked.currency, checked.payer.currency)
        if mismatch is not None:
            reasons.append(mismatch)
    else:
        checked.currency = payment.currency or ""
    checked.payee = _payee(payment.payee, reasons)
    checked.amount = parse_amount(payment.amount)
    if checked.amount is None:
        reasons.append("amount: must be a decimal string above 0 with at most 2 decimals.")
    _reference(payment.reference, checked.payer, reasons)
    # Only a file's payment has one.
    if payment.end_to_end_id is not None and (problem := sepa_identifier_problem(payment.end_to_end_id)):
        reasons.append(f"endToEndId: {problem}")
    return checked


def items_check(payments: list[SentPayment], book: PayerBook) -> tuple[list[CheckedItem], str | None]:
    """Check every item; the batch's currency is its first valid payer's.

    A payer account in another currency makes its item invalid: one batch
    authorises one total in one currency.
    """
    checked = [item_check(index, payment, book) for index, payment in enumerate(payments)]
    # A valid item always has its payer: a missing one is a reason.
    payers = [(item, item.payer) for item in checked if item.valid and item.payer is not None]
    currency = payers[0][1].currency if payers else None
    for item, payer in payers:
        if payer.currency != currency:
            item.reasons.append(f"payer.account: in {payer.currency}, not the batch currency {currency}.")
    return checked, currency
