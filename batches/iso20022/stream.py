"""A pain.001 document read as it streams past, in memory bounded whatever it holds,
valid or not.

One pass validates the document against its XSD (libxml2 checks each element as
the parser reads it) and hands the group header, each payment instruction and
each transaction to the reader as they start and end; the reader maps them and
lets them go. Every element is seen as it starts and ends (its place in the path
of open elements, and the limits), and after each chunk of the body every
element that has ended is dropped, unless the mapping reads it (`MAPPED`: the
first of each name under its parent). So a file keeps in memory only the elements open at
the moment, the elements of the current instruction and transaction that the
mapping reads, and the payments mapped so far: never the unmapped content
(`SplmtryData/Envlp` may hold anything). Comments and processing instructions
are not kept.

What a body may hold is bounded, each bound refused as soon as it is crossed
(`TooMuch`): elements, levels of nesting, namespace declarations, and attributes
on one element. libxml2 builds all of an element's attributes before anyone sees
them, so those are counted from the bytes before the parse: a start tag of more
than MAX_ATTRIBUTES attributes (text in a comment that looks like one counts too).

The XSD's errors are reported by libxml2 as it validates, through this thread's
error log (`_ThreadErrors`): each one is given the element path of the element
being read at that moment (the path of open elements the pass keeps, with an
index on every element the schema lets repeat), so no tree is ever built to name
them. The pass stops at the `max_errors`-th.
"""

import re
import threading
from collections.abc import Callable

from lxml import etree

from batches.iso20022.schemas import namespace_of, schema_types, xml_schema

CHUNK = 16 * 1024
# The limits of what a body may hold (a 10,000-transaction file has about 220,000
# elements, at most 17 levels and one attribute per element, and one namespace).
MAX_ELEMENTS = 500_000
MAX_DEPTH = 255  # libxml2 refuses deeper without its huge-document mode
MAX_ATTRIBUTES = 100
MAX_NAMESPACES = 1_000
# A start tag of more than MAX_ATTRIBUTES attributes (namespace declarations included).
_CROWDED_TAG = re.compile(
    rb"<[^\s/>!?][^\s/>]*(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*')){%d}" % (MAX_ATTRIBUTES + 1)
)
# The elements the mapping reads, below CstmrCdtTrfInitn, as a tree of local names:
# an element on it is kept (the first of its name under its parent), any other is
# dropped once it has ended.
_ACCOUNT: dict = {"Id": {"IBAN": {}, "Othr": {"Id": {}, "SchmeNm": {"Cd": {}, "Prtry": {}}}}}
TRANSACTION_FIELDS: dict = {
    "PmtId": {"InstrId": {}, "EndToEndId": {}},
    "Amt": {"InstdAmt": {}, "EqvtAmt": {"Amt": {}}},
    "CdtrAgt": {"FinInstnId": {"BIC": {}, "BICFI": {}}},
    "Cdtr": {"Nm": {}},
    "CdtrAcct": _ACCOUNT,
    "RmtInf": {"Ustrd": {}},
}
INSTRUCTION_FIELDS: dict = {
    "PmtInfId": {},
    "NbOfTxs": {},
    "CtrlSum": {},
    "ReqdExctnDt": {"Dt": {}, "DtTm": {}},
    "DbtrAcct": _ACCOUNT,
    "CdtTrfTxInf": TRANSACTION_FIELDS,
}
HEADER_FIELDS: dict = {"MsgId": {}, "NbOfTxs": {}, "CtrlSum": {}}
MAPPED: dict = {"CstmrCdtTrfInitn": {"GrpHdr": HEADER_FIELDS, "PmtInf": INSTRUCTION_FIELDS}}
# The elements the reader is told of as they start and end (it lets each go once read).
READ = frozenset(("Document", "GrpHdr", "PmtInf", "CdtTrfTxInf"))


class NotWellFormed(Exception):
    """The body is not well-formed XML."""


class TooMuch(Exception):
    """The body holds more than a limit allows (the message says which)."""


class Invalid(Exception):
    """The document is well-formed but not valid against its XSD: its errors, each
    `{field: element path, message}`."""

    def __init__(self, errors: list[dict]) -> None:
        super().__init__("invalid")
        self.errors = errors


Visitor = Callable[[str, etree._Element], None]


def local_name(element: etree._Element) -> str:
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    return tag[tag.index("}") + 1 :] if tag.startswith("{") else tag


def drop(element: etree._Element) -> None:
    """Let an element that has ended go, with all it holds."""
    element.clear(keep_tail=False)
    parent = element.getparent()
    if parent is not None:
        parent.remove(element)


class _ThreadErrors(etree.PyErrorLog):
    """This thread's libxml2 messages, handed to the pass reading a document as
    libxml2 reports them (the XSD's among them), and otherwise not kept."""

    def __init__(self) -> None:
        super().__init__()
        self.listener: Callable[[etree._LogEntry], None] | None = None

    def receive(self, entry: etree._LogEntry) -> None:
        if self.listener is not None:
            self.listener(entry)

    def clear(self) -> None:
        """What `etree.clear_error_log()` calls: nothing is kept."""


_thread = threading.local()


def _thread_errors() -> _ThreadErrors:
    log = getattr(_thread, "errors", None)
    if log is None:
        log = _thread.errors = _ThreadErrors()
        etree.use_global_python_log(log)
    return log


# An open element: its local name, its type in the schema ("" if none), its index
# when the schema lets it repeat (else 0), and how many children of each repeating
# name it has had so far (None until it has one).
_Open = list


class _Pass:
    """One read: the open elements' path, the limits, and the XSD's errors."""

    def __init__(
        self, message_name: str, parser: etree.XMLPullParser, visit: Visitor, max_errors: int
    ) -> None:
        self.message_name = message_name
        self.parser = parser
        self.visit = visit
        self.max_errors = max_errors
        self.types, self.root_type = schema_types(message_name)
        self.open: list[_Open] = []
        self.ended: _Open | None = None  # the element whose end was read last
        self.pending: list[tuple[str, etree._Element]] = []  # the events of READ elements
        self.root: etree._Element | None = None
        self.elements = 0
        self.namespaces = 0
        self.too_much: str | None = None
        self.errors: list[dict] = []
        self.fatal: str | None = None

    def read(self) -> None:
        """The events the parser has made so far: each element's place in the path,
        checked against the limits (never raising: this runs inside the parser too,
        so it leaves the tree alone)."""
        open_, types, pending = self.open, self.types, self.pending
        for event, item in self.parser.read_events():
            if event == "start":
                self.ended = None
                self.elements += 1
                tag = item.tag
                name = tag[tag.find("}") + 1 :]
                if open_:
                    parent = open_[-1]
                    type_name, repeats = (
                        types.get(parent[1], _NONE).get(name, _UNKNOWN) if parent[1] else _UNKNOWN
                    )
                    index = 0
                    if repeats:
                        counts = parent[3] = parent[3] or {}
                        index = counts[name] = counts.get(name, 0) + 1
                    open_.append([name, type_name, index, None])
                else:
                    self.root = item
                    open_.append([name, self.root_type, 0, None])
                if name in READ:
                    pending.append((event, item))
                if self.elements > MAX_ELEMENTS:
                    self.too_much = f"At most {MAX_ELEMENTS} elements per document."
                elif len(open_) > MAX_DEPTH:
                    self.too_much = f"At most {MAX_DEPTH} levels of nested elements."
            elif event == "end":
                self.ended = open_.pop()
                if self.ended[0] in READ:
                    pending.append((event, item))
            else:
                self.namespaces += 1
                if self.namespaces > MAX_NAMESPACES:
                    self.too_much = f"At most {MAX_NAMESPACES} namespace declarations per document."

    def path(self) -> str:
        """The path below `Document` of the element read last (the last ended, or the
        innermost open one)."""
        chain = self.open + ([self.ended] if self.ended is not None else [])
        return (
            "/".join(f"{name}[{index}]" if index else name for name, _, index, _ in chain[1:]) or "Document"
        )

    def error(self, entry: etree._LogEntry) -> None:
        """A libxml2 message, as it is reported: an XSD error belongs to the element
        the parser has just read, whose events are read first."""
        if entry.level < etree.ErrorLevels.ERROR:
            return  # a warning refuses nothing
        if entry.domain != etree.ErrorDomains.SCHEMASV:
            if self.fatal is None:
                self.fatal = entry.message.strip()
            return
        self.read()
        if len(self.errors) < self.max_errors:
            self.errors.append({"field": self.path(), "message": readable(entry.message, self.message_name)})

    def handle(self) -> None:
        """Raises what the limits refuse, hands the events of READ elements to the
        reader, then drops what the mapping does not read."""
        self.read()
        if self.too_much is not None:
            raise TooMuch(self.too_much)
        pending, self.pending = self.pending, []
        for event, element in pending:
            self.visit(event, element)
        if self.root is not None:
            _prune(self.root, MAPPED)


_NONE: dict = {}
_UNKNOWN = ("", False)


def _prune(element: etree._Element, mapped: dict | None) -> None:
    """Drop what the mapping does not read below `element`: every child but the last
    (the only one that may still be open) of an element it does not read; of one it
    reads, every child that is not the first of a name it reads, the last one aside.
    The children kept are pruned in turn, and so is the last one."""
    if len(element) == 0:
        return
    if mapped is None:
        del element[:-1]
        _prune(element[-1], None)
        return
    kept: set[str] = set()
    last = element[-1]
    for child in list(element):
        name = local_name(child)
        keep = name in mapped and name not in kept
        if keep:
            kept.add(name)
        if child is last:
            _prune(child, mapped.get(name) if keep else None)
        elif keep:
            _prune(child, mapped[name])
        else:
            drop(child)


def pull_parser(events: tuple[str, ...], schema: etree.XMLSchema | None = None) -> etree.XMLPullParser:
    """A pull parser of client XML that fetches nothing (no DTD, no entity, no
    network) and keeps no comment or processing instruction; validating
    against `schema` when given."""
    return etree.XMLPullParser(
        events=events,
        schema=schema,
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def stream(body: bytes, message_name: str, visit: Visitor, max_errors: int) -> None:
    """Read the document once: `visit(event, element)` for each start and end of the
    elements named in READ. Raises `TooMuch` when the body crosses a limit,
    `Invalid` (with at most `max_errors` errors) when the XSD refuses the document,
    `NotWellFormed` when it is not well-formed XML."""
    if _CROWDED_TAG.search(body):
        # Refused from the bytes: libxml2 would build all of an element's attributes
        # (tens of MiB for one of 60,000) before anyone could count them.
        raise TooMuch(f"At most {MAX_ATTRIBUTES} attributes per element.")
    parser = pull_parser(("start", "end", "start-ns"), xml_schema(message_name))
    read = _Pass(message_name, parser, visit, max_errors)
    errors = _thread_errors()
    errors.listener = read.error
    try:
        for start in range(0, len(body), CHUNK):
            parser.feed(body[start : start + CHUNK])
            read.handle()
            if read.fatal is not None:
                # libxml2 goes on after some errors it recovers from: the first is enough.
                raise NotWellFormed(read.fatal)
            if len(read.errors) >= max_errors:
                break
        else:
            parser.close()
    except etree.XMLSyntaxError as exc:
        read.handle()  # a limit crossed before the parser gave up is what is reported
        if read.fatal is not None or not read.errors:
            raise NotWellFormed(read.fatal or exc.msg) from None
    finally:
        errors.listener = None
    read.handle()
    if read.errors:
        raise Invalid(read.errors)
    if read.open:
        # With a schema attached, libxml2's push parser lets a document end with
        # elements still open.
        raise NotWellFormed("Premature end of data: the document's elements are not all closed.")


def readable(message: str, message_name: str) -> str:
    return message.replace(f"{{{namespace_of(message_name)}}}", "").strip()
