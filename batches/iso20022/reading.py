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
from dataclasses import dataclass
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

MAX_TRANSACTIONS = MAX_PAYMENTS
MAX_ERRORS = 50
# Sort code (6 digits) then account number (8 digits), under one of these schemes.
UK_ACCOUNT_DIGITS = 14
UK_SCHEMES = {("Cd", "BBAN"), ("Prtry", "SCAN")}
BY_NAMESPACE = {namespace_of(name): name for name in PAIN001_VERSIONS}


@dataclass(frozen=True)
class Pain001:
    """What a file asks for: its identity, and its payments in file order.

    `payments` are in the JSON batch item form, plus the transaction's
    `endToEndId` and its amount's `currency`; `instructions` are its payment
    instructions in order, `{id, executionDate, count}`, each covering the next
    `count` payments.
    """

    message_name: str
    message_id: str
    payments: list[dict]
    instructions: list[dict]


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
    namespace = {"p": namespace_of(message_name)}
    initiation = root.find("p:CstmrCdtTrfInitn", namespace)
    if initiation is None:  # pragma: no cover - the XSD requires it
        raise ValueError("A valid pain.001 without CstmrCdtTrfInitn.")
    reader = _Reader(message_name, namespace)
    _controls_check(reader, initiation)
    return reader.mapped(initiation)


def _scan(body: bytes) -> str:
    """The message name, after one streaming pass that builds no tree.

    A DTD is refused as soon as the parser reports it, before the root element
    is even read: whatever it declares (entities, external subsets) is never
    expanded or fetched, since the parser neither loads DTDs nor resolves
    entities nor touches the network.
    """
    events = etree.iterparse(
        io.BytesIO(body),
        events=("start", "end"),
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
                continue
            if event == "end" and element.tag == f"{{{namespace_of(message_name)}}}CdtTrfTxInf":
                transactions += 1
                if transactions > MAX_TRANSACTIONS:
                    raise _refused(
                        "CstmrCdtTrfInitn/GrpHdr/NbOfTxs",
                        f"At most {MAX_TRANSACTIONS} transactions per file.",
                    )
            if event == "end":
                # Constant memory: drop what has been counted.
                element.clear()
    except etree.XMLSyntaxError as exc:
        raise _refused("body", f"Not well-formed XML: {exc.msg}") from exc
    if not message_name:
        raise _refused("body", "The body is empty.")
    return message_name


def _root_checked(root: etree._Element) -> str:
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise _refused("body", "A document type declaration (DTD) is not accepted.")
    qname = etree.QName(root)
    message_name = BY_NAMESPACE.get(qname.namespace or "")
    if message_name is None or qname.localname != "Document":
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
        found = tree.xpath(entry.path) if entry.path else []
        element = found[0] if isinstance(found, list) and found else None
        field = element_path(message_name, element) if isinstance(element, etree._Element) else "Document"
        errors.append({"field": field or "Document", "message": _readable(entry.message, message_name)})
        if len(errors) == MAX_ERRORS:
            break
    raise file_refused(f"The document is not a valid {message_name} message.", errors)


def _readable(message: str, message_name: str) -> str:
    return message.replace(f"{{{namespace_of(message_name)}}}", "")


class _Reader:
    """Reads the elements of one pain.001 version (the two differ in a few names)."""

    def __init__(self, message_name: str, namespace: dict[str, str]) -> None:
        self.message_name = message_name
        self.ns = namespace
        self.bic = "BIC" if message_name == "pain.001.001.03" else "BICFI"

    def text(self, element: etree._Element, path: str) -> str | None:
        found = element.find("p:" + path.replace("/", "/p:"), self.ns)
        return found.text if found is not None and found.text is not None else None

    def all(self, element: etree._Element, name: str) -> list[etree._Element]:
        return element.findall(f"p:{name}", self.ns)

    def mapped(self, initiation: etree._Element) -> Pain001:
        payments, instructions = [], []
        for number, instruction in enumerate(self.all(initiation, "PmtInf"), 1):
            transactions = self.all(instruction, "CdtTrfTxInf")
            payer = self.account(instruction, "DbtrAcct")
            for transaction in transactions:
                payments.append(self.payment(transaction, payer))
            instructions.append(
                {
                    "id": self.text(instruction, "PmtInfId"),
                    "executionDate": self.execution_date(instruction, f"CstmrCdtTrfInitn/PmtInf[{number}]"),
                    "count": len(transactions),
                }
            )
        return Pain001(
            message_name=self.message_name,
            message_id=self.text(initiation, "GrpHdr/MsgId") or "",
            payments=payments,
            instructions=instructions,
        )

    def execution_date(self, instruction: etree._Element, where: str) -> str:
        if self.message_name == "pain.001.001.03":
            when = self.text(instruction, "ReqdExctnDt") or ""
        else:
            day = self.text(instruction, "ReqdExctnDt/Dt")
            when = day or self.text(instruction, "ReqdExctnDt/DtTm") or ""
        # An xs:date may carry a time zone, an xs:dateTime a time: the day is what is kept.
        try:
            return date.fromisoformat(when.strip()[:10]).isoformat()
        except ValueError as exc:
            # The XSD takes years before 1 and after 9999; a payment date cannot be one.
            raise _refused(f"{where}/ReqdExctnDt", "Must be a day between the years 1 and 9999.") from exc

    def account(self, parent: etree._Element, name: str) -> dict | None:
        """`{type: iban, iban}` or `{type: uk, sortCode, accountNumber}`; None when
        absent or in another form (the item rules then name it)."""
        iban = self.text(parent, f"{name}/Id/IBAN")
        if iban is not None:
            return {"type": "iban", "iban": iban}
        other = self.text(parent, f"{name}/Id/Othr/Id") or ""
        schemes = {(kind, self.text(parent, f"{name}/Id/Othr/SchmeNm/{kind}")) for kind in ("Cd", "Prtry")}
        if len(other) == UK_ACCOUNT_DIGITS and other.isdigit() and schemes & UK_SCHEMES:
            return {"type": "uk", "sortCode": other[:6], "accountNumber": other[6:]}
        return None

    def payment(self, transaction: etree._Element, payer: dict | None) -> dict:
        end_to_end_id = self.text(transaction, "PmtId/EndToEndId") or ""
        payee_account = self.account(transaction, "CdtrAcct")
        bic = self.text(transaction, f"CdtrAgt/FinInstnId/{self.bic}")
        if payee_account is not None and payee_account["type"] == "iban" and bic:
            payee_account["bic"] = bic
        payee: dict = {"name": self.text(transaction, "Cdtr/Nm") or ""}
        if payee_account is not None:
            payee["account"] = payee_account
        amount = transaction.find("p:Amt/p:InstdAmt", self.ns)
        remittance = self.text(transaction, "RmtInf/Ustrd")
        payment = {
            "payer": {"account": payer} if payer is not None else {},
            "payee": payee,
            "reference": remittance if remittance is not None else end_to_end_id,
            "amount": (amount.text or "").strip() if amount is not None else "",
            "endToEndId": end_to_end_id,
            "currency": amount.get("Ccy", "") if amount is not None else "",
        }
        return payment


def _amount(reader: _Reader, transaction: etree._Element) -> Decimal:
    """The transaction's amount, as the XSD has checked it (a decimal)."""
    text = reader.text(transaction, "Amt/InstdAmt") or reader.text(transaction, "Amt/EqvtAmt/Amt") or "0"
    return Decimal(text.strip())


def _controls_check(reader: _Reader, initiation: etree._Element) -> None:
    errors: list[dict] = []
    every: list[Decimal] = []
    for number, instruction in enumerate(reader.all(initiation, "PmtInf"), 1):
        amounts = [_amount(reader, tx) for tx in reader.all(instruction, "CdtTrfTxInf")]
        every += amounts
        errors += _control_errors(reader, instruction, f"CstmrCdtTrfInitn/PmtInf[{number}]", amounts)
    errors = _control_errors(reader, initiation, "CstmrCdtTrfInitn/GrpHdr", every, header=True) + errors
    if errors:
        raise file_refused("The file's control figures do not match its transactions.", errors)


def _control_errors(
    reader: _Reader, parent: etree._Element, where: str, amounts: list[Decimal], *, header: bool = False
) -> list[dict]:
    prefix = "GrpHdr/" if header else ""
    errors = []
    count = reader.text(parent, f"{prefix}NbOfTxs")
    if count is not None and int(count) != len(amounts):
        errors.append(
            {
                "field": f"{where}/NbOfTxs",
                "message": f"States {int(count)} transactions; there are {len(amounts)}.",
            }
        )
    control_sum = reader.text(parent, f"{prefix}CtrlSum")
    total = sum(amounts, Decimal(0))
    if control_sum is not None and Decimal(control_sum.strip()) != total:
        errors.append(
            {
                "field": f"{where}/CtrlSum",
                "message": f"States {control_sum.strip()}; the amounts sum to {total}.",
            }
        )
    return errors
