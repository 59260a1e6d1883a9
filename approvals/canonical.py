"""The content hash: lowercase hex SHA-256 of the RFC 8785 (JCS) canonical JSON.

An approval's content holds only strings, null, objects and arrays (amounts are
decimal strings), so JCS comes down to: object keys sorted by their UTF-16 code
units, no whitespace, UTF-8, and strings escaped as RFC 8785 section 3.2.2.2
says (the two-character escapes for \\b \\t \\n \\f \\r \\" \\\\, `\\u00xx` in
lowercase hex for the other control characters, everything else as is). Anyone
can recompute it with any JCS library.
"""

import hashlib
from typing import Any

_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _string(text: str) -> str:
    out = []
    for char in text:
        if char in _SHORT:
            out.append(_SHORT[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _utf16_key(text: str) -> bytes:
    return text.encode("utf-16-be")


def canonical_json(value: Any) -> str:
    """The JCS text of `value` (str, None, dict with str keys, list; True and
    False too, though content never holds them). Anything else: TypeError."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=_utf16_key)
        return "{" + ",".join(_string(key) + ":" + canonical_json(value[key]) for key in keys) + "}"
    raise TypeError(f"Content holds only strings, null, objects and arrays, not {type(value).__name__}")


def content_hash(content: Any) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of `canonical_json(content)`."""
    return hashlib.sha256(canonical_json(content).encode("utf-8")).hexdigest()
