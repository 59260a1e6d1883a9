"""The SEPA character set of identifiers, which a file's `PmtId/EndToEndId` and an
incoming payment's `endToEndId` follow.

Letters a-z and A-Z, digits, space and `/ - ? : ( ) . , ' +`; not starting or
ending with `/`, and no `//`. Its length is the schema's (at most 35). So no
bidi override, no zero-width character, no `@`: the id is shown back in the
draft, the batch, its status report and the payer's statements.
"""

import re

_OUTSIDE = re.compile(r"[^A-Za-z0-9/\-?:().,'+ ]")
SEPA_IDENTIFIER_CHARACTERS = "letters a-z and A-Z, digits, space and / - ? : ( ) . , ' +"


def sepa_identifier_problem(value: str) -> str | None:
    """Why `value` is not a SEPA identifier (the first thing that breaks the rule), or None."""
    if not value.strip():
        return "required."
    if outside := _OUTSIDE.search(value):
        return (
            f"U+{ord(outside.group()):04X} at position {outside.start() + 1} is not a SEPA identifier "
            f"character ({SEPA_IDENTIFIER_CHARACTERS})."
        )
    if value.startswith("/") or value.endswith("/"):
        return "must not start or end with /."
    if "//" in value:
        return f"must not hold // (at position {value.index('//') + 1})."
    return None
