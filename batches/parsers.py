"""The JSON parser of the batch routes: duplicate keys, at any level, are a 400.

With plain `json.loads` the last of two equal keys silently wins, so a body
could mean one thing to a proxy or an audit log and another to us.
"""

import json
from decimal import Decimal

from rest_framework.exceptions import ParseError

from bankapi.parsers import JSONParser


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", "utf-8")
        try:
            raw = stream.read().decode(encoding)
            if not raw.strip():
                return {}
            return json.loads(
                raw, parse_float=Decimal, parse_constant=self._reject_constant, object_pairs_hook=_unique_keys
            )
        except (ValueError, UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply") from exc
