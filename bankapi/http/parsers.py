import json
from collections.abc import Mapping
from decimal import Decimal
from typing import IO, Any, NoReturn

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """JSON bodies with numbers parsed as Decimal, never float.

    Money must not pass through binary floating point, even when a client sends
    a number where the contract asks for a decimal string.
    """

    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        encoding = (parser_context or {}).get("encoding", "utf-8")
        try:
            raw = stream.read().decode(encoding)
            if not raw.strip():
                return {}
            return json.loads(
                raw,
                parse_float=Decimal,
                parse_constant=self._reject_constant,
                object_pairs_hook=self._refuse_duplicate_keys,
            )
        except (ValueError, UnicodeDecodeError, LookupError) as exc:
            # LookupError: a charset that names no text codec (e.g. charset=base64).
            raise ParseError(f"JSON parse error - {exc}") from exc
        except RecursionError as exc:
            # No route takes more than a few levels; thousands would exhaust the stack.
            raise ParseError("JSON parse error - nested too deeply") from exc

    @staticmethod
    def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # `{"amount": "1.00", "amount": "2.00"}`: a proxy or a signature check may
        # have read the first, Python's json keeps the last. Neither is safe to pick.
        body: dict[str, Any] = {}
        for key, value in pairs:
            if key in body:
                raise ValueError(f"duplicate key {key!r} in an object")
            body[key] = value
        return body

    @staticmethod
    def _reject_constant(name: str) -> NoReturn:
        raise ValueError(f"{name} is not valid JSON")
