"""The rules docs/architecture.md lists as defined once are where it says, and
the available balance and what a payment needs are not spelled again by hand
elsewhere in the service's code."""

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "docs" / "architecture.md").read_text().split("## Rules and where they are defined", 1)[1]
APPS = ("bankapi", "payments", "batches", "cards", "approvals", "sandbox", "onboarding", "events", "authn")

# (module, the name the section gives its definition)
DEFINITIONS = [
    ("bankapi.funds", "available_balance"),
    ("bankapi.funds", "available_balance_sql"),
    ("payments.decision", "funds_admit"),
    ("payments.decision", "funds_sql"),
    ("payments.decision", "funds_refusal"),
    ("payments.decision", "DailyCount.sql"),
    ("payments.decision", "payment_needs"),
    ("payments.decision", "Rules.fee"),
    ("payments.decision", "currency_refusal"),
    ("payments.rules", "account_reference_error"),
    ("payments.formats", "REFERENCE_MAX"),
]

# The rule as code would spell it again, and the one file allowed to.
SPELLED = [
    (re.compile(r"balance\w*\s*-\s*[\w.]*held"), "bankapi/funds.py"),
    (re.compile(r"\b(amount|debit)\s*\+\s*[\w.]*fee"), "payments/decision.py"),
]


@pytest.mark.parametrize(("module", "name"), DEFINITIONS)
def test_each_rule_the_architecture_lists_is_defined_where_it_says(module, name):
    found = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)

    assert callable(found) or isinstance(found, int)
    assert f"`{name}`" in SECTION
    assert module.replace(".", "/") + ".py" in SECTION


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """The file's lines outside comments and docstrings (roughly: a line's text
    before any `#`, lines inside triple quotes left out)."""
    lines, quoted = [], False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.count('"""') % 2:
            quoted = not quoted
            continue
        if not quoted:
            lines.append((number, line.split("#", 1)[0]))
    return lines


@pytest.mark.parametrize(("spelled", "home"), SPELLED, ids=["available balance", "what a payment needs"])
def test_a_rule_is_spelled_only_where_it_is_defined(spelled, home):
    again = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for app in APPS
        for path in sorted((ROOT / app).rglob("*.py"))
        if "/migrations/" not in path.as_posix() and path.relative_to(ROOT).as_posix() != home
        for number, line in _code_lines(path)
        if spelled.search(line)
    ]

    assert again == []
