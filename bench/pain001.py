"""pain.001 customer credit transfer files, as an ERP would send them, for tests
and benches.

`pain001(...)` writes a document of either version from plain data; every count
and control sum is computed unless a test overrides it to make it wrong.
"""

import itertools
import string
from dataclasses import dataclass, field
from decimal import Decimal
from xml.sax.saxutils import escape

V03 = "pain.001.001.03"
V09 = "pain.001.001.09"


def scan(sort_code: str, account_number: str) -> dict:
    """A UK account as `Othr/Id` of 14 digits with the BBAN scheme code."""
    return {"othr": sort_code + account_number, "scheme": ("Cd", "BBAN")}


def iban(value: str, bic: str | None = None) -> dict:
    return {"iban": value, "bic": bic}


@dataclass
class Tx:
    end_to_end_id: str
    amount: str
    creditor: dict
    creditor_name: str = "Jane Payee"
    currency: str = "GBP"
    remittance: list[str] | None = field(default_factory=lambda: ["Invoice 1"])
    # PmtId/InstrId, optional in the file.
    instruction_id: str | None = None


@dataclass
class Instruction:
    debtor: dict
    transactions: list[Tx]
    execution_date: str = "2026-11-25"
    nb_of_txs: str | None = None
    ctrl_sum: str | None = None
    with_controls: bool = True


def _account(account: dict) -> str:
    if "iban" in account:
        return f"<Id><IBAN>{escape(account['iban'])}</IBAN></Id>"
    kind, code = account["scheme"]
    return (
        f"<Id><Othr><Id>{escape(account['othr'])}</Id><SchmeNm><{kind}>{code}</{kind}></SchmeNm></Othr></Id>"
    )


def _agent(account: dict, version: str) -> str:
    bic = account.get("bic")
    if not bic:
        return ""
    tag = "BIC" if version == V03 else "BICFI"
    return f"<CdtrAgt><FinInstnId><{tag}>{escape(bic)}</{tag}></FinInstnId></CdtrAgt>"


def _transaction(tx: Tx, version: str) -> str:
    remittance = "".join(f"<Ustrd>{escape(text)}</Ustrd>" for text in tx.remittance or [])
    return (
        "<CdtTrfTxInf><PmtId>"
        + (f"<InstrId>{escape(tx.instruction_id)}</InstrId>" if tx.instruction_id else "")
        + f"<EndToEndId>{escape(tx.end_to_end_id)}</EndToEndId></PmtId>"
        f'<Amt><InstdAmt Ccy="{tx.currency}">{tx.amount}</InstdAmt></Amt>'
        f"{_agent(tx.creditor, version)}"
        f"<Cdtr><Nm>{escape(tx.creditor_name)}</Nm></Cdtr>"
        f"<CdtrAcct>{_account(tx.creditor)}</CdtrAcct>"
        + (f"<RmtInf>{remittance}</RmtInf>" if remittance else "")
        + "</CdtTrfTxInf>"
    )


def _sum(transactions: list[Tx]) -> str:
    """The control sum of well-formed amounts (a test of a bad amount states its own)."""
    try:
        return str(sum((Decimal(tx.amount) for tx in transactions), Decimal(0)))
    except ArithmeticError:
        return "1"


def _instruction(number: int, instruction: Instruction, version: str) -> str:
    txs = instruction.transactions
    controls = ""
    if instruction.with_controls:
        count = instruction.nb_of_txs or str(len(txs))
        controls = f"<NbOfTxs>{count}</NbOfTxs><CtrlSum>{instruction.ctrl_sum or _sum(txs)}</CtrlSum>"
    date = instruction.execution_date
    when = (
        f"<ReqdExctnDt>{date}</ReqdExctnDt>"
        if version == V03
        else f"<ReqdExctnDt><Dt>{date}</Dt></ReqdExctnDt>"
    )
    return (
        f"<PmtInf><PmtInfId>PMT-{number}</PmtInfId><PmtMtd>TRF</PmtMtd>{controls}{when}"
        f"<Dbtr><Nm>Payer Ltd</Nm></Dbtr><DbtrAcct>{_account(instruction.debtor)}</DbtrAcct>"
        "<DbtrAgt><FinInstnId><Othr><Id>NOTPROVIDED</Id></Othr></FinInstnId></DbtrAgt>"
        + "".join(_transaction(tx, version) for tx in txs)
        + "</PmtInf>"
    )


def pain001(
    instructions: list[Instruction],
    *,
    msg_id: str = "MSG-1",
    version: str = V03,
    nb_of_txs: str | None = None,
    ctrl_sum: str | None = None,
    prolog: str = '<?xml version="1.0" encoding="UTF-8"?>\n',
) -> bytes:
    every = [tx for instruction in instructions for tx in instruction.transactions]
    header = (
        f"<GrpHdr><MsgId>{escape(msg_id)}</MsgId><CreDtTm>2026-11-25T09:00:00</CreDtTm>"
        f"<NbOfTxs>{nb_of_txs or len(every)}</NbOfTxs><CtrlSum>{ctrl_sum or _sum(every)}</CtrlSum>"
        "<InitgPty><Nm>Payer Ltd</Nm></InitgPty></GrpHdr>"
    )
    body = "".join(_instruction(n, instruction, version) for n, instruction in enumerate(instructions, 1))
    return (
        f'{prolog}<Document xmlns="urn:iso:std:iso:20022:tech:xsd:{version}">'
        f"<CstmrCdtTrfInitn>{header}{body}</CstmrCdtTrfInitn></Document>"
    ).encode()


def large_file(debtors: list[dict], count: int, *, version: str = V03, msg_id: str = "BULK-1") -> bytes:
    """`count` transactions of 1.00, spread evenly over one instruction per debtor."""
    instructions = [
        Instruction(
            debtor=debtor,
            transactions=[
                Tx(f"E2E-{n}-{i}", "1.00", scan("200000", "55779911"), remittance=[f"Invoice {i}"])
                for i in range(n, count, len(debtors))
            ],
        )
        for n, debtor in enumerate(debtors)
    ]
    return pain001(instructions, msg_id=msg_id, version=version)


def with_supplementary_data(document: bytes, envelope: bytes) -> bytes:
    """`document` (a pain.001.001.09 of `pain001`) with `envelope` as the content of a
    `SplmtryData/Envlp` after its last transaction: content the XSD takes from anyone
    (any element, checked only where the schema declares it) and the service maps none of."""
    supplementary = b"<SplmtryData><Envlp>" + envelope + b"</Envlp></SplmtryData>"
    head, tail = document.rsplit(b"</CdtTrfTxInf>", 1)
    return head + supplementary + b"</CdtTrfTxInf>" + tail


def deep_and_wide(depth: int, siblings: int, name_length: int = 50) -> bytes:
    """`depth` nested elements of `name_length`-character names holding `siblings`
    empty elements of distinct names: every element a distinct path."""
    names = [f"L{level:03d}".ljust(name_length, "x") for level in range(depth)]
    leaves = b"".join(f"<S{n}/>".encode() for n in range(siblings))
    return (
        b"".join(f"<{name}>".encode() for name in names)
        + leaves
        + b"".join(f"</{name}>".encode() for name in reversed(names))
    )


def flat(count: int) -> bytes:
    """`count` empty elements in one: the most elements a number of bytes can hold."""
    return b"<F>" + b"<a/>" * count + b"</F>"


def distinct_names(count: int) -> bytes:
    """`count` empty elements in one, each of its own four-letter name."""
    names = ("".join(letters) for letters in itertools.product(string.ascii_letters, repeat=4))
    return b"<F>" + b"".join(f"<{next(names)}/>".encode() for _ in range(count)) + b"</F>"


def hostile_files(debtor: dict, size: int) -> dict[str, bytes]:
    """pain.001.001.09 files of about `size` bytes whose `SplmtryData/Envlp` holds
    what costs a reader the most: distinct paths (deep and wide), the most
    elements (flat), or the most distinct element names. Each is valid: a reader
    must take it."""
    base = pain001([Instruction(debtor, [Tx("E2E-1", "1.00", scan("200000", "55779911"))])], version=V09)
    depth, name_length = 245, 50
    frame = len(deep_and_wide(depth, 0, name_length))
    siblings = max(1, (size - len(base) - frame) // len(f"<S{size // 10}/>"))
    return {
        "deep and wide": with_supplementary_data(base, deep_and_wide(depth, siblings, name_length)),
        "flat": with_supplementary_data(base, flat(max(1, (size - len(base)) // 4))),
        "distinct names": with_supplementary_data(base, distinct_names(max(1, (size - len(base)) // 7))),
    }


def refused_by_the_schema(document: bytes) -> bytes:
    """`document` with an element the XSD does not take at the end of its
    `CstmrCdtTrfInitn`: a file that fails the schema once read to its end."""
    return document.replace(b"</CstmrCdtTrfInitn>", b"<Refused/></CstmrCdtTrfInitn>")


def nested_with_attributes(count: int, depth: int) -> bytes:
    """`count` small elements of 3 attributes each, in the innermost of `depth`
    nested elements."""
    leaves = b'<e a="1" b="2" c="3"/>' * count
    return b"<n>" * depth + leaves + b"</n>" * depth


def attribute_names() -> itertools.chain:
    """Distinct attribute names, shortest first: 3,224 of 2 characters, then of 3."""
    first = string.ascii_letters
    rest = string.ascii_letters + string.digits
    return itertools.chain(
        (a + b for a in first for b in rest), (a + b + c for a in first for b in rest for c in rest)
    )


def many_attributes(count: int, attributes: int) -> bytes:
    """`count` elements of `attributes` empty attributes each (the same names on each)."""
    names = list(itertools.islice(attribute_names(), attributes))
    element = b"<e" + b"".join(f' {name}=""'.encode() for name in names) + b"/>"
    return element * count


def own_namespaces(count: int) -> bytes:
    """`count` empty elements, each declaring a default namespace of its own."""
    return b"".join(
        f'<e xmlns="http://example.com/ns/{n:09d}/abcdefghijklmnopqr"/>'.encode() for n in range(count)
    )


def finding_files(debtor: dict, version: str = V09) -> dict[str, bytes]:
    """The three files an attacker sent, each failing the schema: 240,000 small
    elements of 3 attributes under 245 levels of nesting (5.3 MB); 40 elements of
    60,000 attributes each (16.0 MB); 200,000 elements each declaring a namespace
    of its own (12.6 MB). In a pain.001.001.09 their content is in
    `SplmtryData/Envlp`, with an element the XSD refuses at the end; a
    pain.001.001.03 has no such place: the content ends its `CstmrCdtTrfInitn`."""
    base = pain001([Instruction(debtor, [Tx("E2E-1", "1.00", scan("200000", "55779911"))])], version=version)
    shapes = {
        "240k attributed": nested_with_attributes(240_000, 245),
        "60k attributes": many_attributes(40, 60_000),
        "200k namespaces": own_namespaces(200_000),
    }
    if version == V03:
        return {
            kind: base.replace(b"</CstmrCdtTrfInitn>", shape + b"</CstmrCdtTrfInitn>")
            for kind, shape in shapes.items()
        }
    return {
        kind: refused_by_the_schema(with_supplementary_data(base, shape)) for kind, shape in shapes.items()
    }
