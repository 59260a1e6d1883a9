"""What the README and docs/ state that the code can check, held by the code: a
sentence the code stops being true to fails here, as an import the dependency
test forbids fails there."""

import re
from pathlib import Path

import pytest

from bench.pain001 import Instruction, Tx, iban, pain001, scan
from tests.batches.conftest import (  # noqa: F401 - fixtures of the batch tests, used below
    api,
    custodian_accounts,
    custodian_auth,
    custodian_setup,
)
from tests.batches.iso20022 import report, statuses, upload

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TEXTS = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def test_the_generated_client_is_pinned_where_the_back_office_doc_says():
    (named,) = re.findall(
        r"openapi-python-client \(unmodified, pinned in (requirements[\w-]*\.txt)\)",
        (DOCS / "back-office.md").read_text(),
    )

    assert re.search(r"^openapi-python-client==", (ROOT / named).read_text(), re.M)
    # A tool of the tests, not of the service: the runtime lock does not carry it.
    assert "openapi-python-client" not in (ROOT / "requirements.txt").read_text()


def test_files_get_rc01_as_the_iso20022_doc_says(api, custodian_auth, custodian_accounts):  # noqa: F811
    assert "JSON batches and files alike get RC01" in (DOCS / "iso20022.md").read_text()
    # A BIC of the XSD's shape and a real country, but not the bank of the IBAN
    # (37040044 is Commerzbank, COBADEFF).
    first = custodian_accounts[0]
    payee = iban("DE89370400440532013000", "DEUTDEFFXXX")
    file = pain001(
        [Instruction(scan(first["sortCode"], first["accountNumber"]), [Tx("OTHER-BANK", "1.00", payee)])]
    )
    draft_id = upload(api, custodian_auth, file).json()["requestId"]

    [(_, [(end_to_end_id, status, code, _)])] = statuses(report(api, custodian_auth, draft_id))[
        "instructions"
    ]

    assert (end_to_end_id, status, code) == ("OTHER-BANK", "RJCT", "RC01")


# What a changelog says ("it was", "now", "used to", "no longer" about the code):
# history belongs in commit messages; a doc says what is.
CHANGELOG = re.compile(
    r"\bused to be\b|\b(?:is|are|which|it) now\b|\bnow (?:ignored|refused|covers|picks)\b"
    r"|\(it was\b|\bno longer (?:is|are|does|do|answers|accepts)\b|\binstead of 404\b",
    re.I,
)


@pytest.mark.parametrize("path", TEXTS, ids=lambda path: path.name)
def test_no_doc_keeps_a_changelog_sentence(path):
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    found = [" ".join(match.group(0).split()) for match in CHANGELOG.finditer(" ".join(text.split()))]

    assert found == []


# Code that decides by itself which program, environment or owner a row belongs
# to: a filter on program and environment together, or on the caller's customer
# or custodian, outside the tenancy rules and their selectors.
OWN_TENANCY = re.compile(r"filter\([^)]*program_id=[^)]*sandbox=|_id=scope\.(?:customer|custodian)_id")
RULES = {"bankapi/tenancy.py", "bankapi/scope.py"}


def modules_deciding_tenancy() -> set[str]:
    found = set()
    for path in ROOT.glob("*/**/*.py"):
        name = path.relative_to(ROOT).as_posix()
        top = name.split("/", 1)[0]
        if top in {".venv", "tests", "bench", "scripts", "var"} or "/migrations/" in name:
            continue
        if name in RULES or path.name == "admin.py" or "/management/" in name or path.name == "sandbox.py":
            continue
        if OWN_TENANCY.search(path.read_text()):
            found.add(name)
    return found


def test_architecture_names_every_module_that_decides_tenancy_itself():
    section = (DOCS / "architecture.md").read_text().split("These rules decide tenancy", 1)[1]
    section = section.split("Each rule is read three ways", 1)[0]
    named = {name for name in re.findall(r"`(\w+/[\w/]+\.py)`", section) if not name.startswith("tests/")}

    assert modules_deciding_tenancy() == named


@pytest.mark.parametrize("path", TEXTS, ids=lambda path: path.name)
def test_each_link_to_a_doc_finds_its_file_and_heading(path):
    """The README sends a newcomer on to docs/: every such link lands."""
    text = path.read_text()
    for target, anchor in re.findall(r"\]\(((?:docs/)?[\w-]+\.md)(?:#([\w-]+))?\)", text):
        file = (path.parent / target).resolve()
        assert file.is_file(), (path.name, target)
        if anchor:
            headings = re.findall(r"^#+ (.*)$", re.sub(r"```.*?```", "", file.read_text(), flags=re.S), re.M)
            anchors = {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}
            assert anchor in anchors, (path.name, target, anchor)


def test_every_doc_gives_the_jwt_key_size_the_service_makes_itself():
    made = re.findall(r"key_size=(\d+)", (ROOT / "config" / "dev_secrets.py").read_text())
    told = {
        size for path in DOCS.glob("*.md") for size in re.findall(r"rsa_keygen_bits:(\d+)", path.read_text())
    }

    assert len(made) == 1 and told == set(made)
