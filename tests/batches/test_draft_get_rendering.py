"""The draft's GET writes its stored verification results in the API's names
straight from their stored JSON (`checked_payments_to_wire`), without making a
dataclass of each: its body is byte for byte the body the dataclass path
(`CheckedPayment.from_stored` and `sent_payment_to_wire`) writes, and a field
added to a payment's dataclasses without an API name stops the import."""

import dataclasses
import json
import random
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.renderers import JSONRenderer

from batches.models import Draft
from batches.rules import (
    ACCOUNT_NAMES,
    ACCOUNT_SHAPE,
    PAYEE_NAMES,
    PAYEE_SHAPE,
    PAYER_SHAPE,
    PAYMENT_NAMES,
    PAYMENT_SHAPE,
    WireShape,
    checked_payments_to_wire,
    sent_payment_to_wire,
    wire_shape,
)
from batches.sent import CheckedPayment, SentAccount, SentPayee, SentPayer, SentPayment
from bench.pain001 import Instruction, Tx, iban, pain001, scan
from tests.batches.conftest import PAYEE_IBAN, URL, payment, verify
from tests.batches.iso20022 import upload

SHAPES = [
    (SentAccount, ACCOUNT_SHAPE),
    (SentPayer, PAYER_SHAPE),
    (SentPayee, PAYEE_SHAPE),
    (SentPayment, PAYMENT_SHAPE),
]


def dataclass_path(stored: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The results as the GET wrote them through a dataclass each."""
    shown = []
    for checked in (CheckedPayment.from_stored(entry) for entry in stored or []):
        data: dict[str, Any] = {"index": checked.index, "payment": sent_payment_to_wire(checked.payment)}
        if not checked.valid:
            data["reasons"] = list(checked.reasons)
        shown.append(data)
    return shown


def rendered(data: Any) -> bytes:
    """As the API's renderer writes a body."""
    return JSONRenderer().render(data)


def full(cls: type) -> Any:
    """An instance of one of the sent dataclasses with every field set, down to
    the accounts; texts not ASCII, with quotes and escapes."""
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        nested = {"payer": SentPayer, "payee": SentPayee, "account": SentAccount}.get(field.name)
        values[field.name] = full(nested) if nested else f'{field.name} "é" € \\ 😀 \u2028'
    return cls(**values)


def each_field_absent(value: Any) -> list[Any]:
    """`value` with one field (at any depth) left out, for each field in turn."""
    variants = []
    for field in dataclasses.fields(value):
        variants.append(dataclasses.replace(value, **{field.name: None}))
        inner = getattr(value, field.name)
        if dataclasses.is_dataclass(inner):
            variants += [dataclasses.replace(value, **{field.name: v}) for v in each_field_absent(inner)]
    return variants


def each_field_empty(value: Any) -> Any:
    """`value` with every text an empty string: sent, so shown."""
    return dataclasses.replace(
        value,
        **{
            field.name: each_field_empty(inner) if dataclasses.is_dataclass(inner) else ""
            for field in dataclasses.fields(value)
            if (inner := getattr(value, field.name)) is not None
        },
    )


def shuffled(stored: Any, rng: random.Random) -> Any:
    """The same JSON with every object's keys in another order (PostgreSQL's
    jsonb keeps them in an order of its own)."""
    if isinstance(stored, dict):
        items = list(stored.items())
        rng.shuffle(items)
        return {key: shuffled(value, rng) for key, value in items}
    if isinstance(stored, list):
        return [shuffled(value, rng) for value in stored]
    return stored


def varied_results() -> list[dict[str, Any]]:
    """Stored results: every field present, each field absent in turn, every
    text empty, nothing at all; valid ones and invalid ones with reasons."""
    whole = full(SentPayment)
    payments = [
        whole,
        *each_field_absent(whole),
        each_field_empty(whole),
        SentPayment(),
        SentPayment(payer=SentPayer(), payee=SentPayee()),
    ]
    return [
        CheckedPayment(
            index=index,
            payment=sent,
            reasons=("payee.name: ne doit pas être vide ✗", 'amount: "x"') * (index % 2),
        ).to_stored()
        for index, sent in enumerate(payments)
    ]


def test_each_shape_covers_exactly_its_dataclass_fields():
    for cls, shape in SHAPES:
        named = (
            [name for name, _api in shape.texts]
            + [name for name, _shape in shape.nested]
            + list(shape.hidden)
        )
        assert sorted(named) == sorted(field.name for field in dataclasses.fields(cls)), cls


def test_a_field_without_an_api_name_or_a_name_without_a_field_is_refused():
    @dataclasses.dataclass(frozen=True)
    class WithPurpose(SentAccount):
        purpose: str | None = None

    with pytest.raises(TypeError, match=r"fields without an API name \['purpose'\]"):
        wire_shape(WithPurpose, ACCOUNT_NAMES)
    with pytest.raises(TypeError, match=r"names of no field \['purpose'\]"):
        wire_shape(SentPayee, {**PAYEE_NAMES, "purpose": "purpose"}, {"account": ACCOUNT_SHAPE})
    with pytest.raises(TypeError, match=r"fields without an API name \['instruction_id', 'payer'\]"):
        wire_shape(SentPayment, PAYMENT_NAMES, {"payee": PAYEE_SHAPE})


def test_the_shapes_write_the_api_names_in_the_apis_order():
    assert PAYMENT_SHAPE == WireShape(
        texts=(
            ("reference", "reference"),
            ("amount", "amount"),
            ("end_to_end_id", "endToEndId"),
            ("currency", "currency"),
        ),
        nested=(("payer", PAYER_SHAPE), ("payee", PAYEE_SHAPE)),
        hidden=("instruction_id",),
    )
    assert PAYEE_SHAPE.texts == (("name", "name"), ("payee_type", "accountType"))
    assert [api for _name, api in ACCOUNT_SHAPE.texts] == ["type", "sortCode", "accountNumber", "iban", "bic"]


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_stored_results_render_byte_identical_to_the_dataclass_path(seed):
    stored = varied_results()
    if seed is not None:
        stored = shuffled(stored, random.Random(seed))

    fast = checked_payments_to_wire(stored)

    assert rendered(fast) == rendered(dataclass_path(stored))
    assert [("reasons" in entry) for entry in fast] == [index % 2 == 1 for index in range(len(stored))]
    assert fast[0]["payment"]["payee"]["account"]["type"] == 'kind "é" € \\ 😀 \u2028'
    assert checked_payments_to_wire(None) == [] == checked_payments_to_wire([])


def test_the_get_of_a_verified_draft_is_byte_identical_to_the_dataclass_path(
    api, custodian_auth, custodian_accounts
):
    first, second = custodian_accounts
    typed_payee = {**PAYEE_IBAN, "name": "Zoë Müller GmbH", "accountType": "BUSINESS"}
    sent = [
        payment(first, "3.00", reference="Facture n° 1 – été 😀", payee=typed_payee),
        payment(second, "4.00", reference='Quote " and \\ backslash'),
        payment(first, "x", reference=""),
        {"payer": {"account": {"type": "uk", "sortCode": first["sortCode"]}}, "amount": "1.00"},
        {"payee": {"name": "Ünïcode", "account": {"type": "iban", "iban": "DE89370400440532013000"}}},
        {"payer": {}, "payee": {}},
        {},
    ]
    json_draft = verify(api, custodian_auth, sent)
    debtor = scan(first["sortCode"], first["accountNumber"])
    file_draft = upload(
        api,
        custodian_auth,
        pain001(
            [
                Instruction(
                    debtor,
                    [
                        Tx("E-1", "1.00", scan("200000", "55779911"), creditor_name="Jöns Åberg"),
                        Tx("E-2", "2.50", iban("DE89370400440532013000", "COBADEFFXXX"), currency="EUR"),
                        Tx("E-3", "2.00", scan("1", "2"), remittance=None),
                    ],
                )
            ],
            msg_id="RENDER-1",
        ),
    ).json()["requestId"]

    for draft_id in (json_draft, file_draft):
        response = api.get(f"{URL}/{draft_id}", **custodian_auth)
        assert response.status_code == 200
        draft = Draft.objects.get(id=draft_id)
        shown = json.loads(response.content)
        expected = {
            **shown,
            "data": {
                **shown["data"],
                "draft": {
                    **shown["data"]["draft"],
                    "validPayments": dataclass_path(draft.valid_payments),
                    "invalidPayments": dataclass_path(draft.invalid_payments),
                },
            },
        }
        assert response.content == rendered(expected)
        assert draft.valid_payments and draft.invalid_payments

    json_shown = api.get(f"{URL}/{json_draft}", **custodian_auth).json()["data"]["draft"]
    assert sorted(
        [(e["index"], e["payment"]) for e in json_shown["validPayments"] + json_shown["invalidPayments"]],
        key=lambda pair: pair[0],
    ) == list(enumerate(sent))
    file_shown = api.get(f"{URL}/{file_draft}", **custodian_auth).json()["data"]["draft"]
    file_payments = [e["payment"] for e in file_shown["validPayments"] + file_shown["invalidPayments"]]
    assert {(p["endToEndId"], p.get("currency")) for p in file_payments} == {
        ("E-1", "GBP"),
        ("E-2", "EUR"),
        ("E-3", "GBP"),
    }


def test_the_get_leaves_the_payments_as_sent_in_the_database(api, custodian_auth, custodian_accounts):
    draft_id = verify(api, custodian_auth, [payment(custodian_accounts[0], "3.00")])

    with CaptureQueriesContext(connection) as queries:
        response = api.get(f"{URL}/{draft_id}", **custodian_auth)

    assert response.status_code == 200
    assert len(response.json()["data"]["draft"]["validPayments"]) == 1
    draft_reads = [q["sql"] for q in queries.captured_queries if 'FROM "batches_draft"' in q["sql"]]
    assert len(draft_reads) == 1
    assert '"batches_draft"."payments"' not in draft_reads[0]
    assert '"batches_draft"."instructions"' not in draft_reads[0]
    assert '"batches_draft"."valid_payments"' in draft_reads[0]
