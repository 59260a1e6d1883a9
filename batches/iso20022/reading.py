"""A pain.001 file read safely, checked, and mapped to batch items.

In this order, each step refusing with 400 VALIDATION_ERROR before the next:
1. a streaming pass (constant memory): well-formed, no DTD (so no entity and no
   external reference is ever declared, let alone read), a pain.001.001.03 or
   .09 `Document`, at most `MAX_TRANSACTIONS` transactions;
2. the whole document against its official XSD (errors name element paths);
3. the control figures: `NbOfTxs` and `CtrlSum` of the group header and of each
   payment instruction that states them;
4. the mapping of each transaction to the JSON batch item form, whose content
   the batch item rules then judge one by one, as for any batch.
"""

import io
from dataclasses import dataclass, replace
from datetime import date
from decimal import Decimal

from lxml import etree

from bankapi.errors import ApiError, ErrorCode
from batches.iso20022.schemas import (
    PAIN001_VERSIONS,
    element_path,
    hardened_parser,
    namespace_of,
    xml_schema,
)
from batches.rules import MAX_PAYMENTS
from batches.sent import FileInstruction, SentAccount, SentPayee, SentPayer, SentPayment

MAX_TRANSACTIONS = MAX_PAYMENTS
MAX_ERRORS = 50
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
    message_name = _scan(body)
    try:
        root = etree.fromstring(body, hardened_parser())
    except etree.XMLSyntaxError as exc:  # pragma: no cover - the scan parsed the same bytes
        raise _refused("body", f"Not well-formed XML: {exc}") from exc
    _validate(message_name, root)
    document = _Document.of(message_name, root)
    _controls_check(document)
    return document.mapped()


def _scan(body: bytes) -> str:
    """The message name, after one streaming pass that builds no tree.

    A DTD is refused as soon as the parser reports it, before the root element
    is even read: whatever it declares (entities, external subsets) is never
    expanded or fetched, since the parser neither loads DTDs nor resolves
    entities nor touches the network.
    """
    events = etree.iterparse(
        io.BytesIO(body),
        # Events for these two only: a Python step per element would be most of the cost.
        events=("start", "end"),
        tag=("{*}Document", "{*}CdtTrfTxInf"),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
    )
    message_name = ""
    transactions = 0
    try:
        for event, element in events:
            if not message_name:
                message_name = _root_checked(element)
            elif event == "end" and element.tag.endswith("}CdtTrfTxInf"):
                transactions += 1
                if transactions > MAX_TRANSACTIONS:
                    raise _refused(
                        "CstmrCdtTrfInitn/GrpHdr/NbOfTxs",
                        f"At most {MAX_TRANSACTIONS} transactions per file.",
                    )
                # Constant memory: drop what has been counted.
                element.clear()
        if not message_name:
            # The root is not a Document: no event came for it.
            _root_checked(events.root)
    except etree.XMLSyntaxError as exc:
        raise _refused("body", f"Not well-formed XML: {exc.msg}") from exc
    return message_name


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


def _validate(message_name: str, root: etree._Element) -> None:
    schema = xml_schema(message_name)
    if schema.validate(root):
        return
    tree = root.getroottree()
    errors = []
    for entry in schema.error_log:
        try:
            found = tree.xpath(entry.path) if entry.path else []
        except etree.XPathError:
            found = []
        element = found[0] if isinstance(found, list) and found else None
        field = element_path(message_name, element) if isinstance(element, etree._Element) else "Document"
        errors.append({"field": field or "Document", "message": _readable(entry.message, message_name)})
        if len(errors) == MAX_ERRORS:
            break
    raise file_refused(f"The document is not a valid {message_name} message.", errors)


def _readable(message: str, message_name: str) -> str:
    return message.replace(f"{{{namespace_of(message_name)}}}", "")


Fields = dict[str, etree._Element]


def _fields(element: etree._Element, skip: str = "", path: str = "", found: Fields | None = None) -> Fields:
    """The element's descendants by their path of local names (`PmtId/EndToEndId`),
    the first of each path, not entering `skip` children: one walk, then lookups."""
    found = {} if found is None else found
    for child in element:
        tag = child.tag
        if not isinstance(tag, str):
            continue  # a comment or processing instruction
        name = tag[tag.index("}") + 1 :] if tag.startswith("{") else tag
        if name == skip:
            continue
        where = path + name
        found.setdefault(where, child)
        _fields(child, "", where + "/", found)
    return found


def _text(fields: Fields, path: str) -> str | None:
    element = fields.get(path)
    return None if element is None or element.text is None else element.text.strip()


@dataclass
class _Instruction:
    fields: Fields
    payments: list[SentPayment]
    amounts: list[Decimal]


@dataclass
class _Document:
    """A valid pain.001's group header and instructions, each element walked once."""

    message_name: str
    header: Fields
    instructions: list[_Instruction]

    @classmethod
    def of(cls, message_name: str, root: etree._Element) -> "_Document":
        initiation = root[0]  # CstmrCdtTrfInitn: the XSD allows nothing else there
        tag = f"{{{namespace_of(message_name)}}}"
        document = cls(message_name=message_name, header=_fields(initiation, skip="PmtInf"), instructions=[])
        for element in initiation.iterchildren(f"{tag}PmtInf"):
            instruction = _Instruction(fields=_fields(element, skip="CdtTrfTxInf"), payments=[], amounts=[])
            payer = _account(instruction.fields, "DbtrAcct")
            # Each transaction's elements are walked once and let go: only its payment is kept.
            for transaction in map(_fields, element.iterchildren(f"{tag}CdtTrfTxInf")):
                instruction.payments.append(document.payment(transaction, payer))
                instruction.amounts.append(_amount(transaction))
            document.instructions.append(instruction)
        return document

    @property
    def bic(self) -> str:
        return "BIC" if self.message_name == "pain.001.001.03" else "BICFI"

    def mapped(self) -> Pain001:
        payments, instructions = [], []
        for number, instruction in enumerate(self.instructions, 1):
            payments += instruction.payments
            where = f"CstmrCdtTrfInitn/PmtInf[{number}]"
            instructions.append(
                FileInstruction(
                    # The XSD requires a PmtInfId.
                    id=_text(instruction.fields, "PmtInfId") or "",
                    execution_date=self.execution_date(instruction.fields, where),
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
        remittance = _text(transaction, "RmtInf/Ustrd")
        return SentPayment(
            payer=SentPayer(account=payer),
            payee=SentPayee(name=_text(transaction, "Cdtr/Nm") or "", account=payee_account),
            reference=remittance if remittance is not None else end_to_end_id,
            amount=_text(transaction, "Amt/InstdAmt") or "",
            end_to_end_id=end_to_end_id,
            currency=amount.get("Ccy", "") if amount is not None else "",
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
    """The transaction's amount, as the XSD has checked it (a decimal)."""
    return Decimal(_text(transaction, "Amt/InstdAmt") or _text(transaction, "Amt/EqvtAmt/Amt") or "0")


def _controls_check(document: _Document) -> None:
    errors: list[dict] = []
    every: list[Decimal] = []
    for number, instruction in enumerate(document.instructions, 1):
        every += instruction.amounts
        where = f"CstmrCdtTrfInitn/PmtInf[{number}]"
        errors += _control_errors(instruction.fields, "", where, instruction.amounts)
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
