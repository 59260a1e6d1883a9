"""The kernel's idempotency flow: one record per (owner, operation, key), replayed
byte for byte, claimed in a transaction of its own."""

import uuid

import pytest
from django.db import transaction

from bankapi.idempotency import (
    OwnerKind,
    StoredResponse,
    idempotency_owner_of,
    idempotent_call,
    idempotent_replay,
    stored_response_http,
)
from bankapi.models import Account, Customer, IdempotencyRecord, Program
from bankapi.scope import Role, Scope
from payments.models import PaymentRequest
from tests.payments.conftest import payments_url


class Counter:
    """A create that counts how often it really ran."""

    def __init__(self, answer: dict):
        self.runs = 0
        self.answer = answer

    def __call__(self) -> StoredResponse:
        self.runs += 1
        return StoredResponse.rendered(200, {"success": True, "data": self.answer | {"run": self.runs}})


def call(program, *, owner_kind=OwnerKind.CUSTOMER, owner_id, key, work, sandbox=True):
    return idempotent_call(
        program=program,
        sandbox=sandbox,
        owner_kind=owner_kind,
        owner_id=owner_id,
        operation="batches.submit",
        key=key,
        fingerprint={"total": "10.00"},
        work=work,
    )


@pytest.fixture
def program(sandbox) -> Program:
    return Program.objects.get(id=sandbox["consumerProgramId"])


def test_a_replay_sends_the_first_answer_byte_for_byte(api, sandbox, customer_auth):
    account = Account.objects.get(id=sandbox["customer"]["accountId"])
    body = {"amount": "10.00", "reference": "Bytes", "beneficiaryId": sandbox["customer"]["beneficiaryId"]}
    key = str(uuid.uuid4())

    def send():
        return api.post(
            payments_url(account.customer_id, account.id),
            body,
            format="json",
            HTTP_IDEMPOTENCY_KEY=key,
            **customer_auth,
        )

    first, retry = send(), send()

    assert first.status_code == retry.status_code == 200
    assert retry.content == first.content
    assert retry["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert retry["Content-Type"] == first["Content-Type"] == "application/json"
    assert bytes(IdempotencyRecord.objects.get(key=key).response_body) == first.content


def test_a_payment_key_reused_on_an_international_transfer_is_a_separate_key(api, sandbox, customer_auth):
    account = Account.objects.get(id=sandbox["customer"]["accountId"])
    key = str(uuid.uuid4())
    beneficiary = sandbox["customer"]["beneficiaryId"]
    quote = api.get(
        f"/v1/accounts/{account.id}/fx/quote",
        {"currencyOne": "GBP", "currencyTwo": "EUR", "amountCurrency": "GBP", "amount": "100.00"},
        **customer_auth,
    ).json()["data"]

    payment = api.post(
        payments_url(account.customer_id, account.id),
        {"amount": "10.00", "reference": "Rent", "beneficiaryId": beneficiary},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
        **customer_auth,
    )
    transfer = api.post(
        payments_url(account.customer_id, account.id, "international-transfers"),
        {"quoteId": quote["quoteId"], "beneficiaryId": beneficiary, "reference": "Tuition"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
        **customer_auth,
    )

    assert payment.status_code == transfer.status_code == 200
    assert "Idempotent-Replayed" not in transfer
    assert transfer.json()["data"]["internationalTransfer"]["quoteId"] == quote["quoteId"]
    assert PaymentRequest.objects.count() == 2
    assert set(IdempotencyRecord.objects.filter(key=key).values_list("operation", flat=True)) == {
        "payments.create",
        "payments.international_transfer",
    }


def test_each_owner_and_each_program_has_its_own_keys(sandbox, program):
    other_program = Program.objects.get(id=sandbox["businessProgramId"])
    owner, key = uuid.uuid4(), uuid.uuid4()
    work = Counter({"batchId": "b-1"})

    custodian = {"owner_kind": OwnerKind.CUSTODIAN, "owner_id": owner, "key": key, "work": work}

    first = call(program, **custodian)
    replay = call(program, **custodian)
    as_management = call(program, **custodian | {"owner_kind": OwnerKind.MANAGEMENT})
    in_other_program = call(other_program, **custodian)
    in_production = call(program, **custodian, sandbox=False)

    assert replay.content == first.content and replay.replayed and not first.replayed
    assert [r.replayed for r in (as_management, in_other_program, in_production)] == [False] * 3
    assert work.runs == 4
    assert IdempotencyRecord.objects.filter(key=key).count() == 4


def test_a_claim_inside_a_callers_transaction_fails_loudly(sandbox, program):
    work = Counter({})

    with pytest.raises(RuntimeError, match="durable"):
        with transaction.atomic():
            call(program, owner_id=uuid.uuid4(), key=uuid.uuid4(), work=work)

    assert work.runs == 0
    assert IdempotencyRecord.objects.count() == 0


def test_a_completed_key_can_be_replayed_before_any_other_check(sandbox, program):
    owner, key = uuid.uuid4(), uuid.uuid4()
    lookup = {
        "program": program,
        "sandbox": True,
        "owner_kind": OwnerKind.MANAGEMENT,
        "owner_id": owner,
        "operation": "batches.submit",
    }
    assert idempotent_replay(**lookup, key=key) is None

    first = call(program, owner_kind=OwnerKind.MANAGEMENT, owner_id=owner, key=key, work=Counter({"n": 1}))
    replay = idempotent_replay(**lookup, key=key)
    http = stored_response_http(replay)

    assert replay.content == first.content and replay.replayed
    assert (http.status_code, http.content, http["Idempotent-Replayed"]) == (200, first.content, "true")
    assert idempotent_replay(**lookup | {"operation": "applications.create"}, key=key) is None
    assert idempotent_replay(**lookup, key=None) is None


def test_the_owner_of_a_callers_key_follows_its_role(sandbox):
    customer = Customer.objects.get(id=sandbox["customer"]["customerId"])
    base = {"program_id": customer.program_id, "sandbox": True, "user_id": uuid.uuid4()}
    custodian_id = uuid.uuid4()

    as_customer = Scope(**base, role=Role.CUSTOMER, customer_id=customer.id, custodian_id=None)
    as_custodian = Scope(**base, role=Role.CUSTODIAN, customer_id=None, custodian_id=custodian_id)
    as_management = Scope(**base, role=Role.MANAGEMENT, customer_id=None, custodian_id=None)

    assert idempotency_owner_of(as_customer) == (OwnerKind.CUSTOMER, customer.id)
    assert idempotency_owner_of(as_custodian) == (OwnerKind.CUSTODIAN, custodian_id)
    assert idempotency_owner_of(as_management) == (OwnerKind.MANAGEMENT, base["user_id"])
