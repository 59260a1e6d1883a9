"""A statement written out: JSON (the whole body), CSV (RFC 4180) and ISO
20022 camt.053.

All three are written from one read of the ledger, the same rows in the same
order, so they agree entry by entry. Each line's fixed part (ids, times,
amounts, codes: nothing to escape) is written by the database as it reads the
rows, in the format's `LineLayout`; the free text (reference, description) is
escaped here, each distinct text once.
"""

import re
from datetime import date, datetime
from json.encoder import encode_basestring as _encode_json_string
from pathlib import Path
from xml.sax.saxutils import escape

from bankapi.models import Account
from payments.selectors.ledger import Field, LineLayout, Statement, account_statement

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
# A text cell holding one of these is quoted (as csv.writer's minimal quoting does).
_CSV_QUOTED = (",", '"', "\r", "\n")
# Characters XML 1.0 cannot carry, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

# A JSON entry up to its reference: then reference, requestId, description.
JSON_LAYOUT = LineLayout(
    "json",
    (
        '{"entryId":"',
        Field.ENTRY_ID,
        '","bookedAt":"',
        Field.BOOKED_AT,
        '","amount":"',
        Field.AMOUNT,
        '","creditDebit":"',
        Field.CREDIT_DEBIT,
        '","balanceAfter":"',
        Field.BALANCE_AFTER,
        '","reference":',
    ),
)
# A CSV row up to its reference: then reference, requestId, description.
CSV_LAYOUT = LineLayout(
    "csv",
    (
        Field.BOOKED_AT,
        ",",
        Field.ENTRY_ID,
        ",",
        Field.CREDIT_DEBIT,
        ",",
        Field.AMOUNT,
        ",",
        Field.BALANCE_AFTER,
        ",",
    ),
)
# A camt.053 `Ntry` up to its remittance information, in the schema's order.
# `EndToEndId` holds at most 35 characters: the request id without its hyphens.
# `BkTxCd/Prtry/Cd` (the schema requires a code) is the movement's kind.
CAMT053_LAYOUT = LineLayout(
    "camt053",
    (
        '<Ntry><Amt Ccy="',
        Field.CURRENCY,
        '">',
        Field.AMOUNT,
        "</Amt><CdtDbtInd>",
        Field.CREDIT_DEBIT,
        "</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts><BookgDt><DtTm>",
        Field.BOOKED_AT,
        "</DtTm></BookgDt><ValDt><Dt>",
        Field.BOOKED_DAY,
        "</Dt></ValDt><AcctSvcrRef>",
        Field.ENTRY_ID,
        "</AcctSvcrRef><BkTxCd><Prtry><Cd>",
        Field.KIND,
        "</Cd></Prtry></BkTxCd><NtryDtls><TxDtls><Refs><EndToEndId>",
        Field.END_TO_END,
        "</EndToEndId></Refs>",
    ),
)


def statement_read(account: Account, first_day: date, last_day: date, layout: LineLayout) -> Statement:
    """The statement of the account's days `first_day`..`last_day`, its lines
    ready for the format of `layout`."""
    return account_statement(account, first_day, last_day, layout)


def statement_json(statement: Statement) -> bytes:
    """The JSON body, envelope included: `{"success": true, "data": {...}}`,
    byte for byte what the API's JSON renderer (compact, UTF-8, U+2028 and
    U+2029 escaped) writes for the same data, but written line by line instead
    of from a dict per entry (a year holds a hundred thousand)."""
    if statement.layout is not JSON_LAYOUT:
        raise ValueError("statement_json writes a statement read with JSON_LAYOUT")
    account, text = statement.account, _encode_json_string
    escaped: dict[str, str] = {}

    def json_text(value: str) -> str:
        found = escaped.get(value)
        if found is None:
            found = escaped[value] = text(value)
        return found

    entries: list[str] = []
    add = entries.append
    for head, reference, request_id, description, _balance in statement.lines:
        request = (
            f',"requestId":"{request_id}","description":'
            if request_id
            else ',"requestId":null,"description":'
        )
        add(head + json_text(reference) + request + json_text(description) + "}")
    body = "".join(
        (
            '{"success":true,"data":{"accountId":',
            text(str(account.id)),
            ',"currency":',
            text(account.currency),
            f',"from":"{statement.first_day.isoformat()}","to":"{statement.last_day.isoformat()}"',
            f',"openingBalance":"{statement.opening_balance}","closingBalance":"{statement.closing_balance}"',
            ',"entries":[',
            ",".join(entries),
            "]}}",
        )
    )
    # As the renderer does: the two line separators JavaScript does not allow in a string.
    return body.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


def _csv_text(value: str, written: dict[str, str]) -> str:
    """A text cell as `csv.writer` (minimal quoting, CRLF) writes it, after the
    formula guard; `written` remembers the cells already made."""
    cell = written.get(value)
    if cell is None:
        cell = f"'{value}" if value.startswith(_FORMULA_STARTS) else value
        if any(c in cell for c in _CSV_QUOTED):
            cell = '"' + cell.replace('"', '""') + '"'
        written[value] = cell
    return cell


def statement_csv(statement: Statement) -> str:
    """RFC 4180: CRLF line ends, fields quoted where they hold a comma, quote or
    line break; a null is an empty cell; a cell a spreadsheet would read as a
    formula is prefixed with an apostrophe. Only the reference and the
    description can hold such characters (the other cells are numbers, times,
    codes and ids, none starting with a formula character)."""
    if statement.layout is not CSV_LAYOUT:
        raise ValueError("statement_csv writes a statement read with CSV_LAYOUT")
    written: dict[str, str] = {}
    rows = [",".join(CSV_HEADER)]
    add = rows.append
    for head, reference, request_id, description, _balance in statement.lines:
        add(f"{head}{_csv_text(reference, written)},{request_id},{_csv_text(description, written)}")
    rows.append("")
    return "\r\n".join(rows)


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


def _balance(code: str, amount: str, currency: str, day: str) -> str:
    # Balances never go below zero (the ledger refuses it).
    return _element(
        "Bal",
        _element("Tp/CdOrPrtry/Cd", code)
        + f'<Amt Ccy="{currency}">{amount}</Amt>'
        + _element("CdtDbtInd", "CRDT")
        + _element("Dt/Dt", day),
    )


def _remittance(reference: str, written: dict[str, str]) -> str:
    """The entry's `RmtInf` for `reference` (none when empty); `written`
    remembers those already made."""
    element = written.get(reference)
    if element is None:
        element = written[reference] = _element("RmtInf/Ustrd", _text(reference)) if reference else ""
    return element


def statement_camt053(statement: Statement, *, message_id: str, created_at: datetime) -> bytes:
    """A camt.053.001.08 document with the statement as its one `Stmt`, its
    elements in the schema's order. Written as text, element by element: a year
    of entries is hundreds of thousands of elements, too many to build as a tree."""
    if statement.layout is not CAMT053_LAYOUT:
        raise ValueError("statement_camt053 writes a statement read with CAMT053_LAYOUT")
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
    written: dict[str, str] = {}
    add = parts.append
    for head, reference, _request_id, _description, _balance_after in statement.lines:
        add(head + _remittance(reference, written) + "</TxDtls></NtryDtls></Ntry>")
    add("</Stmt></BkToCstmrStmt></Document>")
    return "".join(parts).encode()
