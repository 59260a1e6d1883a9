"""The official XSDs (vendored in `xsd/`, see `xsd/SOURCES.md`) and the one
hardened XML parser every ISO 20022 document is read with.

Validation uses libxml2's XSD engine (`lxml.etree.XMLSchema`): it validates a
10,000-transaction file about forty times faster than `xmlschema` (figures in
bench/README.md). The element paths of its errors are named from the schema
(`schema_types`), with an index on every element the schema lets repeat.
"""

import functools
import threading
from pathlib import Path

from lxml import etree

XSD_DIR = Path(__file__).parent / "xsd"
XS = "{http://www.w3.org/2001/XMLSchema}"
PAIN001_VERSIONS = ("pain.001.001.03", "pain.001.001.09")
PAIN002_VERSIONS = ("pain.002.001.03", "pain.002.001.12")


def namespace_of(message_name: str) -> str:
    return f"urn:iso:std:iso:20022:tech:xsd:{message_name}"


def hardened_parser() -> etree.XMLParser:
    """No DTD loaded, no entity expanded, nothing fetched, no huge-document mode.

    A document that declares a DTD at all is refused by the reader before this
    parser builds its tree; these settings are the second wall.
    """
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_blank_text=False,
    )


_per_thread = threading.local()


def xml_schema(message_name: str) -> etree.XMLSchema:
    """The message's compiled schema, one per thread: a validator keeps the error log
    of its last run, which two threads validating at once would mix."""
    schemas: dict[str, etree.XMLSchema] = _per_thread.__dict__.setdefault("schemas", {})
    if message_name not in schemas:
        document = etree.parse(str(XSD_DIR / f"{message_name}.xsd"), hardened_parser())
        schemas[message_name] = etree.XMLSchema(document)
    return schemas[message_name]


# A complex type's child elements: their type name and whether they may repeat.
Children = dict[str, tuple[str, bool]]


@functools.cache
def schema_types(message_name: str) -> tuple[dict[str, Children], str]:
    """Every complex type of the schema with its child elements, and the type of its
    root `Document`: what names an element path, with an index on every element the
    schema lets repeat (`CstmrCdtTrfInitn/PmtInf[1]/CdtTrfTxInf[3]/Amt/InstdAmt`)."""
    root = etree.parse(str(XSD_DIR / f"{message_name}.xsd"), hardened_parser()).getroot()
    types: dict[str, Children] = {}
    for complex_type in root.iter(f"{XS}complexType"):
        known = types.setdefault(complex_type.get("name", ""), {})
        for element in complex_type.iter(f"{XS}element"):
            repeats = element.get("maxOccurs", "1") != "1"
            known[element.get("name", "")] = (element.get("type", ""), repeats)
    document = root.find(f"{XS}element[@name='Document']")
    return types, document.get("type", "") if document is not None else ""
