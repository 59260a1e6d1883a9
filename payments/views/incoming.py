"""Money in: the sandbox's simulated credit transfers from other banks, and the
account's list of what arrived."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view

from bankapi.approval_gate import exempt
from bankapi.errors import not_found
from bankapi.http.api import PAGE_PARAMETERS, AccountScopedView, CursorListView, ScopedAPIView, respond_once
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses, management_program_id, post_responses
from bankapi.http.serializers import validated_body
from bankapi.idempotency import HEADER, Fingerprint, OwnerKind, idempotency_key_resolve
from bankapi.roles import Role
from bankapi.scope import get_or_not_found, program_for
from payments.fields import UuidStringField
from payments.incoming import IncomingOrder, incoming_payment_receive, incoming_payments_of
from payments.models import IncomingPayment
from payments.serializers_incoming import (
    IncomingPaymentCreateSerializer,
    IncomingPaymentListSerializer,
    IncomingPaymentSerializer,
)

PROGRAM_ID = management_program_id("The program whose sandbox it acts in.", management_only=True)
# The sandbox simulations' key, scoped to the caller (the management user, or
# the card's customer for card routes).
SANDBOX_IDEMPOTENCY_KEY = OpenApiParameter(
    HEADER,
    {"type": "string", "pattern": UuidStringField.openapi["pattern"]},
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "UUID, scoped to the caller. The same key with the same route, path ids, programId and body "
        "replays the first answer (header `Idempotent-Replayed: true`) and moves no money again; with "
        "any of them different, 400 IDEMPOTENCY_KEY_MISMATCH; 409 while its first request is still "
        "running. A refused request frees the key. Required on programs with requireIdempotencyKey."
    ),
)


class SandboxIncomingPaymentView(ScopedAPIView):
    token_use = "id"
    roles = (Role.MANAGEMENT,)
    approval_policy = exempt("sandbox: money arriving from another bank, nothing leaves the account")
    idempotency_operation = "sandbox.incoming_payments.create"

    def required_token_use(self, claims: dict) -> str:
        # Another role's own kind of token is a valid token of the wrong role: 403, not 401.
        return "id" if claims.get("role") == Role.MANAGEMENT else "access"

    @extend_schema(
        tags=["sandbox"],
        summary="Sandbox: a credit transfer arrives from another bank",
        description=(
            "Management id token with `programId`; production tokens get 404. Credits the account of "
            "the program's sandbox whose IBAN is `creditorIban` with one booking: balance and available "
            "rise at once, the transactions list gains a CREDIT whose `incomingPaymentId` names it "
            "(reference: the remittance information, else the debtor name), statements a CRDT entry "
            "with its `endToEndId` (camt.053 adds `RltdPties/Dbtr`, `RltdPties/DbtrAcct` and "
            "`RmtInf/Ustrd`), and the event `incoming_payment.received` is sent. The daily outbound "
            "limit is untouched. The same Idempotency-Key with the same programId and body replays the "
            "first answer; with anything else, 400 IDEMPOTENCY_KEY_MISMATCH."
        ),
        parameters=[PROGRAM_ID, SANDBOX_IDEMPOTENCY_KEY],
        request=IncomingPaymentCreateSerializer,
        responses=post_responses(
            "IncomingPaymentResponse",
            IncomingPaymentSerializer(),
            422,
            s400=(
                "VALIDATION_ERROR: a field breaks its rule, creditorIban names no account of the "
                "program's sandbox, or currency is not that account's. IDEMPOTENCY_KEY_MISMATCH."
            ),
            s404="RESOURCE_NOT_FOUND: the program is unknown; always for production tokens.",
            s409=(
                "INVALID_STATE: the credited account's customer's test clock is advancing (retry once "
                "it reads ready). IDEMPOTENCY_KEY_IN_PROGRESS: the first request with this key is still "
                "running."
            ),
            s422="LIMIT_EXCEEDED: the credit would take the balance past what an account can hold.",
        ),
    )
    def post(self, request):
        if not self.scope.sandbox:
            raise not_found()
        program = program_for(self.scope)
        key = idempotency_key_resolve(program=program, header=request.headers.get(HEADER), body_key=None)
        body = validated_body(IncomingPaymentCreateSerializer, request)
        order = IncomingOrder(
            creditor_iban=body["creditorIban"],
            amount=body["amount"],
            currency=body["currency"],
            debtor_name=body["debtorName"],
            debtor_iban=body.get("debtorIban", ""),
            end_to_end_id=body.get("endToEndId", IncomingPayment.NOT_PROVIDED),
            remittance_information=body.get("remittanceInformation", ""),
        )
        return respond_once(
            program=program,
            sandbox=True,
            owner_kind=OwnerKind.MANAGEMENT,
            owner_id=self.scope.user_id,
            operation=self.idempotency_operation,
            key=key,
            fingerprint=Fingerprint({"programId": str(program.id), "body": request.data}),
            checks=lambda: None,
            work=lambda _: incoming_payment_receive(program=program, sandbox=True, order=order),
            serializer=IncomingPaymentSerializer,
        )


@extend_schema_view(
    get=extend_schema(
        tags=["payments"],
        summary="Incoming payments of an account",
        operation_id="customers_accounts_incoming_payments_list",
        description="Credit transfers other banks sent to the account, newest first.",
        parameters=PAGE_PARAMETERS,
        responses={
            200: envelope("IncomingPaymentListResponse", IncomingPaymentListSerializer()),
            **error_responses(400, 401, 403, 404),
        },
    )
)
class IncomingPaymentListView(AccountScopedView, CursorListView):
    serializer = IncomingPaymentListSerializer
    items_key = "incomingPayments"
    created_field = "received_at"

    def rows(self):
        return incoming_payments_of(self.account)


class IncomingPaymentView(AccountScopedView):
    @extend_schema(
        tags=["payments"],
        summary="An incoming payment of an account",
        responses={
            200: envelope("IncomingPaymentDetailResponse", IncomingPaymentSerializer()),
            **error_responses(
                401,
                403,
                404,
                s404="RESOURCE_NOT_FOUND: no such customer, account or incoming payment for this caller.",
            ),
        },
    )
    def get(self, request, customerId: str, accountId: str, incomingPaymentId: str):
        incoming = get_or_not_found(incoming_payments_of(self.account), incomingPaymentId, "Incoming payment")
        return ok(IncomingPaymentSerializer(incoming).data)
