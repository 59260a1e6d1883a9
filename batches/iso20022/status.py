"""pain.002 customer payment status reports: what a draft or a batch became.

`status_report_of_draft` and `status_report_of_batch` say, in ISO 20022 terms,
where each payment stands; `pain002_write` writes that as a document of either
version and checks it against its XSD before anyone reads it.
"""

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from lxml import etree

from batches.iso20022.schemas import PAIN002_VERSIONS, namespace_of, xml_schema
from batches.models import Batch, BatchItem, Draft
from batches.sent import SentPayment

DEFAULT_VERSION = PAIN002_VERSIONS[0]
# The message name a JSON batch is reported under: the JSON item form carries
# what a pain.001.001.09 transaction does.
JSON_MESSAGE_NAME = "pain.001.001.09"
ADDITIONAL_INFO_MAX = 105

# Group statuses.
RECEIVED, ACCEPTED_TECHNICAL, ACCEPTED, PARTIAL, REJECTED, SETTLED = (
    "RCVD",
    "ACTC",
    "ACCP",
    "PART",
    "RJCT",
    "ACSC",
)
PENDING = "PDNG"

# The reason code of an item's first reason, first match wins: the amount and
# limit refusals of funding and acceptance, then the item rules by the field
# they name.
_REASON_CODES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"^INSUFFICIENT_FUNDS\b"), "AM04"),
    (re.compile(r"^LIMIT_EXCEEDED\b"), "AM02"),
    (re.compile(r"not an account the caller may pay from|\bclosed\b"), "AC04"),
    (re.compile(r"not the payer account's currency"), "AM03"),
    (re.compile(r"^(payer|payee)\.account\.bic\b"), "RC01"),
    (re.compile(r"^(payer|payee)\.account(\.(type|sortCode|accountNumber|iban))?: "), "AC01"),
)


def reason_code(reason: str) -> str:
    for pattern, code in _REASON_CODES:
        if pattern.search(reason):
            return code
    return "NARR"


def iso_id(value: uuid.UUID) -> str:
    """A UUID in a 35-character ISO 20022 field: its 32 hex digits."""
    return value.hex


@dataclass
class TransactionStatus:
    end_to_end_id: str
    status: str
    reason: str | None = None


@dataclass
class InstructionStatus:
    id: str
    transactions: list[TransactionStatus] = field(default_factory=list)


@dataclass
class StatusReport:
    original_message_id: str
    original_message_name: str
    group_status: str
    instructions: list[InstructionStatus]


def _group_status(statuses: list[str], *, every: str) -> str:
    """`every` when each transaction has it, RJCT when each was refused, else PART."""
    if all(status == every for status in statuses):
        return every
    if all(status == REJECTED for status in statuses):
        return REJECTED
    return PARTIAL


def status_report_of_draft(draft: Draft) -> StatusReport:
    """Valid entries ACTC, invalid ones RJCT; RCVD with no transaction while verifying;
    RJCT with no transaction once the draft, expired unsubmitted, lost its payload."""
    message_id, message_name = _original_message(draft.message_id, draft.message_name, draft.id)
    if draft.verified_at is None:
        return StatusReport(message_id, message_name, RECEIVED, [])
    if draft.payload_purged:
        return StatusReport(message_id, message_name, REJECTED, [])
    _valid, invalid = draft.checked_payments()
    reasons = {checked.index: checked.reasons for checked in invalid}
    transactions = [
        TransactionStatus(
            end_to_end_id=_draft_end_to_end_id(draft, index, payment),
            status=REJECTED if index in reasons else ACCEPTED_TECHNICAL,
            reason=reasons[index][0] if reasons.get(index) else None,
        )
        for index, payment in enumerate(draft.sent_payments())
    ]
    group = _group_status([t.status for t in transactions], every=ACCEPTED_TECHNICAL)
    return StatusReport(message_id, message_name, group, _instructions(draft, transactions))


def _draft_end_to_end_id(draft: Draft, index: int, payment: SentPayment) -> str:
    if draft.from_file:
        return payment.end_to_end_id or ""
    return iso_id(draft.item_id(index))


def _instructions(draft: Draft, transactions: list[TransactionStatus]) -> list[InstructionStatus]:
    if not draft.from_file:
        return [InstructionStatus(iso_id(draft.id), transactions)]
    grouped, start = [], 0
    for instruction in draft.file_instructions():
        end = start + instruction.count
        grouped.append(InstructionStatus(instruction.id, transactions[start:end]))
        start = end
    return grouped


_ITEM_STATUS = {BatchItem.Status.SUCCESS: SETTLED, BatchItem.Status.FAILED: REJECTED}


def status_report_of_batch(batch: Batch, items: list[BatchItem]) -> StatusReport:
    """SUCCESS items ACSC, FAILED RJCT, others PDNG; the group ACSC, RJCT, PART
    once finished with some failed, else ACCP."""
    from_file = bool(batch.message_id)
    message_id, message_name = _original_message(batch.message_id or None, batch.message_name, batch.id)
    instructions: list[InstructionStatus] = []
    for item in items:
        transaction = TransactionStatus(
            end_to_end_id=item.end_to_end_id if from_file else iso_id(item.id),
            status=_ITEM_STATUS.get(item.status, PENDING),  # type: ignore[call-overload]
            reason=item.error.split("; ")[0] if item.status == BatchItem.Status.FAILED else None,
        )
        instruction_id = item.payment_information_id if from_file else iso_id(batch.id)
        if not instructions or instructions[-1].id != instruction_id:
            instructions.append(InstructionStatus(instruction_id))
        instructions[-1].transactions.append(transaction)
    group = _group_status([t.status for i in instructions for t in i.transactions], every=SETTLED)
    if group == PARTIAL and batch.status not in Batch.FINAL:
        group = ACCEPTED
    return StatusReport(message_id, message_name, group, instructions)


def _original_message(message_id: str | None, message_name: str, object_id: uuid.UUID) -> tuple[str, str]:
    if message_id is not None:
        return message_id, message_name
    return iso_id(object_id), JSON_MESSAGE_NAME


def pain002_write(report: StatusReport, *, version: str, created_at: datetime) -> bytes:
    """The report as a document of `version`, valid against its XSD (checked here:
    a document that is not is a bug, never sent)."""
    namespace = namespace_of(version)

    def element(parent: etree._Element, name: str, text: str | None = None) -> etree._Element:
        child = etree.SubElement(parent, f"{{{namespace}}}{name}")
        if text is not None:
            child.text = text
        return child

    document = etree.Element(f"{{{namespace}}}Document", nsmap={None: namespace})
    root = element(document, "CstmrPmtStsRpt")
    header = element(root, "GrpHdr")
    element(header, "MsgId", uuid.uuid4().hex)
    element(header, "CreDtTm", created_at.replace(microsecond=0).isoformat())
    group = element(root, "OrgnlGrpInfAndSts")
    element(group, "OrgnlMsgId", report.original_message_id)
    element(group, "OrgnlMsgNmId", report.original_message_name)
    element(group, "GrpSts", report.group_status)
    for instruction in report.instructions:
        original = element(root, "OrgnlPmtInfAndSts")
        element(original, "OrgnlPmtInfId", instruction.id)
        for transaction in instruction.transactions:
            status = element(original, "TxInfAndSts")
            element(status, "OrgnlEndToEndId", transaction.end_to_end_id)
            element(status, "TxSts", transaction.status)
            if transaction.reason is not None:
                reason = element(status, "StsRsnInf")
                element(element(reason, "Rsn"), "Cd", reason_code(transaction.reason))
                element(reason, "AddtlInf", transaction.reason[:ADDITIONAL_INFO_MAX] or "-")
    schema = xml_schema(version)
    if not schema.validate(document):
        raise ValueError(f"The {version} report written is not valid: {schema.error_log}")
    return etree.tostring(document, xml_declaration=True, encoding="UTF-8")
