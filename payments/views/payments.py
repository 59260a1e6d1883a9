"""Payment routes. Views parse and authorise; services decide."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from bankapi.approval_gate import COVERED, HELD_RESPONSE, Hold, approval_hold, exempt
from bankapi.errors import ApiError
from bankapi.http.api import AccountScopedView, ScopedAPIView, respond_once
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import InputSerializer
from bankapi.idempotency import (
    HEADER,
    Fingerprint,
    FirstUse,
    OwnerKind,
    StoredResponse,
    idempotency_key_resolve,
)
from bankapi.models import Account
from bankapi.ops.metrics import PAYMENTS
from bankapi.scope import parse_uuid
from payments.approval_content import payment_hold
from payments.models import Beneficiary, PaymentRequest, ScheduledPayment
from payments.selectors import (
    sandbox_payment_request,
)
from payments.serializers import (
    InternationalTransferCreatedSerializer,
    InternationalTransferCreateSerializer,
    PaymentCreatedSerializer,
    PaymentCreateSerializer,
    PaymentFailSerializer,
    SandboxPaymentRequestSerializer,
    UuidStringField,
    payee_from_wire,
    payment_created_data,
)
from payments.services import create, transfers
from payments.services.acceptance import PaymentInstruction
from payments.services.create import (
    PaymentSubmission,
    payment_fingerprint,
    payment_instruction_build,
    payment_submit,
    payment_submit_at_once,
)
from payments.services.settlement import payment_fail, payment_settle
from payments.services.transfers import (
    international_transfer_fingerprint,
    international_transfer_instruction_build,
    international_transfer_submit,
)

IDEMPOTENCY_KEY = OpenApiParameter(
    HEADER,
    # A string with the UUID pattern, not `format: uuid`: clients generated with
    # openapi-python-client would then pass a UUID object as a header and fail.
    {"type": "string", "pattern": UuidStringField.openapi["pattern"]},
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "UUID, scoped to the customer. A retry with the same key answers the first response "
        "(header `Idempotent-Replayed: true`) instead of paying twice; 400 if it was used with "
        "another amount, accountId or beneficiaryId; 409 while its first request is still running. "
        "A retry answers as the first did even if its beneficiary or quote has changed since; a "
        "refused request frees the key. "
        "Wins over the body's idempotencyKey. Required on programs with requireIdempotencyKey."
    ),
)


class AccountCreateView(AccountScopedView):
    """A create from an account, made at most once per Idempotency-Key of the
    account's customer. The body is checked (400) and the key read; then the key
    is claimed, and only with it held does the service resolve what the body
    names (404) and pay: a duplicate answers 409 or the first answer, never a
    refusal of its own. A payment's first use of a key may instead be one
    statement with the key's record (`bankapi.idempotency.FirstUse`); a
    duplicate then answers the first answer."""

    idempotency_operation: str

    def validated_body(self, serializer: type[InputSerializer]) -> dict:
        """The body validated by `serializer` (the one definition of its rules,
        which the OpenAPI document states), with the account in its context."""
        return serializer.checked(self.body(), {"account": self.account})

    def idempotency_key(self, body: dict) -> uuid.UUID | None:
        return idempotency_key_resolve(
            program=self.account.program,
            header=self.request.headers.get(HEADER),
            body_key=body.get("idempotencyKey"),
        )

    def respond_once(
        self, *, key: uuid.UUID | None, fingerprint: Fingerprint, checks, work, serializer, work_at_once=None
    ) -> HttpResponse:
        return respond_once(
            program=self.account.program,
            sandbox=self.account.sandbox,
            owner_kind=OwnerKind.CUSTOMER,
            owner_id=self.account.customer_id,
            operation=self.idempotency_operation,
            key=key,
            fingerprint=fingerprint,
            checks=checks,
            work=work,
            serializer=serializer,
            work_at_once=work_at_once,
            mismatch_message=create.MISMATCH_MESSAGE,
        )


def _counted(submission: PaymentSubmission) -> PaymentSubmission:
    """Counts a payment made now (not a schedule for a later day), once it is
    committed: a replay of its answer does not run this again."""
    made = submission.payment_request
    if made is not None:
        outcome = "held" if made.status == PaymentRequest.Status.PENDING_TM else "accepted"
        transaction.on_commit(lambda: PAYMENTS.labels(outcome=outcome).inc())
    return submission


Checked = tuple[PaymentInstruction, Hold | None]


@dataclass(frozen=True)
class PaymentCreate:
    """One payment create's steps, as `respond_once` runs them under its key:
    `checks` builds the instruction from the validated body (its beneficiary
    resolved: 404) and asks the approval policy whether it is held; then
    `work_at_once` pays in one statement with the key's record, or `work` pays
    or schedules it in a transaction (a held one answers 202 instead)."""

    account: Account
    user_id: uuid.UUID
    body: dict[str, Any]
    # The beneficiary read with the caller, if any (`AccountScopedView.preloaded_row`).
    beneficiary_read: Beneficiary | None

    def fingerprint(self) -> Fingerprint:
        body = self.body
        return payment_fingerprint(
            account=self.account, amount=body["amount"], beneficiary_id=body.get("beneficiaryId")
        )

    def checks(self) -> Checked:
        body = self.body
        quote = body.get("cryptoQuote")
        instruction = payment_instruction_build(
            account=self.account,
            amount=body["amount"],
            currency=body.get("currency", ""),
            reference=body["reference"],
            purpose=body.get("purpose", ""),
            charge_bearer=body.get("chargeBearer", ""),
            beneficiary_id=body.get("beneficiaryId"),
            payee=payee_from_wire(body["payee"]) if "payee" in body else None,
            virtual_iban=body.get("virtualIban", ""),
            fee_waived=body.get("feeWaived", False),
            quote_id=quote["quoteId"] if quote else None,
            beneficiary_read=self.beneficiary_read,
        )
        # The approval policy, before anything moves (it only reads): a held payment answers 202.
        return instruction, payment_hold(
            account=self.account, user_id=self.user_id, instruction=instruction, body=body
        )

    def work(self, checked: Checked) -> PaymentSubmission | StoredResponse:
        instruction, hold = checked
        if hold:
            return approval_hold(hold)
        return _counted(payment_submit(account=self.account, instruction=instruction, **self._when()))

    def work_at_once(
        self,
        checked: Checked,
        claim: FirstUse | None,
        rendered: Callable[[PaymentSubmission], StoredResponse],
    ) -> StoredResponse | None:
        instruction, hold = checked
        if hold:
            return None
        done = payment_submit_at_once(
            account=self.account, instruction=instruction, claim=claim, rendered=rendered, **self._when()
        )
        if done is None:
            return None
        submission, response = done
        _counted(submission)
        return response

    def _when(self) -> dict[str, Any]:
        return {
            "scheduled_date": self.body.get("scheduledDate"),
            "frequency": self.body.get("frequency", ScheduledPayment.Frequency.NEVER),
        }


class PaymentCreateView(AccountCreateView):
    approval_policy = COVERED
    customer_row = Beneficiary
    idempotency_operation = create.OPERATION

    def customer_row_id(self) -> uuid.UUID | None:
        # The beneficiary the body names is read with the caller and its account.
        named = self.body_value("beneficiaryId")
        return parse_uuid(named) if isinstance(named, str) else None

    @extend_schema(
        tags=["payments"],
        summary="Send a payment (or schedule one)",
        description=(
            "Accepts a payment from the account to a saved beneficiary (`beneficiaryId`), to "
            "inline payee details (`payee`), or funded through a quote (`cryptoQuote`): exactly "
            "one of the three. Checks, in order: the per-payment limit and the account's daily "
            "outbound limit (UTC day) -> 422 LIMIT_EXCEEDED; the balance for amount plus fee -> "
            "422 INSUFFICIENT_FUNDS. An accepted payment answers 200 with status `success` "
            "(accepted, not settled) and appears as PENDING, or PENDING_TM when held for "
            "compliance review at the program's review threshold, on the payment-requests list."
        ),
        parameters=[IDEMPOTENCY_KEY],
        request=PaymentCreateSerializer,
        responses={
            200: OpenApiResponse(
                envelope("PaymentCreatedResponse", PaymentCreatedSerializer()),
                description="Accepted. `Idempotent-Replayed: true` on a replay of an earlier answer.",
            ),
            202: HELD_RESPONSE,
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                422,
                s400="VALIDATION_ERROR (field errors in `errors`), or IDEMPOTENCY_KEY_MISMATCH.",
                s404="RESOURCE_NOT_FOUND: customer, account or beneficiary (another customer's included).",
                s409="IDEMPOTENCY_KEY_IN_PROGRESS: the key's first request is still running.",
                s422="LIMIT_EXCEEDED, INSUFFICIENT_FUNDS, NOT_SUPPORTED (fee waiver off), QUOTE_EXPIRED, "
                "QUOTE_ALREADY_USED: stopped before acceptance, nothing was paid.",
            ),
        },
    )
    def post(self, request, customerId: str, accountId: str) -> HttpResponse:
        try:
            return self.create()
        except ApiError as error:
            if error.status == 422:
                PAYMENTS.labels(outcome="refused").inc()
            raise

    def create(self) -> HttpResponse:
        body = self.validated_body(PaymentCreateSerializer)
        read = self.preloaded_row()
        create = PaymentCreate(
            account=self.account,
            user_id=self.scope.user_id,
            body=body,
            beneficiary_read=read if isinstance(read, Beneficiary) else None,
        )
        return self.respond_once(
            key=self.idempotency_key(body),
            fingerprint=create.fingerprint(),
            checks=create.checks,
            work=create.work,
            work_at_once=create.work_at_once,
            serializer=payment_created_data,
        )


class InternationalTransferCreateView(AccountCreateView):
    approval_policy = exempt("its FX quote lives 30 seconds, too short to wait for approvers")
    idempotency_operation = transfers.OPERATION

    @extend_schema(
        tags=["payments"],
        summary="Send an international transfer using an FX quote",
        description=(
            "Pays a beneficiary (`beneficiaryId`) or inline payee (`payee`) in another currency, "
            "converted at a live quote from GET /v1/accounts/{accountId}/fx/quote that sells the "
            "account currency. The account is debited the quote's sell amount plus the fee; the "
            "payee is paid the quote's buy amount. The quote is spent only if the transfer is "
            "accepted. Same checks and lifecycle as a payment: limits apply to the sell amount, "
            "then funds; the request appears on payment-requests in the buy currency."
        ),
        parameters=[IDEMPOTENCY_KEY],
        request=InternationalTransferCreateSerializer,
        responses={
            200: OpenApiResponse(
                envelope("InternationalTransferCreatedResponse", InternationalTransferCreatedSerializer()),
                description="Accepted. `Idempotent-Replayed: true` on a replay of an earlier answer.",
            ),
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                422,
                s400="VALIDATION_ERROR (e.g. a quote that does not sell the account currency), or "
                "IDEMPOTENCY_KEY_MISMATCH.",
                s404="RESOURCE_NOT_FOUND: customer, account, beneficiary or quote.",
                s409="IDEMPOTENCY_KEY_IN_PROGRESS: the key's first request is still running.",
                s422="QUOTE_EXPIRED, QUOTE_ALREADY_USED, PROVIDER_ERROR (FX off), LIMIT_EXCEEDED, "
                "INSUFFICIENT_FUNDS: stopped before acceptance, nothing was paid.",
            ),
        },
    )
    def post(self, request, customerId: str, accountId: str) -> HttpResponse:
        body = self.validated_body(InternationalTransferCreateSerializer)
        key = self.idempotency_key(body)
        return self.respond_once(
            key=key,
            fingerprint=international_transfer_fingerprint(
                account=self.account, quote_id=body["quoteId"], beneficiary_id=body.get("beneficiaryId")
            ),
            checks=lambda: international_transfer_instruction_build(
                account=self.account,
                quote_id=body["quoteId"],
                reference=body["reference"],
                purpose=body.get("purpose", ""),
                charge_bearer=body.get("chargeBearer", ""),
                beneficiary_id=body.get("beneficiaryId"),
                payee=payee_from_wire(body["payee"]) if "payee" in body else None,
            ),
            work=lambda instruction: international_transfer_submit(
                account=self.account, instruction=instruction
            ),
            serializer=InternationalTransferCreatedSerializer,
        )


SANDBOX_ERRORS = error_responses(
    400,
    401,
    403,
    404,
    409,
    s404="RESOURCE_NOT_FOUND: no such request for this caller; always for production tokens.",
    s409="INVALID_STATE: the request is not in a state that allows this.",
)


class SandboxSettleView(ScopedAPIView):
    approval_policy = exempt("sandbox: settles a payment already accepted, after any approval it needed")

    @extend_schema(
        tags=["sandbox"],
        summary="Sandbox: settle a PENDING payment request",
        description="Sandbox tokens only. Nothing settles on its own in the sandbox.",
        request=None,
        responses={
            200: envelope("SandboxSettleResponse", SandboxPaymentRequestSerializer()),
            **SANDBOX_ERRORS,
        },
    )
    def post(self, request, requestId: str):
        payment = payment_settle(sandbox_payment_request(self.scope, requestId))
        return ok(SandboxPaymentRequestSerializer(payment).data)


class SandboxFailView(ScopedAPIView):
    approval_policy = exempt("sandbox: fails a payment and returns its funds")

    @extend_schema(
        tags=["sandbox"],
        summary="Sandbox: fail a PENDING or PENDING_TM payment request",
        description=(
            "Sandbox tokens only. The acceptance is reversed (amount and fee back on the account) "
            "and the request stays listed as FAILED with `failureReason`."
        ),
        request=PaymentFailSerializer,
        responses={200: envelope("SandboxFailResponse", SandboxPaymentRequestSerializer()), **SANDBOX_ERRORS},
    )
    def post(self, request, requestId: str):
        payment_request = sandbox_payment_request(self.scope, requestId)
        body = PaymentFailSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reason = body.validated_data.get("reason", "Failed in the sandbox")
        return ok(SandboxPaymentRequestSerializer(payment_fail(payment_request, reason)).data)
