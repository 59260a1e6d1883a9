"""Text checked against a pattern is checked whole: a trailing newline is refused.

Python's `$` also matches before a final "\\n", so `re.match`/`re.search` with
`^...$` (as Django's RegexValidator and DRF's RegexField use it) took "John\\n".
This test finds every serializer field of the project that states a pattern (a
RegexValidator, a RegexField, an `openapi` pattern or
list of values), makes a value the field
accepts from that pattern, and sends it again with "\\n" after it: the field must
refuse it. No field is listed by hand, so a new one is covered when it is written.
"""

import importlib
import pkgutil
import random
import re

import pytest
import rstr
from django.core.validators import RegexValidator
from rest_framework import serializers

APPS = ("authn", "bankapi", "batches", "cards", "events", "onboarding", "payments")
# Values tried per field before giving up on finding one it accepts.
ATTEMPTS = 400
URLS = ("https://example.com/path?q=1", "http://localhost:8000/hook", "https://127.0.0.1/hook")


def _project_serializers() -> list[type[serializers.Serializer]]:
    for app in APPS:
        package = importlib.import_module(app)
        for module in pkgutil.walk_packages(package.__path__, f"{app}."):
            if ".migrations" not in module.name and ".management" not in module.name:
                importlib.import_module(module.name)
    found: set[type] = set()
    stack: list[type] = [serializers.Serializer]
    while stack:
        for subclass in stack.pop().__subclasses__():
            if subclass not in found:
                found.add(subclass)
                stack.append(subclass)
    return sorted(
        (cls for cls in found if cls.__module__.split(".")[0] in APPS),
        key=lambda cls: f"{cls.__module__}.{cls.__qualname__}",
    )


def _fields(serializer: serializers.Serializer, path: str):
    for name, field in serializer.fields.items():
        where = f"{path}.{name}"
        while isinstance(field, serializers.ListSerializer | serializers.ListField | serializers.DictField):
            field, where = field.child, f"{where}[]"
        if isinstance(field, serializers.Serializer):
            yield from _fields(field, where)
        else:
            yield where, field


def _pattern(field) -> str | None:
    stated = getattr(field, "openapi", None) or {}
    if "pattern" in stated:
        return stated["pattern"]
    if "enum" in stated:
        return "^(" + "|".join(re.escape(choice) for choice in stated["enum"]) + ")$"
    for validator in getattr(field, "validators", ()):
        if isinstance(validator, RegexValidator) and not validator.inverse_match:
            return validator.regex.pattern
    return None


def _regex_fields():
    for cls in _project_serializers():
        for where, field in _fields(cls(), f"{cls.__module__}.{cls.__qualname__}"):
            pattern = _pattern(field)
            if pattern is not None and not field.read_only:
                yield pytest.param(field, pattern, id=where)


def _accepts(field, value) -> bool:
    try:
        field.run_validation(value)
    except serializers.ValidationError:
        return False
    return True


def _accepted_value(field, pattern: str) -> str | None:
    """A value made from the field's own pattern (or its documented example) that
    the field accepts."""
    openapi = getattr(field, "openapi", None) or {}
    example = openapi.get("example")
    if isinstance(example, str) and _accepts(field, example):
        return example
    if isinstance(field, serializers.URLField) or openapi.get("format") == "uri":
        # Django's URL pattern spans Unicode: values drawn from it take minutes.
        return next((url for url in URLS if _accepts(field, url)), None)
    # Seeded: the same values on every run.
    maker = rstr.Rstr(random.Random(pattern))
    compiled = re.compile(pattern)
    for _ in range(ATTEMPTS):
        value = maker.xeger(compiled).rstrip("\n")
        if _accepts(field, value):
            return value
    return None


REGEX_FIELDS = list(_regex_fields())


def test_the_sweep_finds_the_fields_it_is_about():
    names = {param.id.rsplit(".", 1)[-1] for param in REGEX_FIELDS}
    assert {"firstName", "lastName", "iban", "bic", "code", "pin", "currency", "postalCode"} <= names


@pytest.mark.parametrize(("field", "pattern"), REGEX_FIELDS)
def test_a_trailing_newline_is_refused(field, pattern):
    value = _accepted_value(field, pattern)
    assert value is not None, f"no value made from {pattern[:80]!r} passes the field"
    assert not _accepts(field, value + "\n"), f"{value!r} + newline was accepted"
