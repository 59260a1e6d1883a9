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
from xml.sax.saxutils import escape

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
    """Text as element content: escaped, and what XML 1.0 cannot carry replaced."""
    return escape(_NOT_XML.sub("\ufffd", value))


def _element(path: str, text: str) -> str:
    """`<A><B>text</B></A>` for the path "A/B"; `text` already written as content."""
    names = path.split("/")
    return "".join(f"<{name}>" for name in names) + text + "".join(f"</{name}>" for name in reversed(names))


def _account_id(statement: Statement) -> str:
    account = statement.account
    if account.iban:
        return _element("Id/IBAN", _text(account.iban))
    if account.sort_code and account.account_number:
        identifier = _element("Id", _text(account.sort_code + account.account_number))
        scheme = _element("SchmeNm/Cd", "BBAN")
    else:
        identifier, scheme = _element("Id", account.id.hex), _element("SchmeNm/Prtry", "ACCOUNT-ID")
    return _element("Id/Othr", identifier + scheme)


def _balance(code: str, amount: Decimal, currency: str, day: str) -> str:
    # Balances never go below zero (the ledger refuses it).
    return _element(
        "Bal",
        _element("Tp/CdOrPrtry/Cd", code)
        + f'<Amt Ccy="{currency}">{_money(amount)}</Amt>'
        + _element("CdtDbtInd", "CRDT")
        + _element("Dt/Dt", day),
    )


def _entry(line: StatementLine, currency: str) -> str:
    # EndToEndId holds at most 35 characters: the request id without its hyphens.
    end_to_end = line.request_id.hex if line.request_id else "NOTPROVIDED"
    remittance = _element("RmtInf/Ustrd", _text(line.reference)) if line.reference else ""
    return (
        f'<Ntry><Amt Ccy="{currency}">{_money(line.amount)}</Amt>'
        f"<CdtDbtInd>{_credit_debit(line)}</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts>"
        f"<BookgDt><DtTm>{line.booked_at.isoformat()}</DtTm></BookgDt>"
        f"<ValDt><Dt>{line.booked_at.date().isoformat()}</Dt></ValDt>"
        f"<AcctSvcrRef>{_text(line.entry_id)}</AcctSvcrRef>"
        f"<BkTxCd><Prtry><Cd>{_text(line.kind)}</Cd></Prtry></BkTxCd>"
        f"<NtryDtls><TxDtls><Refs><EndToEndId>{end_to_end}</EndToEndId></Refs>{remittance}</TxDtls></NtryDtls>"
        "</Ntry>"
    )


def statement_camt053(statement: Statement, *, message_id: str, created_at: datetime) -> bytes:
    """A camt.053.001.08 document with the statement as its one `Stmt`, its
    elements in the schema's order. Written as text, element by element: a year
    of entries is hundreds of thousands of elements, too many to build as a tree."""
    first, last = statement.first_day.isoformat(), statement.last_day.isoformat()
    currency = _text(statement.account.currency)
    created = created_at.isoformat()
    parts = [
        '<?xml version="1.0" encoding="utf-8"?>\n',
        f'<Document xmlns="{CAMT053_NAMESPACE}"><BkToCstmrStmt>',
        _element("GrpHdr", _element("MsgId", _text(message_id)) + _element("CreDtTm", created)),
        "<Stmt>",
        _element("Id", f"{statement.account.id.hex[:16]}-{first.replace('-', '')}-{last.replace('-', '')}"),
        _element("CreDtTm", created),
        _element(
            "FrToDt", _element("FrDtTm", f"{first}T00:00:00Z") + _element("ToDtTm", f"{last}T23:59:59Z")
        ),
        _element("Acct", _account_id(statement) + _element("Ccy", currency)),
        _balance("OPBD", statement.opening_balance, currency, first),
        _balance("CLBD", statement.closing_balance, currency, last),
    ]
    parts += [_entry(line, currency) for line in statement.lines]
    parts.append("</Stmt></BkToCstmrStmt></Document>")
    return "".join(parts).encode()
