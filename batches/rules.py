"""The body's shape (a 400) and the rules of each payment item (its reasons).

Shape is about JSON: objects where objects go, strings where strings go, no
unknown or duplicate keys, at most `MAX_PAYMENTS` items. Everything about an
item's content (an empty name, a bad sort code, an amount of zero, a payer the
caller may not pay from, a reference the payer account refuses) is an item rule:
the item is reported invalid with its reasons and the others go on.

Written as plain functions rather than one DRF serializer per item: a batch has
up to 10,000 items and these checks run on every verify, initiate and submit.
"""

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from bankapi.banking import ACCOUNT_NUMBER, SORT_CODE
from bankapi.codes import bic_problem, iban_problem, normalise_bic, normalise_iban
from bankapi.models import Account

MAX_PAYMENTS = 10_000
ITEM_KEYS = {"payer", "payee", "reference", "amount"}
PAYER_KEYS = {"account"}
PAYEE_KEYS = {"name", "account", "accountType"}
ACCOUNT_KEYS = {"type", "sortCode", "accountNumber", "iban", "bic"}
ACCOUNT_TYPES = ("uk", "iban")
PAYEE_TYPES = ("CONSUMER", "BUSINESS")
AMOUNT = re.compile(r"[0-9]+(\.[0-9]{1,2})?")
# MONEY columns hold 16 digits before the point.
MAX_AMOUNT = Decimal("9999999999999999.99")
PAYEE_NAME_MAX = 140
REFERENCE_MAX = 140


def _object_errors(value: Any, path: str, allowed: set[str], strings: set[str]) -> list[dict]:
    if not isinstance(value, dict):
        return [{"field": path, "message": "Must be an object."}]
    errors = [{"field": f"{path}.{key}", "message": "Unknown field."} for key in value if key not in allowed]
    errors += [
        {"field": f"{path}.{key}", "message": "Must be a string."}
        for key in strings
        if key in value and not isinstance(value[key], str)
    ]
    # As every text field of the API: a NUL is refused (PostgreSQL cannot store one in JSON).
    errors += [
        {"field": f"{path}.{key}", "message": "Null characters are not allowed."}
        for key in strings
        if isinstance(value.get(key), str) and "\x00" in value[key]
    ]
    return errors


def payments_shape_errors(payments: Any, path: str = "payments") -> list[dict]:
    """Field errors of the `payments` list's JSON shape (empty when it is fine)."""
    if not isinstance(payments, list):
        return [{"field": path, "message": "Must be an array of payment objects."}]
    if not payments:
        return [{"field": path, "message": "Must hold at least one payment."}]
    if len(payments) > MAX_PAYMENTS:
        return [{"field": path, "message": f"At most {MAX_PAYMENTS} payments per batch."}]
    errors: list[dict] = []
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


def payments_hash(payments: list, draft_id: str | None) -> str:
    """What initiate binds its challenge to: the payments exactly as sent, and the draft."""
    canonical = json.dumps(
        {"payments": payments, "draft": draft_id}, sort_keys=True, separators=(",", ":"), default=str
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

    def find(self, account: dict) -> Account | None:
        if account["type"] == "uk":
            return self.by_uk.get((account["sortCode"], account["accountNumber"]))
        return self.by_iban.get(account["iban"])


@dataclass
class CheckedItem:
    index: int
    payment: dict
    reasons: list[str] = field(default_factory=list)
    payer: Account | None = None
    payee: dict = field(default_factory=dict)
    amount: Decimal | None = None

    @property
    def valid(self) -> bool:
        return not self.reasons


def _account(value: Any, path: str, reasons: list[str]) -> dict | None:
    """The account object normalised, or None with its reasons added."""
    if not isinstance(value, dict):
        reasons.append(f"{path}: required.")
        return None
    kind = value.get("type")
    if kind not in ACCOUNT_TYPES:
        reasons.append(f"{path}.type: must be one of uk, iban.")
        return None
    before = len(reasons)
    if kind == "uk":
        sort_code = value.get("sortCode", "").replace("-", "")
        if not SORT_CODE.fullmatch(sort_code):
            reasons.append(f"{path}.sortCode: must be 6 digits.")
        if not ACCOUNT_NUMBER.fullmatch(value.get("accountNumber", "")):
            reasons.append(f"{path}.accountNumber: must be 8 digits.")
        for name in ("iban", "bic"):
            if name in value:
                reasons.append(f"{path}.{name}: not used with type uk.")
        normalised = {"type": "uk", "sortCode": sort_code, "accountNumber": value.get("accountNumber", "")}
    else:
        iban, bic = value.get("iban", ""), value.get("bic", "")
        iban_error = iban_problem(iban)
        if iban_error:
            reasons.append(f"{path}.iban: {iban_error}")
        bic_error = bic_problem(bic, iban) if bic else None
        if bic_error:
            reasons.append(f"{path}.bic: {bic_error}")
        for name in ("sortCode", "accountNumber"):
            if name in value:
                reasons.append(f"{path}.{name}: not used with type iban.")
        normalised = {"type": "iban", "iban": normalise_iban(iban), "bic": normalise_bic(bic) or None}
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


def _payee(value: Any, reasons: list[str]) -> dict:
    """The payee as a batch item shows it: {name, accountNumber, sortCode, iban, bic}."""
    value = value if isinstance(value, dict) else {}
    name = value.get("name", "")
    if not name.strip():
        reasons.append("payee.name: required.")
    elif len(name) > PAYEE_NAME_MAX:
        reasons.append(f"payee.name: at most {PAYEE_NAME_MAX} characters.")
    if "accountType" in value and value["accountType"] not in PAYEE_TYPES:
        reasons.append("payee.accountType: must be one of CONSUMER, BUSINESS.")
    account = _account(value.get("account"), "payee.account", reasons)
    raw = value.get("account") if isinstance(value.get("account"), dict) else {}
    shown = {
        "name": name,
        "accountNumber": raw.get("accountNumber"),
        "sortCode": raw.get("sortCode"),
        "iban": raw.get("iban"),
        "bic": raw.get("bic"),
    }
    if account is not None:
        shown.update(
            accountNumber=account.get("accountNumber"),
            sortCode=account.get("sortCode"),
            iban=account.get("iban"),
            bic=account.get("bic"),
        )
    if "accountType" in value:
        shown["accountType"] = value["accountType"]
    return shown


@functools.cache
def _reference_charset(pattern: str) -> re.Pattern:
    # The account's pattern is anchored with ^...$; matched whole here instead,
    # since `$` would let a trailing newline through.
    return re.compile(pattern.removeprefix("^").removesuffix("$"))


def _reference(reference: Any, payer: Account | None, reasons: list[str]) -> None:
    reference = reference if isinstance(reference, str) else ""
    low, high = (payer.reference_min, payer.reference_max) if payer else (1, REFERENCE_MAX)
    if len(reference) < max(low, 1):
        reasons.append("reference: required." if not reference else f"reference: at least {low} characters.")
    elif len(reference) > high:
        reasons.append(f"reference: at most {high} characters for the payer account.")
    elif payer is not None and not _reference_charset(payer.reference_pattern).fullmatch(reference):
        reasons.append("reference: holds characters the payer account does not accept.")


def item_check(index: int, payment: dict, book: PayerBook) -> CheckedItem:
    """Every rule of one item, each broken rule one reason."""
    checked = CheckedItem(index=index, payment=payment)
    reasons = checked.reasons
    payer = payment.get("payer")
    if not isinstance(payer, dict):
        payer = {}
    payer_account = _account(payer.get("account"), "payer.account", reasons)
    if payer_account is not None:
        checked.payer = book.find(payer_account)
        if checked.payer is None:
            reasons.append("payer.account: not an account the caller may pay from.")
    # Only a file's payment states its currency (a JSON item cannot: unknown field).
    currency = payment.get("currency")
    if currency is not None and checked.payer is not None and currency != checked.payer.currency:
        reasons.append(f"amount: in {currency}, not the payer account's currency {checked.payer.currency}.")
    checked.payee = _payee(payment.get("payee"), reasons)
    checked.amount = parse_amount(payment.get("amount"))
    if checked.amount is None:
        reasons.append("amount: must be a decimal string above 0 with at most 2 decimals.")
    _reference(payment.get("reference"), checked.payer, reasons)
    return checked


def items_check(payments: list[dict], book: PayerBook) -> tuple[list[CheckedItem], str | None]:
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
