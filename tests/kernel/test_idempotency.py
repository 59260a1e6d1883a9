"""The kernel's idempotency flow: one record per (owner, operation, key), replayed
byte for byte, claimed in a transaction of its own."""

import uuid

import pytest
from django.db import transaction

from authn.errors import AuthErrorCode
from bankapi.errors import ApiError, ErrorCode
from bankapi.idempotency import (
    Fingerprint,
    OwnerKind,
    StoredResponse,
    idempotency_owner_of,
    idempotent_call,
    idempotent_checked_call,
    idempotent_replay,
    stored_response_http,
)
from bankapi.models import IdempotencyRecord, Program
from bankapi.scope import Role, Scope
from payments.models import PaymentRequest
from tests.payments.conftest import payments_url
from tests.support.factories import ProgramFactory


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
        fingerprint=Fingerprint({"total": "10.00"}),
        work=work,
    )


def checked_call(program, *, owner_id, key, checks, work):
    return idempotent_checked_call(
        program=program,
        sandbox=True,
        owner_kind=OwnerKind.CUSTODIAN,
        owner_id=owner_id,
        operation="batches.submit",
        key=key,
        fingerprint=Fingerprint({"total": "10.00"}),
        checks=checks,
        work=work,
    )


def _never(_) -> StoredResponse:
    raise AssertionError("a duplicate's work ran")


def test_a_replay_sends_the_first_answer_byte_for_byte(api, customer_auth, account, beneficiary):
    body = {"amount": "10.00", "reference": "Bytes", "beneficiaryId": str(beneficiary.id)}
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


def test_a_payment_key_reused_on_an_international_transfer_is_a_separate_key(
    api, customer_auth, account, beneficiary, fx_rates
):
    key = str(uuid.uuid4())
    beneficiary = str(beneficiary.id)
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


def test_each_owner_and_each_program_has_its_own_keys(program):
    other_program = ProgramFactory(account_type=Program.AccountType.BUSINESS)
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


def test_a_claim_inside_a_callers_transaction_fails_loudly(program):
    work = Counter({})

    with pytest.raises(RuntimeError, match="durable"):
        with transaction.atomic():
            call(program, owner_id=uuid.uuid4(), key=uuid.uuid4(), work=work)

    assert work.runs == 0
    assert IdempotencyRecord.objects.count() == 0


def test_a_completed_key_can_be_replayed_before_any_other_check(program):
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


def test_the_owner_of_a_callers_key_follows_its_role(customer):
    base = {"program_id": customer.program_id, "sandbox": True, "user_id": uuid.uuid4()}
    custodian_id = uuid.uuid4()

    as_customer = Scope(**base, role=Role.CUSTOMER, customer_id=customer.id, custodian_id=None)
    as_custodian = Scope(**base, role=Role.CUSTODIAN, customer_id=None, custodian_id=custodian_id)
    as_management = Scope(**base, role=Role.MANAGEMENT, customer_id=None, custodian_id=None)

    assert idempotency_owner_of(as_customer) == (OwnerKind.CUSTOMER, customer.id)
    assert idempotency_owner_of(as_custodian) == (OwnerKind.CUSTODIAN, custodian_id)
    assert idempotency_owner_of(as_management) == (OwnerKind.MANAGEMENT, base["user_id"])


def test_the_checks_run_with_the_key_held_and_the_work_gets_what_they_found(program):
    owner, key = uuid.uuid4(), uuid.uuid4()
    seen = []

    def checks() -> str:
        seen.append(IdempotencyRecord.objects.get(key=key).state)
        return "challenge-1"

    first = checked_call(
        program,
        owner_id=owner,
        key=key,
        checks=checks,
        work=lambda found: StoredResponse.rendered(200, {"found": found}),
    )

    assert seen == [IdempotencyRecord.State.CLAIMED]
    assert first.content == b'{"found":"challenge-1"}'
    assert IdempotencyRecord.objects.get(key=key).state == IdempotencyRecord.State.COMPLETED


def test_a_duplicate_of_a_request_in_flight_is_a_409_before_its_checks_run(program):
    owner, key = uuid.uuid4(), uuid.uuid4()
    duplicate_checks, answers = [], []

    def first_checks() -> None:
        # While the first request holds the key, its duplicate arrives.
        try:
            checked_call(
                program, owner_id=owner, key=key, checks=lambda: duplicate_checks.append(1), work=_never
            )
        except ApiError as refused:
            answers.append((refused.status, refused.code))

    work = Counter({"batchId": "b-1"})
    checked_call(program, owner_id=owner, key=key, checks=first_checks, work=lambda _: work())
    replay = checked_call(
        program, owner_id=owner, key=key, checks=lambda: duplicate_checks.append(2), work=_never
    )

    assert answers == [(409, ErrorCode.IDEMPOTENCY_KEY_IN_PROGRESS)]
    assert duplicate_checks == [] and work.runs == 1
    assert replay.replayed and b'"batchId":"b-1"' in replay.content


def test_a_refusal_in_the_checks_releases_the_key_and_does_no_work(program):
    owner, key = uuid.uuid4(), uuid.uuid4()
    work = Counter({})

    def wrong_code() -> None:
        raise ApiError(AuthErrorCode.INVALID_CREDENTIALS, "Invalid code")

    with pytest.raises(ApiError):
        checked_call(program, owner_id=owner, key=key, checks=wrong_code, work=lambda _: work())

    assert work.runs == 0
    assert not IdempotencyRecord.objects.filter(key=key).exists()
    retried = checked_call(program, owner_id=owner, key=key, checks=lambda: None, work=lambda _: work())
    assert not retried.replayed and work.runs == 1
