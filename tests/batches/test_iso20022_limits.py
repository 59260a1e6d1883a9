"""What a pain.001 body may hold, and the XSD's errors named without a tree.

An attacker's invalid files took a worker hundreds of MiB: to name each XSD
error's element path the reader built the whole document as a tree, where
attributes and namespace declarations counted toward no limit. Now every limit
is a 400 on `Document` as soon as it is crossed, and an error's path is the one
of the element being read when the schema refused it, whatever the file's size.
The memory of the attacker's three files is measured in a fresh process here and
in bench/iso20022_memory.py.
"""

import pytest

from batches.iso20022.stream import MAX_ATTRIBUTES, MAX_DEPTH, MAX_ELEMENTS, MAX_NAMESPACES
from bench.pain001 import (
    V03,
    V09,
    Instruction,
    Tx,
    finding_files,
    flat,
    many_attributes,
    own_namespaces,
    pain001,
    scan,
    with_supplementary_data,
)
from tests.batches.iso20022 import upload
from tests.batches.test_iso20022_memory import BUDGET_MIB, read_in_a_fresh_process
from tests.batches.test_iso20022_refusals import refused

pytestmark = pytest.mark.django_db
PAYEE = scan("200000", "55779911")


def document(account: dict, version: str, amount: str = "1.00", remittance: int = 1) -> bytes:
    debtor = scan(account["sortCode"], account["accountNumber"])
    tx = Tx("E-1", amount, PAYEE, remittance=["a"] * remittance)
    return pain001([Instruction(debtor, [tx], ctrl_sum="1.00")], ctrl_sum="1.00", version=version)


def holding(base: bytes, version: str, content: bytes) -> bytes:
    """`content` where a file of that version may hold anything (pain.001.001.09's
    `SplmtryData/Envlp`), or, in a pain.001.001.03 which has no such place, at the
    end of its `CstmrCdtTrfInitn` (where the XSD refuses it)."""
    if version == V09:
        return with_supplementary_data(base, content)
    return base.replace(b"</CstmrCdtTrfInitn>", content + b"</CstmrCdtTrfInitn>")


def nested(depth: int) -> bytes:
    return b"<n>" * depth + b"</n>" * depth


# Document/CstmrCdtTrfInitn/PmtInf/CdtTrfTxInf/SplmtryData/Envlp in a .09,
# Document/CstmrCdtTrfInitn in a .03.
FRAME = {V09: 6, V03: 2}


def limit_refused(response, message: str) -> None:
    body = refused(response, 400, "VALIDATION_ERROR")
    assert body["errors"] == [{"field": "Document", "message": message}], body


@pytest.mark.parametrize("version", [V03, V09])
def test_an_element_of_more_attributes_than_the_limit_is_a_400(
    api, custodian_auth, custodian_accounts, version
):
    base = document(custodian_accounts[0], version)
    crowded = holding(base, version, many_attributes(1, MAX_ATTRIBUTES + 1))

    limit_refused(upload(api, custodian_auth, crowded), f"At most {MAX_ATTRIBUTES} attributes per element.")


def test_an_element_of_attributes_within_the_limit_is_taken(api, custodian_auth, custodian_accounts):
    base = document(custodian_accounts[0], V09)

    taken = upload(api, custodian_auth, holding(base, V09, many_attributes(1, MAX_ATTRIBUTES)))

    assert taken.status_code == 200, taken.content


@pytest.mark.parametrize("version", [V03, V09])
def test_more_namespace_declarations_than_the_limit_is_a_400(
    api, custodian_auth, custodian_accounts, version
):
    base = document(custodian_accounts[0], version)
    declaring = holding(base, version, own_namespaces(MAX_NAMESPACES))  # the file's own is one more

    limit_refused(
        upload(api, custodian_auth, declaring),
        f"At most {MAX_NAMESPACES} namespace declarations per document.",
    )


def test_a_file_of_namespaces_within_the_limit_is_taken(api, custodian_auth, custodian_accounts):
    base = document(custodian_accounts[0], V09)

    taken = upload(
        api, custodian_auth, holding(base, V09, b"<F>" + own_namespaces(MAX_NAMESPACES - 1) + b"</F>")
    )

    assert taken.status_code == 200, taken.content


@pytest.mark.parametrize("version", [V03, V09])
def test_more_elements_than_the_limit_is_a_400(api, custodian_auth, custodian_accounts, version):
    base = document(custodian_accounts[0], version)
    many = holding(base, version, flat(MAX_ELEMENTS))

    limit_refused(upload(api, custodian_auth, many), f"At most {MAX_ELEMENTS} elements per document.")


@pytest.mark.parametrize("version", [V03, V09])
def test_more_levels_than_the_limit_is_a_400_that_says_so(api, custodian_auth, custodian_accounts, version):
    base = document(custodian_accounts[0], version)
    deep = holding(base, version, nested(MAX_DEPTH - FRAME[version] + 1))

    limit_refused(upload(api, custodian_auth, deep), f"At most {MAX_DEPTH} levels of nested elements.")


def test_a_file_at_the_depth_limit_is_taken(api, custodian_auth, custodian_accounts):
    base = document(custodian_accounts[0], V09)

    taken = upload(api, custodian_auth, holding(base, V09, nested(MAX_DEPTH - FRAME[V09])))

    assert taken.status_code == 200, taken.content


@pytest.mark.parametrize("version", [V03, V09])
def test_an_xsd_error_in_a_large_file_names_its_element_path(
    api, custodian_auth, custodian_accounts, version
):
    """A file of 260,000 elements used to name `Document`: it was too large for a tree."""
    large = document(custodian_accounts[0], version, amount="x", remittance=260_000)

    body = refused(upload(api, custodian_auth, large), 400, "VALIDATION_ERROR")

    assert [error["field"] for error in body["errors"]] == [
        "CstmrCdtTrfInitn/PmtInf[1]/CdtTrfTxInf[1]/Amt/InstdAmt"
    ]
    assert "'x' is not a valid value" in body["errors"][0]["message"]


@pytest.mark.parametrize("version", [V03, V09])
def test_the_attackers_files_are_refused_400(api, custodian_auth, custodian_accounts, version):
    debtor = scan(custodian_accounts[0]["sortCode"], custodian_accounts[0]["accountNumber"])
    files = finding_files(debtor, version)

    attributed = refused(upload(api, custodian_auth, files["240k attributed"]), 400, "VALIDATION_ERROR")
    limit_refused(
        upload(api, custodian_auth, files["60k attributes"]),
        f"At most {MAX_ATTRIBUTES} attributes per element.",
    )
    limit_refused(
        upload(api, custodian_auth, files["200k namespaces"]),
        f"At most {MAX_NAMESPACES} namespace declarations per document.",
    )

    # Refused by the schema: named by the path of the element it does not take.
    expected = "CstmrCdtTrfInitn/Refused" if version == V09 else "CstmrCdtTrfInitn/n"
    assert [error["field"] for error in attributed["errors"]] == [expected]


@pytest.mark.parametrize("version", [V03, V09])
@pytest.mark.parametrize("kind", ["240k attributed", "60k attributes", "200k namespaces"])
def test_the_attackers_files_cost_bounded_memory(tmp_path, kind, version):
    """They took a worker +200, +415 to +527 and +86 MiB."""
    body = finding_files(scan("400000", "12345678"), version)[kind]

    figures = read_in_a_fresh_process(body, tmp_path)

    assert figures["status"] == 400
    assert figures["grew_mib"] < BUDGET_MIB / 2, figures
