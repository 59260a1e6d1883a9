"""Single-line free text of a batch: a payee name or a reference holding a control or
format character (Unicode Cc, Cf, Zl, Zp) makes its item invalid with that reason,
whether sent in a JSON batch or read from a pain.001 file (`Cdtr/Nm`, `Ustrd`);
the other items go on."""

import pytest

from bench.pain001 import V03, V09, Instruction, Tx, pain001, scan
from tests.batches.conftest import PAYEE_UK, URL, payment, verify
from tests.batches.iso20022 import upload
from tests.support.single_line import LINE_BREAKING, with_inside

pytestmark = pytest.mark.django_db


def invalid_reasons(api, auth, draft_id: str) -> dict[int, list[str]]:
    draft = api.get(f"{URL}/{draft_id}", **auth).json()["data"]["draft"]
    assert [entry["index"] for entry in draft["validPayments"]] == [0]
    return {entry["index"]: entry["reasons"] for entry in draft["invalidPayments"]}


def assert_single_line_reasons(reasons: dict[int, list[str]]) -> None:
    assert [(index, [reason.split(":")[0] for reason in texts]) for index, texts in reasons.items()] == [
        (1, ["payee.name"]),
        (2, ["reference"]),
    ]
    for texts in reasons.values():
        assert "must be a single line of text" in texts[0].lower()


@pytest.mark.parametrize("character", LINE_BREAKING.values(), ids=LINE_BREAKING.keys())
def test_a_json_item_with_the_character_is_invalid(api, custodian_auth, custodian_accounts, character):
    payer = custodian_accounts[0]
    draft_id = verify(
        api,
        custodian_auth,
        [
            payment(payer),
            payment(payer, payee={**PAYEE_UK, "name": with_inside("Jane Payee", character)}),
            payment(payer, reference=with_inside("Invoice 1", character)),
        ],
    )

    assert_single_line_reasons(invalid_reasons(api, custodian_auth, draft_id))


@pytest.mark.parametrize("version", [V03, V09])
@pytest.mark.parametrize("character", LINE_BREAKING.values(), ids=LINE_BREAKING.keys())
def test_a_file_transaction_with_the_character_is_invalid(
    api, custodian_auth, custodian_accounts, character, version
):
    payer = custodian_accounts[0]
    payee = scan("200000", "55779911")
    file = pain001(
        [
            Instruction(
                scan(payer["sortCode"], payer["accountNumber"]),
                [
                    Tx("E2E-1", "1.00", payee),
                    Tx("E2E-2", "1.00", payee, creditor_name=with_inside("Jane Payee", character)),
                    Tx("E2E-3", "1.00", payee, remittance=[with_inside("Invoice 1", character)]),
                ],
            )
        ],
        version=version,
    )

    uploaded = upload(api, custodian_auth, file)

    assert uploaded.status_code == 200, uploaded.content
    assert_single_line_reasons(invalid_reasons(api, custodian_auth, uploaded.json()["requestId"]))
