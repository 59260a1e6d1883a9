"""A pain.001 document read as it streams past, in memory bounded whatever it holds.

One pass validates the document against its XSD (libxml2 checks each element as
the parser reads it) and hands the group header, each payment instruction and
each transaction to the reader as they start and end; the reader maps them and
lets them go. After each chunk of the body, the tree the parser is building is
pruned: the elements the mapping reads (`MAPPED`, the first of each name under
its parent) are kept, every other element that has ended is dropped, and so is
every ended child of an element the mapping does not read. So a file keeps in
memory only the elements open at the moment (at most 256 deep: libxml2's limit
without its huge-document mode), what one chunk can add, the elements of the
current instruction and transaction that the mapping reads, and the payments
mapped so far: never the unmapped content (`SplmtryData/Envlp` may hold
anything), nor a path string per element. Comments and processing instructions
are not kept. Python sees only those few elements: the rest streams through C.

The XSD's errors come out of that pass as messages only (libxml2 names the
element, not its place): `Invalid` carries them and an upper bound of the
number of elements the document holds, so that the reader can name each error's
element path by validating a tree of a document small enough to build one.
"""

from collections.abc import Callable, Iterator

from lxml import etree

from batches.iso20022.schemas import namespace_of, xml_schema

CHUNK = 16 * 1024
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
READ = ("Document", "GrpHdr", "PmtInf", "CdtTrfTxInf")


class NotWellFormed(Exception):
    """The body is not well-formed XML."""


class Invalid(Exception):
    """The document is well-formed but not valid against its XSD: the XSD's
    messages, and at most how many elements the document holds."""

    def __init__(self, messages: list[str], elements: int) -> None:
        super().__init__("invalid")
        self.messages = messages
        self.elements = elements


Visitor = Callable[[str, etree._Element], None]


def local_name(element: etree._Element) -> str:
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    return tag[tag.index("}") + 1 :] if tag.startswith("{") else tag


def _parser(message_name: str) -> etree.XMLPullParser:
    return etree.XMLPullParser(
        events=("start", "end"),
        tag=[f"{{*}}{name}" for name in READ],
        schema=xml_schema(message_name),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def drop(element: etree._Element) -> None:
    """Let an element that has ended go, with all it holds."""
    element.clear(keep_tail=False)
    parent = element.getparent()
    if parent is not None:
        parent.remove(element)


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


def _chunks(body: bytes) -> Iterator[bytes]:
    for start in range(0, len(body), CHUNK):
        yield body[start : start + CHUNK]


def elements_at_most(body: bytes) -> int:
    """An upper bound of the elements in a document: its `<` that open no end tag,
    comment, declaration or processing instruction."""
    return body.count(b"<") - body.count(b"</") - body.count(b"<!") - body.count(b"<?")


def stream(body: bytes, message_name: str, visit: Visitor, max_errors: int) -> None:
    """Read the document once: `visit(event, element)` for each start and end of the
    elements named in READ, the tree pruned after every chunk. Raises `Invalid`
    (with at most `max_errors` of the XSD's messages) when the XSD refuses the
    document, `NotWellFormed` when it is not well-formed XML."""
    parser = _parser(message_name)
    root: list[etree._Element] = []
    ended = False

    def read_events() -> None:
        nonlocal ended
        for event, element in parser.read_events():
            if not root:
                root.append(element)
            elif element is root[0] and event == "end":
                ended = True
            visit(event, element)

    # The XSD's errors are reported when the parser closes, in the exception's log,
    # which is the thread's log of every parse: emptied first, it holds this one's.
    etree.clear_error_log()
    try:
        for chunk in _chunks(body):
            parser.feed(chunk)
            read_events()
            if root:
                _prune(root[0], MAPPED)
        parser.close()
    except etree.XMLSyntaxError as exc:
        if not exc.error_log or not _schema_only(exc.error_log):
            raise NotWellFormed(exc.msg) from exc
        messages = [entry.message for entry in exc.error_log][:max_errors]
        raise Invalid(messages, elements_at_most(body)) from None
    finally:
        etree.clear_error_log()
    read_events()
    if not ended:
        # With a schema attached, libxml2's push parser lets a document end with
        # elements still open.
        raise NotWellFormed("Premature end of data: the document's elements are not all closed.")


def _schema_only(log: etree._ListErrorLog) -> bool:
    return all(entry.domain == etree.ErrorDomains.SCHEMASV for entry in log)


def readable(message: str, message_name: str) -> str:
    return message.replace(f"{{{namespace_of(message_name)}}}", "")
