"""A statement written out: JSON data, CSV (RFC 4180) and ISO 20022 camt.053.

All three are written from the same `Statement`, so they agree entry by entry.
"""

import csv
import io
import re
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from payments.selectors.ledger import Statement, StatementLine

CAMT053_NAMESPACE = "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"
# The official schema the documents are written against (see iso20022/README.md).
CAMT053_XSD = Path(__file__).parent / "iso20022" / "camt.053.001.08.xsd"

CSV_HEADER = (
    "bookedAt",
    "entryId",
    "creditDebit",
    "amount",
    "balanceAfter",
    "reference",
    "requestId",
    "description",
)
# A spreadsheet reads a cell starting with one of these as a formula.
_FORMULA_STARTS = ("=", "+", "-", "@")
# Characters XML 1.0 cannot carry, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _money(value: Decimal) -> str:
    return f"{value:.2f}"


def _credit_debit(line: StatementLine) -> str:
    return "CRDT" if line.credit else "DBIT"


def statement_data(statement: Statement) -> dict[str, Any]:
    """The JSON body's data."""
    return {
        "accountId": str(statement.account.id),
        "currency": statement.account.currency,
        "from": statement.first_day.isoformat(),
        "to": statement.last_day.isoformat(),
        "openingBalance": _money(statement.opening_balance),
        "closingBalance": _money(statement.closing_balance),
        "entries": [
            {
                "entryId": line.entry_id,
                "bookedAt": line.booked_at.isoformat(),
                "amount": _money(line.amount),
                "creditDebit": _credit_debit(line),
                "balanceAfter": _money(line.balance_after),
                "reference": line.reference,
                "requestId": str(line.request_id) if line.request_id else None,
                "description": line.description,
            }
            for line in statement.lines
        ],
    }


def _csv_cell(value: str) -> str:
    return f"'{value}" if value.startswith(_FORMULA_STARTS) else value


def statement_csv(statement: Statement) -> str:
    """RFC 4180: CRLF line ends, fields quoted where they hold a comma, quote or
    line break; a null is an empty cell; a cell a spreadsheet would read as a
    formula is prefixed with an apostrophe."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(CSV_HEADER)
    for line in statement.lines:
        row = (
            line.booked_at.isoformat(),
            line.entry_id,
            _credit_debit(line),
            _money(line.amount),
            _money(line.balance_after),
            line.reference,
            str(line.request_id) if line.request_id else "",
            line.description,
        )
        writer.writerow([_csv_cell(cell) for cell in row])
    return out.getvalue()


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


class _Writer:
    """Elements of the document (the root declares the camt.053 namespace as the
    default one), children in the schema's order."""

    def add(self, parent: ElementTree.Element, path: str, text: str | None = None, **attrs: str) -> Any:
        """Add the elements of `path` ("A/B/C") under `parent`; the last gets `text`."""
        element = parent
        for name in path.split("/"):
            element = ElementTree.SubElement(element, name)
        if text is not None:
            element.text = _text(text)
        for key, value in attrs.items():
            element.set(key, value)
        return element


def _account_id(w: _Writer, account_element: ElementTree.Element, statement: Statement) -> None:
    account = statement.account
    if account.iban:
        w.add(account_element, "Id/IBAN", account.iban)
        return
    other = w.add(account_element, "Id/Othr")
    if account.sort_code and account.account_number:
        w.add(other, "Id", account.sort_code + account.account_number)
        w.add(other, "SchmeNm/Cd", "BBAN")
    else:
        w.add(other, "Id", account.id.hex)
        w.add(other, "SchmeNm/Prtry", "ACCOUNT-ID")


def _balance(
    w: _Writer, parent: ElementTree.Element, code: str, amount: Decimal, currency: str, day: str
) -> None:
    balance = w.add(parent, "Bal")
    w.add(balance, "Tp/CdOrPrtry/Cd", code)
    w.add(balance, "Amt", _money(amount), Ccy=currency)
    # Balances never go below zero (the ledger refuses it).
    w.add(balance, "CdtDbtInd", "CRDT")
    w.add(balance, "Dt/Dt", day)


def _entry(w: _Writer, parent: ElementTree.Element, line: StatementLine, currency: str) -> None:
    entry = w.add(parent, "Ntry")
    w.add(entry, "Amt", _money(line.amount), Ccy=currency)
    w.add(entry, "CdtDbtInd", _credit_debit(line))
    w.add(entry, "Sts/Cd", "BOOK")
    w.add(entry, "BookgDt/DtTm", line.booked_at.isoformat())
    w.add(entry, "ValDt/Dt", line.booked_at.date().isoformat())
    w.add(entry, "AcctSvcrRef", line.entry_id)
    w.add(entry, "BkTxCd/Prtry/Cd", line.kind)
    details = w.add(entry, "NtryDtls/TxDtls")
    # EndToEndId holds at most 35 characters: the request id without its hyphens.
    w.add(details, "Refs/EndToEndId", line.request_id.hex if line.request_id else "NOTPROVIDED")
    if line.reference:
        w.add(details, "RmtInf/Ustrd", line.reference)


def statement_camt053(statement: Statement, *, message_id: str, created_at: datetime) -> bytes:
    """A camt.053.001.08 document with the statement as its one `Stmt`."""
    w = _Writer()
    document = ElementTree.Element("Document", xmlns=CAMT053_NAMESPACE)
    message = w.add(document, "BkToCstmrStmt")
    header = w.add(message, "GrpHdr")
    w.add(header, "MsgId", message_id)
    w.add(header, "CreDtTm", created_at.isoformat())
    stmt = w.add(message, "Stmt")
    first, last = statement.first_day.isoformat(), statement.last_day.isoformat()
    w.add(stmt, "Id", f"{statement.account.id.hex[:16]}-{first.replace('-', '')}-{last.replace('-', '')}")
    w.add(stmt, "CreDtTm", created_at.isoformat())
    period = w.add(stmt, "FrToDt")
    w.add(period, "FrDtTm", f"{first}T00:00:00Z")
    w.add(period, "ToDtTm", f"{last}T23:59:59Z")
    account = w.add(stmt, "Acct")
    _account_id(w, account, statement)
    currency = statement.account.currency
    w.add(account, "Ccy", currency)
    _balance(w, stmt, "OPBD", statement.opening_balance, currency, first)
    _balance(w, stmt, "CLBD", statement.closing_balance, currency, last)
    for line in statement.lines:
        _entry(w, stmt, line, currency)
    return ElementTree.tostring(document, encoding="utf-8", xml_declaration=True)
