"""The file formats a KYC/KYB document may have, and how to recognise each.

Documents are identity papers and statements, never web pages: only these types
are issued upload URLs, and a file is kept only when its first bytes are the
declared type's signature ("magic number"). A type outside this table (an HTML
page, an SVG image) can carry script, so it is never accepted or served as such.
"""

from collections.abc import Callable

# Enough leading bytes to recognise every format below.
SIGNATURE_BYTES = 16

# Brands of an ISO base media file that hold HEIF/HEIC images (the `ftyp` box).
_HEIF_BRANDS = {b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1"}


def _is_heic(head: bytes) -> bool:
    return head[4:8] == b"ftyp" and head[8:12] in _HEIF_BRANDS


def _is_webp(head: bytes) -> bool:
    return head[:4] == b"RIFF" and head[8:12] == b"WEBP"


_SIGNATURES: dict[str, Callable[[bytes], bool]] = {
    "application/pdf": lambda head: head.startswith(b"%PDF-"),
    "image/jpeg": lambda head: head.startswith(b"\xff\xd8\xff"),
    "image/png": lambda head: head.startswith(b"\x89PNG\r\n\x1a\n"),
    "image/heic": _is_heic,
    "image/webp": _is_webp,
}

DOCUMENT_CONTENT_TYPES: tuple[str, ...] = tuple(_SIGNATURES)

FILE_EXTENSIONS = {
    "application/pdf": "pdf",
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/heic": "heic",
    "image/webp": "webp",
}

# What a stored object whose recorded type is not a document type is served as:
# bytes to save, never something a browser renders.
OPAQUE_CONTENT_TYPE = "application/octet-stream"


def content_matches(content_type: str, head: bytes) -> bool:
    """Whether a file starting with `head` is of `content_type` (False for a type not accepted)."""
    recognises = _SIGNATURES.get(content_type)
    return recognises is not None and recognises(head[:SIGNATURE_BYTES])


def served_content_type(recorded: str) -> str:
    """The Content-Type a stored document is served with."""
    return recorded if recorded in _SIGNATURES else OPAQUE_CONTENT_TYPE


def download_filename(document_type: str, content_type: str) -> str:
    extension = FILE_EXTENSIONS.get(content_type, "bin")
    return f"{document_type.lower()}.{extension}"
