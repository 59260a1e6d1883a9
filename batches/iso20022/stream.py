"""A pain.001 document read as it streams past, in memory bounded whatever it holds.

One pass validates the document against its XSD (libxml2 checks each element as
the parser reads it) and hands each element the service maps to the reader as
it ends; everything else is dropped as soon as it ends. So a file keeps in
memory only the elements open at the moment (at most 256 deep: libxml2's limit
without its huge-document mode), the first of each element the mapping reads
in the current payment instruction or transaction, and the payments mapped so
far: never the unmapped content (`SplmtryData/Envlp` may hold anything), nor a
path string per element. Comments and processing instructions are not kept.

The XSD's errors come out of that pass as messages only (libxml2 names the
element, not its place): `Invalid` carries them and the number of elements the
document holds, so that the reader can name each error's element path by
validating a tree of a document small enough to build one.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lxml import etree

from batches.iso20022.schemas import namespace_of, xml_schema

CHUNK = 64 * 1024
# The elements the mapping reads, below CstmrCdtTrfInitn, as a tree of local names:
# an element on it is kept (the first of its name under its parent), any other is
# dropped when it ends.
_ACCOUNT = {"Id": {"IBAN": {}, "Othr": {"Id": {}, "SchmeNm": {"Cd": {}, "Prtry": {}}}}}
TRANSACTION_FIELDS: dict = {
    "PmtId": {"EndToEndId": {}},
    "Amt": {"InstdAmt": {}, "EqvtAmt": {"Amt": {}}},
    "CdtrAgt": {"FinInstnId": {"BIC": {}, "BICFI": {}}},
    "Cdtr": {"Nm": {}},
    "CdtrAcct": _ACCOUNT,
    "RmtInf": {"Ustrd": {}},
}
MAPPED: dict = {
    "GrpHdr": {"MsgId": {}, "NbOfTxs": {}, "CtrlSum": {}},
    "PmtInf": {
        "PmtInfId": {},
        "NbOfTxs": {},
        "CtrlSum": {},
        "ReqdExctnDt": {"Dt": {}, "DtTm": {}},
        "DbtrAcct": _ACCOUNT,
        "CdtTrfTxInf": TRANSACTION_FIELDS,
    },
}
# Read every one of these (each is dropped once read), not only the first.
EVERY = {"PmtInf", "CdtTrfTxInf"}


class NotWellFormed(Exception):
    """The body is not well-formed XML."""


class Invalid(Exception):
    """The document is well-formed but not valid against its XSD: the XSD's
    messages, and how many elements the document holds."""

    def __init__(self, messages: list[str], elements: int) -> None:
        super().__init__("invalid")
        self.messages = messages
        self.elements = elements


@dataclass
class Open:
    """An element being read: its local name, its place in MAPPED (None: not kept)
    and the names of the children kept so far."""

    name: str
    mapped: dict | None
    kept: set[str] = field(default_factory=set)


class _Walk:
    """The open elements of a document being read, and how many it has met."""

    def __init__(self) -> None:
        self.stack: list[Open] = []
        self.elements = 0

    def start(self, element: etree._Element) -> Open:
        self.elements += 1
        name = etree.QName(element).localname
        if not self.stack:
            opened = Open(name, {"CstmrCdtTrfInitn": MAPPED})
        else:
            parent = self.stack[-1]
            mapped = parent.mapped.get(name) if parent.mapped is not None else None
            if mapped is not None and name not in EVERY:
                if name in parent.kept:
                    mapped = None  # only the first of each name is read
                else:
                    parent.kept.add(name)
            opened = Open(name, mapped)
        self.stack.append(opened)
        return opened

    def end(self) -> Open:
        return self.stack.pop()


Visitor = Callable[[str, etree._Element, Open, list[Open]], None]


def _parser(message_name: str) -> etree.XMLPullParser:
    return etree.XMLPullParser(
        events=("start", "end"),
        schema=xml_schema(message_name),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def drop(element: etree._Element) -> None:
    element.clear(keep_tail=False)
    parent = element.getparent()
    if parent is not None:
        parent.remove(element)


def _chunks(body: bytes) -> Iterator[bytes]:
    for start in range(0, len(body), CHUNK):
        yield body[start : start + CHUNK]


def stream(body: bytes, message_name: str, visit: Visitor, max_errors: int) -> None:
    """Read the document once: `visit(event, element, opened, ancestors)` for each
    kept element's start and end (`ancestors`: its open ancestors), every other
    element dropped as it ends. Raises `Invalid` (with at most `max_errors` of the
    XSD's messages) when the XSD refuses the document, `NotWellFormed` when it is
    not well-formed XML."""
    parser, walk = _parser(message_name), _Walk()
    # The XSD's errors are reported when the parser closes, in the exception's log,
    # which is the thread's log of every parse: emptied first, it holds this one's.
    etree.clear_error_log()
    try:
        for chunk in _chunks(body):
            parser.feed(chunk)
            _events(parser, walk, visit)
        parser.close()
    except etree.XMLSyntaxError as exc:
        if not exc.error_log or not _schema_only(exc.error_log):
            raise NotWellFormed(exc.msg) from exc
        messages = [entry.message for entry in exc.error_log][:max_errors]
        raise Invalid(messages, walk.elements) from None
    finally:
        etree.clear_error_log()
    _events(parser, walk, visit)
    if walk.stack:
        # With a schema attached, libxml2's push parser lets a document end with
        # elements still open: the walk knows.
        raise NotWellFormed(f"Premature end of data in tag {walk.stack[-1].name}.")


def _schema_only(log: etree._ListErrorLog) -> bool:
    return all(entry.domain == etree.ErrorDomains.SCHEMASV for entry in log)


def _events(parser: etree.XMLPullParser, walk: _Walk, visit: Visitor) -> Open | None:
    """Apply the parser's pending events; the element the last one closed, if it
    closed one."""
    closed = None
    for event, element in parser.read_events():
        if event == "start":
            opened = walk.start(element)
            closed = None
            if opened.mapped is not None:
                visit("start", element, opened, walk.stack[:-1])
        else:
            closed = walk.end()
            if closed.mapped is not None:
                visit("end", element, closed, walk.stack)
            else:
                drop(element)
    return closed


def readable(message: str, message_name: str) -> str:
    return message.replace(f"{{{namespace_of(message_name)}}}", "")
