"""A pain.001 file read safely, checked, and mapped to batch items.

In this order, each step refusing with 400 VALIDATION_ERROR before the next:
1. the root, read before anything else: no DTD (so no entity and no external
   reference is ever declared, let alone read), a pain.001.001.03 or .09
   `Document`;
2. one streaming pass in bounded memory (`batches.iso20022.stream`): within the
   limits of elements, nesting, attributes and namespace declarations,
   well-formed, valid against the message's official XSD (errors name element
   paths), at most `MAX_TRANSACTIONS` transactions, each transaction mapped as it
   ends and let go;
3. the control figures: `NbOfTxs` and `CtrlSum` of the group header and of each
   payment instruction that states them;
4. the mapping of each transaction to the JSON batch item form, whose content
   the batch item rules then judge one by one, as for any batch.
"""

import io
import re
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal, InvalidOperation

from lxml import etree

from bankapi.errors import ApiError, ErrorCode
from batches.iso20022.schemas import PAIN001_VERSIONS, namespace_of
from batches.iso20022.stream import (
    HEADER_FIELDS,
    INSTRUCTION_FIELDS,
    TRANSACTION_FIELDS,
    Invalid,
    NotWellFormed,
    TooMuch,
    drop,
    local_name,
    pull_parser,
    stream,
)
from batches.rules import MAX_PAYMENTS
from batches.sent import FileInstruction, SentAccount, SentPayee, SentPayer, SentPayment

MAX_TRANSACTIONS = MAX_PAYMENTS
MAX_ERRORS = 50
# libxml2 keeps every distinct element and attribute name it meets in its
# dictionary (about 45 bytes each) while it parses, whatever the reader keeps:
# 2.4 million names fit in 16 MiB. The pain.001 schemas have about a thousand.
MAX_NAMES = 100_000
_NAME = re.compile(rb"<([^\s/>!?][^\s/>]*)|\s([^\s=<>/\"']+)\s*=")
_NAMES_CHUNK = 1 << 18
# Sort code (6 digits) then account number (8 digits), under one of these schemes.
UK_ACCOUNT_DIGITS = 14
UK_SCHEMES = {("Cd", "BBAN"), ("Prtry", "SCAN")}
BY_NAMESPACE = {namespace_of(name): name for name in PAIN001_VERSIONS}


@dataclass(frozen=True)
class Pain001:
    """What a file asks for: its identity, and its payments in file order.

    `payments` are each transaction as a JSON batch item would send it, plus
    its EndToEndId and its amount's currency; `instructions` are its payment
    instructions in order, each covering the next `count` payments.
    """

    message_name: str
    message_id: str
    payments: list[SentPayment]
    instructions: list[FileInstruction]


def file_refused(message: str, errors: list[dict]) -> ApiError:
    return ApiError(ErrorCode.VALIDATION_ERROR, message, errors=errors[:MAX_ERRORS])


def _refused(field: str, message: str) -> ApiError:
    return file_refused(message, [{"field": field, "message": message}])


def pain001_read(body: bytes) -> Pain001:
    message_name = _message_name(body)
    _names_check(body)
    document = _Document(message_name=message_name, header={}, instructions=[])
    try:
        stream(body, message_name, document.visit, MAX_ERRORS)
    except NotWellFormed as exc:
        raise _refused("body", f"Not well-formed XML: {exc}") from exc
    except TooMuch as exc:
        raise _refused("Document", str(exc)) from None
    except Invalid as invalid:
        raise file_refused(f"The document is not a valid {message_name} message.", invalid.errors) from None
    _controls_check(document)
    return document.mapped()


def _message_name(body: bytes) -> str:
    """The message name of the root `Document`, read before anything else.

    A DTD is refused as soon as the parser reports it, with the root element:
    whatever it declares (entities, external subsets) is never expanded or
    fetched, since the parser neither loads DTDs nor resolves entities nor
    touches the network.
    """
    parser = pull_parser(("start",))
    source = io.BytesIO(body)
    try:
        while chunk := source.read(4096):
            parser.feed(chunk)
            for _, root in parser.read_events():
                return _root_checked(root)
        parser.close()
    except etree.XMLSyntaxError as exc:
        # What follows the root's start tag in the same chunk may be what failed
        # (an entity the parser will not expand): the root is judged first.
        for _, root in parser.read_events():
            return _root_checked(root)
        raise _refused("body", f"Not well-formed XML: {exc.msg}") from exc
    finally:
        etree.clear_error_log()
    raise _refused("body", "Not well-formed XML: no root element.")


def _names_check(body: bytes) -> None:
    """At most MAX_NAMES distinct element and attribute names (counted from the bytes,
    256 KiB at a time; text that looks like a name counts too)."""
    names: set[tuple[bytes, bytes]] = set()
    for start in range(0, len(body), _NAMES_CHUNK):
        names.update(_NAME.findall(body, start, start + _NAMES_CHUNK))
        if len(names) > MAX_NAMES:
            raise _refused("Document", f"At most {MAX_NAMES} distinct element and attribute names.")


def _root_checked(root: etree._Element) -> str:
    """The message name of the root `Document`: refused if the document has a DTD,
    or if this is not the root or not a pain.001 Document."""
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise _refused("body", "A document type declaration (DTD) is not accepted.")
    qname = etree.QName(root)
    message_name = BY_NAMESPACE.get(qname.namespace or "")
    if message_name is None or qname.localname != "Document" or root.getparent() is not None:
        raise _refused(
            "Document",
            "Must be a pain.001.001.03 or pain.001.001.09 Document (namespace "
            "urn:iso:std:iso:20022:tech:xsd:pain.001.001.03 or .09).",
        )
    return message_name


# An element's kept descendants by their path of local names, or (once the element
# is let go) their texts.
Fields = dict[str, etree._Element | str]


def _fields(element: etree._Element, mapped: dict, path: str = "", found: Fields | None = None) -> Fields:
    """The element's descendants the mapping reads (`mapped`, a tree of local names)
    by their path (`PmtId/EndToEndId`), the first of each path: one walk, then lookups."""
    found = {} if found is None else found
    for child in element:
        name = local_name(child)
        if name not in mapped or (path + name) in found:
            continue
        found[path + name] = child
        _fields(child, mapped[name], path + name + "/", found)
    return found


def _in_initiation(element: etree._Element) -> bool:
    """Whether the element is a child of the document's CstmrCdtTrfInitn."""
    initiation = element.getparent()
    if initiation is None or local_name(initiation) != "CstmrCdtTrfInitn":
        return False
    document = initiation.getparent()
    return document is not None and document.getparent() is None


def _texts(fields: Fields) -> Fields:
    """The fields' texts, kept once their elements are let go."""
    return {path: value if isinstance(value, str) else value.text or "" for path, value in fields.items()}


def _text(fields: Fields, path: str) -> str | None:
    value = fields.get(path)
    text = value if isinstance(value, str) or value is None else value.text
    return None if text is None else text.strip()


@dataclass
class _Instruction:
    fields: Fields | None = None
    payer: SentAccount | None = None
    payments: list[SentPayment] = field(default_factory=list)
    amounts: list[Decimal] = field(default_factory=list)

    def read(self, element: etree._Element) -> None:
        """Its own fields, read once: they all come before its first transaction."""
        if self.fields is None:
            own = {name: fields for name, fields in INSTRUCTION_FIELDS.items() if name != "CdtTrfTxInf"}
            self.fields = _texts(_fields(element, own))
            self.payer = _account(self.fields, "DbtrAcct")


@dataclass
class _Document:
    """A pain.001's group header and instructions, read as the document streams past:
    each transaction is mapped when it ends, then let go."""

    message_name: str
    header: Fields
    instructions: list[_Instruction]
    transactions: int = 0

    def visit(self, event: str, element: etree._Element) -> None:
        """The stream's events of the elements it names (wherever they are: only those
        in their place in the document are read)."""
        name = local_name(element)
        parent = element.getparent()
        if name == "CdtTrfTxInf":
            if parent is not None and local_name(parent) == "PmtInf" and _in_initiation(parent):
                self.transaction(event, element, parent)
        elif name in ("PmtInf", "GrpHdr") and _in_initiation(element):
            if event == "start" and name == "PmtInf":
                self.instructions.append(_Instruction())
            elif event == "end" and name == "PmtInf":
                self.instructions[-1].read(element)
                drop(element)
            elif event == "end":
                self.header = _texts(_fields(element, HEADER_FIELDS, "GrpHdr/"))
                drop(element)

    def transaction(self, event: str, element: etree._Element, instruction_element: etree._Element) -> None:
        instruction = self.instructions[-1]
        if event == "start":
            instruction.read(instruction_element)
            return
        self.transactions += 1
        if self.transactions > MAX_TRANSACTIONS:
            raise _refused(
                "CstmrCdtTrfInitn/GrpHdr/NbOfTxs", f"At most {MAX_TRANSACTIONS} transactions per file."
            )
        fields = _fields(element, TRANSACTION_FIELDS)
        instruction.payments.append(self.payment(fields, instruction.payer))
        instruction.amounts.append(_amount(fields))
        # Only its payment is kept.
        drop(element)

    @property
    def bic(self) -> str:
        return "BIC" if self.message_name == "pain.001.001.03" else "BICFI"

    def mapped(self) -> Pain001:
        payments, instructions = [], []
        for number, instruction in enumerate(self.instructions, 1):
            payments += instruction.payments
            where = f"CstmrCdtTrfInitn/PmtInf[{number}]"
            # The stream read every instruction's fields when it ended.
            fields = instruction.fields or {}
            instructions.append(
                FileInstruction(
                    # The XSD requires a PmtInfId.
                    id=_text(fields, "PmtInfId") or "",
                    execution_date=self.execution_date(fields, where),
                    count=len(instruction.payments),
                )
            )
        return Pain001(
            message_name=self.message_name,
            message_id=_text(self.header, "GrpHdr/MsgId") or "",
            payments=payments,
            instructions=instructions,
        )

    def execution_date(self, instruction: Fields, where: str) -> date:
        if self.message_name == "pain.001.001.03":
            when = _text(instruction, "ReqdExctnDt") or ""
        else:
            when = _text(instruction, "ReqdExctnDt/Dt") or _text(instruction, "ReqdExctnDt/DtTm") or ""
        # An xs:date may carry a time zone, an xs:dateTime a time: the day is what is kept.
        try:
            return date.fromisoformat(when[:10])
        except ValueError as exc:
            # The XSD takes years before 1 and after 9999; a payment date cannot be one.
            raise _refused(f"{where}/ReqdExctnDt", "Must be a day between the years 1 and 9999.") from exc

    def payment(self, transaction: Fields, payer: SentAccount | None) -> SentPayment:
        end_to_end_id = _text(transaction, "PmtId/EndToEndId") or ""
        payee_account = _account(transaction, "CdtrAcct")
        bic = _text(transaction, f"CdtrAgt/FinInstnId/{self.bic}")
        if payee_account is not None and payee_account.kind == "iban" and bic:
            payee_account = replace(payee_account, bic=bic)
        amount = transaction.get("Amt/InstdAmt")
        currency = amount.get("Ccy", "") if isinstance(amount, etree._Element) else ""
        remittance = _text(transaction, "RmtInf/Ustrd")
        return SentPayment(
            payer=SentPayer(account=payer),
            payee=SentPayee(name=_text(transaction, "Cdtr/Nm") or "", account=payee_account),
            reference=remittance if remittance is not None else end_to_end_id,
            amount=_text(transaction, "Amt/InstdAmt") or "",
            end_to_end_id=end_to_end_id,
            currency=currency,
            instruction_id=_text(transaction, "PmtId/InstrId"),
        )


def _account(fields: Fields, name: str) -> SentAccount | None:
    """An IBAN, or a UK sort code and account number; None when absent or in
    another form (the item rules then name it)."""
    iban = _text(fields, f"{name}/Id/IBAN")
    if iban is not None:
        return SentAccount(kind="iban", iban=iban)
    other = _text(fields, f"{name}/Id/Othr/Id") or ""
    schemes = {(kind, _text(fields, f"{name}/Id/Othr/SchmeNm/{kind}")) for kind in ("Cd", "Prtry")}
    if len(other) == UK_ACCOUNT_DIGITS and other.isdigit() and schemes & UK_SCHEMES:
        return SentAccount(kind="uk", sort_code=other[:6], account_number=other[6:])
    return None


def _amount(transaction: Fields) -> Decimal:
    """The transaction's amount, as the XSD checks it (a decimal; any other text is
    an XSD error, which refuses the file once the stream ends)."""
    try:
        return Decimal(_text(transaction, "Amt/InstdAmt") or _text(transaction, "Amt/EqvtAmt/Amt") or "0")
    except InvalidOperation:
        return Decimal(0)


def _controls_check(document: _Document) -> None:
    errors: list[dict] = []
    every: list[Decimal] = []
    for number, instruction in enumerate(document.instructions, 1):
        every += instruction.amounts
        where = f"CstmrCdtTrfInitn/PmtInf[{number}]"
        errors += _control_errors(instruction.fields or {}, "", where, instruction.amounts)
    errors = _control_errors(document.header, "GrpHdr/", "CstmrCdtTrfInitn/GrpHdr", every) + errors
    if errors:
        raise file_refused("The file's control figures do not match its transactions.", errors)


def _control_errors(fields: Fields, prefix: str, where: str, amounts: list[Decimal]) -> list[dict]:
    errors = []
    count = _text(fields, f"{prefix}NbOfTxs")
    if count is not None and int(count) != len(amounts):
        errors.append(
            {
                "field": f"{where}/NbOfTxs",
                "message": f"States {int(count)} transactions; there are {len(amounts)}.",
            }
        )
    control_sum = _text(fields, f"{prefix}CtrlSum")
    total = sum(amounts, Decimal(0))
    if control_sum is not None and Decimal(control_sum) != total:
        errors.append(
            {
                "field": f"{where}/CtrlSum",
                "message": f"States {control_sum}; the amounts sum to {total}.",
            }
        )
    return errors
