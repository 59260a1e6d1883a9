"""A statement written out: JSON (the whole body), CSV (RFC 4180) and ISO
20022 camt.053.

All three are written from the same postings in the same order, so they
agree entry by entry. Each entry is one line of text written from a
`LineLayout`: literal text and the posting's fields, each field escaped for the
format. On PostgreSQL the database writes the lines as it reads the rows (a
year is a hundred thousand of them: one string each reaches Python); elsewhere
Python writes them from the same pieces, to the same text. A day's lines,
joined, are one piece of the body; the pieces of closed days are stored and
reused (`StatementDay`, see `payments.selectors.ledger.account_statement`).
"""

from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from json.encoder import encode_basestring as _json_string
from pathlib import Path

from bankapi.models import Account
from payments.selectors.ledger import LineLayout, Statement, StatementPosting, account_statement
from payments.statement_escapes import csv_cell, csv_sql, sql_literal, xml_sql, xml_text

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
    "endToEndId",
)
# EndToEndId of an entry that books no payment request.
NOT_PROVIDED = "NOTPROVIDED"
# The ledger transaction's column that holds a return's reason code.
MEMO = "memo"


def _remittance(reference: str) -> str:
    """The entry's `RmtInf`: none for an empty reference."""
    return f"<RmtInf><Ustrd>{xml_text(reference)}</Ustrd></RmtInf>" if reference else ""


def _moment(posting: StatementPosting) -> str:
    return posting.booked_at.astimezone(UTC).isoformat()


def _money(value: object) -> str:
    return f"{value:.2f}"


# A field of a line: (SQL over the posting `p` and its booking time's text
# `b.t`, given the identifier quoting function; Python over a StatementPosting).
_Field = tuple[Callable[[Callable[[str], str]], str], Callable[[StatementPosting], str]]
ENTRY_ID: _Field = (lambda n: f"p.{n('id')}::text", lambda p: str(p.id))
# datetime.isoformat() of the UTC moment: six digits of fraction, none when
# they are all zero. (to_char and replace cost the database less than
# PostgreSQL's own text of a time, which drops a fraction's trailing zeros,
# padded back.)
BOOKED_AT: _Field = (lambda n: "replace(b.t, '.000000', '') || '+00:00'", _moment)
BOOKED_DAY: _Field = (lambda n: "left(b.t, 10)", lambda p: _moment(p)[:10])
AMOUNT: _Field = (lambda n: f"abs(p.{n('amount')})::text", lambda p: _money(abs(p.amount)))
CREDIT_DEBIT: _Field = (
    lambda n: f"CASE WHEN p.{n('amount')} > 0 THEN 'CRDT' ELSE 'DBIT' END",
    lambda p: "CRDT" if p.amount > 0 else "DBIT",
)
BALANCE_AFTER: _Field = (lambda n: f"p.{n('balance_after')}::text", lambda p: _money(p.balance_after))
KIND: _Field = (lambda n: f"p.{n('kind')}", lambda p: p.kind)
CURRENCY: _Field = (lambda n: f"p.{n('currency')}", lambda p: p.currency)
REQUEST_ID: _Field = (
    lambda n: f"COALESCE(p.{n('request_id')}::text, '')",
    lambda p: str(p.request_id) if p.request_id else "",
)
REQUEST_JSON: _Field = (
    lambda n: f"COALESCE('\"' || p.{n('request_id')}::text || '\"', 'null')",
    lambda p: f'"{p.request_id}"' if p.request_id else "null",
)


def _end_to_end_sql(n: Callable[[str], str]) -> str:
    """_end_to_end_id in SQL ('' for none)."""
    return (
        f"COALESCE(NULLIF(i.{n('end_to_end_id')}, ''), replace(i.{n('id')}::text, '-', ''), "
        f"NULLIF(p.{n('end_to_end_id')}, ''), replace(p.{n('request_id')}::text, '-', ''), '')"
    )


def _end_to_end_id(posting: StatementPosting) -> str:
    """The entry's end-to-end id: its batch item's (the file's EndToEndId, or a
    JSON item's id), else the one its movement came with (money from another
    bank), else its request id, ids as 32 hex digits (ISO 20022 fields hold 35
    characters), else '' (none)."""
    if posting.item_end_to_end_id:
        return posting.item_end_to_end_id
    if posting.end_to_end_id:
        return posting.end_to_end_id
    return posting.request_id.hex if posting.request_id else ""


def _xml_refs(posting: StatementPosting) -> str:
    """The entry's `Refs` content, in the schema's order: the file's MsgId,
    PmtInfId and InstrId where it had them, EndToEndId, TxId (the request)."""
    parts = [
        f"<{name}>{xml_text(value)}</{name}>"
        for name, value in (
            ("MsgId", posting.message_id),
            ("PmtInfId", posting.payment_information_id),
            ("InstrId", posting.instruction_id),
        )
        if value
    ]
    parts.append(f"<EndToEndId>{xml_text(_end_to_end_id(posting) or NOT_PROVIDED)}</EndToEndId>")
    if posting.request_id:
        parts.append(f"<TxId>{posting.request_id.hex}</TxId>")
    return "".join(parts)


def _xml_refs_sql(n: Callable[[str], str]) -> str:
    """_xml_refs in SQL."""
    optional = [
        f"CASE WHEN COALESCE(i.{n(column)}, '') = '' THEN '' "
        f"ELSE '<{name}>' || {xml_sql(f'i.{n(column)}')} || '</{name}>' END"
        for name, column in (
            ("MsgId", "message_id"),
            ("PmtInfId", "payment_information_id"),
            ("InstrId", "instruction_id"),
        )
    ]
    end_to_end = _end_to_end_sql(n)
    return " || ".join(
        [
            *optional,
            f"'<EndToEndId>' || CASE WHEN {end_to_end} = '' THEN '{NOT_PROVIDED}' "
            f"ELSE {xml_sql(end_to_end)} END || '</EndToEndId>'",
            f"COALESCE('<TxId>' || replace(p.{n('request_id')}::text, '-', '') || '</TxId>', '')",
        ]
    )


def _return_xml(posting: StatementPosting) -> str:
    """A return's `RtrInf` (none on other entries)."""
    if not posting.return_reason:
        return ""
    return f"<RtrInf><Rsn><Cd>{xml_text(posting.return_reason)}</Cd></Rsn></RtrInf>"


REFS_XML: _Field = (_xml_refs_sql, _xml_refs)
RETURN_XML: _Field = (
    lambda n: (
        f"CASE WHEN t.{n(MEMO)} IS NULL THEN '' "
        f"ELSE '<RtrInf><Rsn><Cd>' || {xml_sql(f't.{n(MEMO)}')} || '</Cd></Rsn></RtrInf>' END"
    ),
    _return_xml,
)
END_TO_END_JSON: _Field = (
    lambda n: f"COALESCE(to_json(NULLIF({_end_to_end_sql(n)}, ''))::text, 'null')",
    lambda p: _json_string(_end_to_end_id(p)) if _end_to_end_id(p) else "null",
)
END_TO_END_CSV: _Field = (
    lambda n: csv_sql(_end_to_end_sql(n)),
    lambda p: csv_cell(_end_to_end_id(p)),
)
RETURN_REASON_JSON: _Field = (
    lambda n: f"COALESCE(to_json(t.{n(MEMO)})::text, 'null')",
    lambda p: _json_string(p.return_reason) if p.return_reason else "null",
)
# PostgreSQL's to_json escapes a string as the JSON renderer does (", \, and
# the control characters, as \b \f \n \r \t or \u00xx; nothing else).
REFERENCE_JSON: _Field = (lambda n: f"to_json(p.{n('reference')})::text", lambda p: _json_string(p.reference))
DESCRIPTION_JSON: _Field = (
    lambda n: f"to_json(p.{n('description')})::text",
    lambda p: _json_string(p.description),
)
REFERENCE_CSV: _Field = (lambda n: csv_sql(f"p.{n('reference')}"), lambda p: csv_cell(p.reference))
DESCRIPTION_CSV: _Field = (lambda n: csv_sql(f"p.{n('description')}"), lambda p: csv_cell(p.description))


def _remittance_sql(quote: Callable[[str], str]) -> str:
    """_remittance in SQL."""
    reference = f"p.{quote('reference')}"
    return (
        f"CASE WHEN {reference} = '' THEN '' "
        f"ELSE '<RmtInf><Ustrd>' || {xml_sql(reference)} || '</Ustrd></RmtInf>' END"
    )


REMITTANCE_XML: _Field = (_remittance_sql, lambda p: _remittance(p.reference))


def _parties(posting: StatementPosting) -> str:
    """The entry's `RltdPties`: the party outside the bank its movement names,
    as the debtor of a credit or the creditor of a debit, with its IBAN when
    known (none when the movement names no party)."""
    if not posting.counterparty_name:
        return ""
    role = "Dbtr" if posting.amount > 0 else "Cdtr"
    account = (
        f"<{role}Acct><Id><IBAN>{xml_text(posting.counterparty_iban)}</IBAN></Id></{role}Acct>"
        if posting.counterparty_iban
        else ""
    )
    party = f"<{role}><Pty><Nm>{xml_text(posting.counterparty_name)}</Nm></Pty></{role}>"
    return f"<RltdPties>{party}{account}</RltdPties>"


def _parties_sql(n: Callable[[str], str]) -> str:
    """_parties in SQL."""
    name, iban = f"p.{n('counterparty_name')}", f"p.{n('counterparty_iban')}"
    role = f"CASE WHEN p.{n('amount')} > 0 THEN 'Dbtr' ELSE 'Cdtr' END"
    account = (
        f"CASE WHEN {iban} = '' THEN '' ELSE '<' || {role} || 'Acct><Id><IBAN>' || {xml_sql(iban)} "
        f"|| '</IBAN></Id></' || {role} || 'Acct>' END"
    )
    return (
        f"CASE WHEN {name} = '' THEN '' ELSE '<RltdPties><' || {role} || '><Pty><Nm>' || {xml_sql(name)} "
        f"|| '</Nm></Pty></' || {role} || '>' || {account} || '</RltdPties>' END"
    )


PARTIES_XML: _Field = (_parties_sql, _parties)


def _layout(
    name: str, *pieces: str | _Field, separator: str, escapes: tuple[tuple[str, str], ...] = ()
) -> LineLayout:
    """A line of literal text and fields, for PostgreSQL and for Python alike;
    a day's lines joined by `separator`, then `escapes` applied."""

    def sql(quote: Callable[[str], str]) -> str:
        written = (sql_literal(piece) if isinstance(piece, str) else piece[0](quote) for piece in pieces)
        return " || ".join(written)

    def python(posting: StatementPosting) -> str:
        return "".join(piece if isinstance(piece, str) else piece[1](posting) for piece in pieces)

    return LineLayout(name=name, sql=sql, python=python, separator=separator, escapes=escapes)


# As the API's JSON renderer does: the two line separators JavaScript does not
# allow in a string are escaped (only free text can hold them).
JSON_ESCAPES = (("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


JSON_LAYOUT = _layout(
    "json",
    '{"entryId":"',
    ENTRY_ID,
    '","bookedAt":"',
    BOOKED_AT,
    '","amount":"',
    AMOUNT,
    '","creditDebit":"',
    CREDIT_DEBIT,
    '","balanceAfter":"',
    BALANCE_AFTER,
    '","reference":',
    REFERENCE_JSON,
    ',"requestId":',
    REQUEST_JSON,
    ',"endToEndId":',
    END_TO_END_JSON,
    ',"returnReason":',
    RETURN_REASON_JSON,
    ',"description":',
    DESCRIPTION_JSON,
    "}",
    separator=",",
    escapes=JSON_ESCAPES,
)
CSV_LAYOUT = _layout(
    "csv",
    BOOKED_AT,
    ",",
    ENTRY_ID,
    ",",
    CREDIT_DEBIT,
    ",",
    AMOUNT,
    ",",
    BALANCE_AFTER,
    ",",
    REFERENCE_CSV,
    ",",
    REQUEST_ID,
    ",",
    DESCRIPTION_CSV,
    ",",
    END_TO_END_CSV,
    separator="\r\n",
)
# A camt.053 `Ntry`, in the schema's order. `BkTxCd/Prtry/Cd` (the schema
# requires a code) is the movement's kind.
CAMT053_LAYOUT = _layout(
    "camt053",
    '<Ntry><Amt Ccy="',
    CURRENCY,
    '">',
    AMOUNT,
    "</Amt><CdtDbtInd>",
    CREDIT_DEBIT,
    "</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts><BookgDt><DtTm>",
    BOOKED_AT,
    "</DtTm></BookgDt><ValDt><Dt>",
    BOOKED_DAY,
    "</Dt></ValDt><AcctSvcrRef>",
    ENTRY_ID,
    "</AcctSvcrRef><BkTxCd><Prtry><Cd>",
    KIND,
    "</Cd></Prtry></BkTxCd><NtryDtls><TxDtls><Refs>",
    REFS_XML,
    "</Refs>",
    PARTIES_XML,
    REMITTANCE_XML,
    RETURN_XML,
    "</TxDtls></NtryDtls></Ntry>",
    separator="",
)

# Every format a statement is written in.
LAYOUTS = (JSON_LAYOUT, CSV_LAYOUT, CAMT053_LAYOUT)


def statement_read(account: Account, first_day: date, last_day: date, layout: LineLayout) -> Statement:
    """The statement of the account's days `first_day`..`last_day`, its lines
    written in `layout`."""
    return account_statement(account, first_day, last_day, layout)


def _written_in(statement: Statement, layout: LineLayout) -> None:
    if statement.layout is not layout:
        raise ValueError(f"This statement's lines are written for {statement.layout.name}")


def statement_json(statement: Statement) -> bytes:
    """The JSON body, envelope included: `{"success": true, "data": {...}}`,
    byte for byte what the API's JSON renderer (compact, UTF-8, U+2028 and
    U+2029 escaped) writes for the same data, without a dict per entry."""
    _written_in(statement, JSON_LAYOUT)
    account = statement.account
    head = "".join(
        (
            '{"success":true,"data":{"accountId":',
            _json_string(str(account.id)),
            ',"currency":',
            _json_string(account.currency),
            f',"from":"{statement.first_day.isoformat()}","to":"{statement.last_day.isoformat()}"',
            f',"openingBalance":"{statement.opening_balance}","closingBalance":"{statement.closing_balance}"',
            ',"entries":[',
        )
    )
    for plain, escaped in JSON_ESCAPES:
        head = head.replace(plain, escaped)
    # The entries are already escaped so, piece by piece (`JSON_LAYOUT.escapes`).
    return b"".join((head.encode(), b",".join(statement.pieces), b"]}}"))


def statement_csv(statement: Statement) -> bytes:
    """RFC 4180: CRLF line ends, fields quoted where they hold a comma, quote or
    line break; a null is an empty cell; a cell a spreadsheet would read as a
    formula is prefixed with an apostrophe. Only the reference and the
    description can hold such characters or start so (the other cells are
    numbers, times, codes and ids)."""
    _written_in(statement, CSV_LAYOUT)
    return b"\r\n".join((",".join(CSV_HEADER).encode(), *statement.pieces, b""))


def _element(path: str, text: str) -> str:
    """`<A><B>text</B></A>` for the path "A/B"; `text` already written as content."""
    names = path.split("/")
    return "".join(f"<{name}>" for name in names) + text + "".join(f"</{name}>" for name in reversed(names))


def _account_id(statement: Statement) -> str:
    account = statement.account
    if account.iban:
        return _element("Id/IBAN", xml_text(account.iban))
    if account.sort_code and account.account_number:
        identifier = _element("Id", xml_text(account.sort_code + account.account_number))
        scheme = _element("SchmeNm/Cd", "BBAN")
    else:
        identifier, scheme = _element("Id", account.id.hex), _element("SchmeNm/Prtry", "ACCOUNT-ID")
    return _element("Id/Othr", identifier + scheme)


def _balance(code: str, amount: Decimal, currency: str, day: str) -> str:
    # The ledger keeps balances and available balances at zero or more.
    sign = "DBIT" if amount < 0 else "CRDT"
    return _element(
        "Bal",
        _element("Tp/CdOrPrtry/Cd", code)
        + f'<Amt Ccy="{currency}">{abs(amount):.2f}</Amt>'
        + _element("CdtDbtInd", sign)
        + _element("Dt/Dt", day),
    )


def statement_camt053(
    statement: Statement, *, message_id: str, created_at: datetime, closing_available: Decimal
) -> bytes:
    """A camt.053.001.08 document with the statement as its one `Stmt`, its
    elements in the schema's order; `closing_available` is CLAV, the closing
    balance less the holds in force then. Written as text, element by element: a year
    of entries is hundreds of thousands of elements, too many to build as a tree."""
    _written_in(statement, CAMT053_LAYOUT)
    first, last = statement.first_day.isoformat(), statement.last_day.isoformat()
    currency = xml_text(statement.account.currency)
    created = created_at.isoformat()
    parts = [
        '<?xml version="1.0" encoding="utf-8"?>\n',
        f'<Document xmlns="{CAMT053_NAMESPACE}"><BkToCstmrStmt>',
        _element("GrpHdr", _element("MsgId", xml_text(message_id)) + _element("CreDtTm", created)),
        "<Stmt>",
        _element("Id", f"{statement.account.id.hex[:16]}-{first.replace('-', '')}-{last.replace('-', '')}"),
        _element("CreDtTm", created),
        _element(
            "FrToDt", _element("FrDtTm", f"{first}T00:00:00Z") + _element("ToDtTm", f"{last}T23:59:59Z")
        ),
        _element("Acct", _account_id(statement) + _element("Ccy", currency)),
        _balance("OPBD", Decimal(statement.opening_balance), currency, first),
        _balance("CLBD", Decimal(statement.closing_balance), currency, last),
        _balance("CLAV", closing_available, currency, last),
    ]
    return b"".join(("".join(parts).encode(), *statement.pieces, b"</Stmt></BkToCstmrStmt></Document>"))
