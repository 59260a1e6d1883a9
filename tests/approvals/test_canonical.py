"""The content hash is SHA-256 of the RFC 8785 (JCS) canonical JSON."""

import hashlib

import pytest

from approvals.canonical import canonical_json, content_hash


def test_keys_sort_by_utf16_code_units_as_rfc_8785_sorts_them():
    # The key set of RFC 8785 section 3.2.3: the emoji (a surrogate pair, D83D...)
    # sorts before U+FB33, which code point order would put first.
    value = {
        "\u20ac": "Euro",
        "\r": "CR",
        "\ufb33": "Hebrew",
        "1": "One",
        "\U0001f600": "Smiley",
        "\u0080": "C1",
        "\u00f6": "o",
    }
    assert canonical_json(value) == (
        '{"\\r":"CR","1":"One","\u0080":"C1","\u00f6":"o","\u20ac":"Euro","\U0001f600":"Smiley","\ufb33":"Hebrew"}'
    )


def test_strings_escape_as_rfc_8785_says():
    text = 'quote" backslash\\ \b\f\n\r\t \u0001 \u001f \u007f é 日本 \u2028'
    assert (
        canonical_json(text)
        == '"quote\\" backslash\\\\ \\b\\f\\n\\r\\t \\u0001 \\u001f \u007f é 日本 \u2028"'
    )


def test_no_whitespace_nested_arrays_and_null():
    value = {"b": [None, {"z": "1", "a": []}], "a": {}}
    assert canonical_json(value) == '{"a":{},"b":[null,{"a":[],"z":"1"}]}'


def test_the_hash_is_lowercase_hex_sha256_of_the_utf8_bytes():
    content = {"payee": {"name": "Zoë Müller", "iban": None}, "amount": "20000.00", "kind": "payment"}
    expected = hashlib.sha256(
        '{"amount":"20000.00","kind":"payment","payee":{"iban":null,"name":"Zoë Müller"}}'.encode()
    ).hexdigest()
    assert content_hash(content) == expected
    assert content_hash(content) == content_hash(dict(reversed(list(content.items()))))


@pytest.mark.parametrize("value", [1, 1.5, {"a": 2}, [object()]])
def test_numbers_and_other_types_are_refused(value):
    with pytest.raises(TypeError):
        canonical_json(value)
