"""Batch payment routes: the custodian-wide route and the single-customer route.

Both share every service; the single-customer route only narrows the payers
(and what is listed) to the path's customer.
"""

import uuid

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from authn.serializers import StepUpPasskeyChallengeSerializer, confirmation_of, passkey_step_up_data
from bankapi.approval_gate import COVERED, HELD_RESPONSE
from bankapi.errors import ApiError
from bankapi.formats import CALENDAR_DAY_PATTERN
from bankapi.http.api import ScopedAPIView
from bankapi.http.pagination import NEXT_TOKEN_DESCRIPTION, NEXT_TOKEN_PATTERN
from bankapi.http.responses import ok, ok_flat
from bankapi.http.schema import envelope, error_responses, management_program_id
from bankapi.idempotency import idempotency_key_parse, stored_response_http
from bankapi.roles import Role
from bankapi.scope import access_customer, parse_uuid
from batches.actors import Actor
from batches.models import Batch
from batches.presenters import (
    batch_detail,
    batch_summary,
    draft_detail,
    draft_status,
    draft_summary,
    initiate_answer,
    submit_answer,
)
from batches.rules import sent_payment_from_wire
from batches.selectors import (
    ItemsSummary,
    batch_items,
    batch_or_draft,
    batches_page,
    drafts_page,
    item_summaries,
    list_query_parse,
)
from batches.sent import SentPayment
from batches.serializers import (
    BatchActionSerializer,
    BatchDetailSerializer,
    BatchListSerializer,
    InitiateAnswerSerializer,
    SubmitAnswerSerializer,
    VerifyAnswerSerializer,
)
from batches.services.challenges import batch_initiate, submitted_payments
from batches.services.drafts import draft_create
from batches.services.submit import OPERATION as SUBMIT_OPERATION
from batches.services.submit import batch_passkey_challenge, batch_submit, batch_submit_replay

PROGRAM_ID = management_program_id(
    "Management callers (id token): the program to read, required. Ignored for other callers.",
    management_only=False,
)
LIST_PARAMETERS = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1},
        OpenApiParameter.QUERY,
        required=False,
        description="Page size, 1 to 200 (default 50); larger values are clamped to 200. "
        "0, negatives, non-integers and mixed strings such as `10abc` are a 400.",
    ),
    OpenApiParameter(
        "date",
        {"type": "string", "pattern": CALENDAR_DAY_PATTERN},
        OpenApiParameter.QUERY,
        required=False,
        description="YYYY-MM-DD, a real calendar day: only batches created that UTC day. "
        "Wins over lookbackDays.",
    ),
    OpenApiParameter(
        "lookbackDays",
        {"type": "integer", "minimum": 1},
        OpenApiParameter.QUERY,
        required=False,
        description="Integer of at least 1: management callers see the batches of the last N days "
        "when date is absent. Always validated; ignored for other callers.",
    ),
    OpenApiParameter(
        "includeItemSummary",
        str,
        OpenApiParameter.QUERY,
        required=False,
        description="Only the exact string `true` adds itemsStatus and totalAmount to each batch "
        "(not to drafts).",
    ),
    OpenApiParameter(
        "drafts",
        str,
        OpenApiParameter.QUERY,
        required=False,
        description="Only the exact string `true` lists the caller's own drafts instead of batches.",
    ),
    OpenApiParameter(
        "nextToken",
        {"type": "string", "pattern": NEXT_TOKEN_PATTERN},
        OpenApiParameter.QUERY,
        required=False,
        description=NEXT_TOKEN_DESCRIPTION,
    ),
    PROGRAM_ID,
]

POST_DESCRIPTION = """One route, four steps chosen by `action`:

- `verify` (`payments`): stores a draft at once and checks its payments in the background.
  Answers `{success, requestId, status}` (not wrapped in `data`); `requestId` is the draft's id.
  Read it with GET /v1/batch-payments/{batchId} (that id): `payloadStatus` is PENDING until every
  payment is checked, then the draft lists `validPayments` and `invalidPayments` (with reasons).
- `initiate` (`payments`, optional `batchId` of a draft; only `batchId` for a draft made from an
  ISO 20022 file, whose payments are the file's): answers `totalAmount` (the sum of the
  valid payments), `currency` and an `scaChallenge` (valid 5 minutes) bound to exactly these
  payments.
- `passkey-challenge` (`scaChallenge`): opens a single-use passkey session (5 minutes) for the
  challenge: `{passkeySession, fido2options}`. Any number may be opened.
- `submit` (`payments`, `scaChallenge`, `confirmation`, optional `batchId` and `idempotencyKey`;
  without `payments` for a file's draft):
  confirms with a passkey assertion, a TOTP code or (where the program offers it) a PIN, and
  creates the batch: `{batchId, status, counts}`. Every payment becomes an item; invalid ones
  are FAILED at once with their reasons. The batch is then funded (per payer account) and paid
  in the background. Checks, in order: a known `idempotencyKey` answers the first answer again;
  the body (400); then the key is claimed (a copy of a submit still running: 409
  IDEMPOTENCY_KEY_IN_PROGRESS; the same key with other payments: 400 IDEMPOTENCY_KEY_MISMATCH);
  the scaChallenge (unknown, used, expired or for other payments: 400); the draft (404, or 422
  DRAFT_EXPIRED); the confirmation method (422 NOT_SUPPORTED); the confirmation itself (401
  INVALID_CREDENTIALS). Copies of one submit sent at once therefore make one batch and answer its
  answer or 409; none of them is checked or counted as a wrong code. Only a successful submit
  keeps its key.

Only the body's JSON shape is a 400 (unknown or duplicate keys, wrong types, more than 10,000
payments); a payment that breaks a rule is reported invalid and the others go on."""

MAX_BODY_BYTES = 16 * 1024 * 1024
POST_ANSWER = PolymorphicProxySerializer(
    component_name="BatchActionAnswer",
    serializers=[
        VerifyAnswerSerializer,
        envelope("BatchInitiateResponse", InitiateAnswerSerializer()),
        envelope("BatchPasskeyChallengeResponse", StepUpPasskeyChallengeSerializer()),
        envelope("BatchSubmitResponse", SubmitAnswerSerializer()),
    ],
    resource_type_field_name=None,
)
POST_RESPONSES = {
    200: OpenApiResponse(
        POST_ANSWER,
        description="verify: `{success, requestId, status}`. initiate: `{success, data: InitiateAnswer}`. "
        "passkey-challenge: `{success, data: {passkeySession, fido2options}}`. "
        "submit: `{success, data: SubmitAnswer}` (header `Idempotent-Replayed: true` on a replay).",
    ),
    # submit held by the approval policy of the custodian (or customer): the batch is made once approved.
    202: HELD_RESPONSE,
    **error_responses(
        400,
        401,
        403,
        404,
        409,
        413,
        422,
        429,
        s413=f"PAYLOAD_TOO_LARGE: the body is over {MAX_BODY_BYTES} bytes.",
        s400="VALIDATION_ERROR: the body's shape, or an unknown, used, expired or mismatched scaChallenge; "
        "IDEMPOTENCY_KEY_MISMATCH.",
        s401="UNAUTHORIZED (token), or INVALID_CREDENTIALS: wrong code, PIN or passkey assertion.",
        s404="RESOURCE_NOT_FOUND: the customer (single-customer route) or the draft named by batchId.",
        s409="INVALID_STATE: the draft is still being verified; IDEMPOTENCY_KEY_IN_PROGRESS.",
        s422="DRAFT_EXPIRED; NOT_SUPPORTED: a confirmation method the program does not offer, or a "
        "passkey challenge for a user without a passkey.",
        s429="TOO_MANY_REQUESTS: the user's second factor is locked after wrong codes or PINs; or a PIN "
        "came while too many password and PIN checks were under way (not counted: try again).",
    ),
}


def _list_body(actor: Actor, request: Request) -> dict:
    query = list_query_parse(request.query_params)
    if query.drafts:
        page = drafts_page(actor, query, request)
        return {"paymentsBatches": [draft_summary(d) for d in page.items], "nextToken": page.next_token}
    page = batches_page(actor, query, request)
    summaries = item_summaries([b.id for b in page.items]) if query.include_item_summary else None
    return {
        "paymentsBatches": [
            batch_summary(
                batch,
                summary=summaries.get(batch.id, ItemsSummary()) if summaries is not None else None,
                management=actor.is_management,
            )
            for batch in page.items
        ],
        "nextToken": page.next_token,
    }


def _one_body(actor: Actor, batch_id: str) -> dict:
    found = batch_or_draft(actor, batch_id, draft_payments=False)
    if isinstance(found, Batch):
        return batch_detail(found, batch_items(found))
    return draft_detail(found)


class BatchRouteView(ScopedAPIView):
    """GET takes customers' and custodians' access tokens and management id tokens;
    POST (making batches) only customers' and custodians' access tokens."""

    roles: tuple[str, ...] = (Role.CUSTOMER, Role.CUSTODIAN, Role.MANAGEMENT)
    post_roles: tuple[str, ...] = (Role.CUSTOMER, Role.CUSTODIAN)
    # POST's submit action, made once per idempotencyKey.
    idempotency_operation: str | None = SUBMIT_OPERATION
    # A batch of 10,000 payments is larger than the API's usual body limit.
    max_body_bytes = MAX_BODY_BYTES

    @classmethod
    def roles_for(cls, method: str) -> tuple[str, ...]:
        return cls.post_roles if method == "POST" else cls.roles

    def initial(self, request, *args, **kwargs) -> None:
        # Read by the TokenRequired permission: a management token on POST is a 403.
        self.roles = self.roles_for(request.method)
        super().initial(request, *args, **kwargs)

    def required_token_use(self, claims: dict) -> str:
        return "id" if claims.get("role") == Role.MANAGEMENT else "access"

    def actor(self) -> Actor:
        return Actor(scope=self.scope)

    def _post(self, request) -> Response | HttpResponse:
        actor, user = self.actor(), request.user
        raw = request.data
        if isinstance(raw, dict) and raw.get("action") == "submit":
            # A remembered key answers before anything else is looked at.
            replayed = batch_submit_replay(actor=actor, key=_key_or_none(raw.get("idempotencyKey")))
            if replayed is not None:
                return stored_response_http(replayed)
        body = BatchActionSerializer(data=raw)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        action = data["action"]
        if action == "verify":
            sent = [sent_payment_from_wire(payment) for payment in data["payments"]]
            draft = draft_create(actor=actor, payments=sent)
            return ok_flat({"requestId": str(draft.id), "status": draft_status(draft)})
        if action == "initiate":
            initiated = batch_initiate(
                actor=actor, user=user, payments=_sent(data.get("payments")), draft_id=data.get("batchId")
            )
            return ok(initiate_answer(initiated))
        if action == "passkey-challenge":
            challenge_id = parse_uuid(data["scaChallenge"]["id"])
            return ok(
                passkey_step_up_data(
                    batch_passkey_challenge(actor=actor, user=user, challenge_id=challenge_id)
                )
            )
        stored = batch_submit(
            actor=actor,
            user=user,
            # A file draft's own payments when none are sent (checked before anything else).
            payments=submitted_payments(actor, _sent(data.get("payments")), data.get("batchId")),
            challenge_id=parse_uuid(data["scaChallenge"]["id"]),
            confirmation=confirmation_of(data["confirmation"]),
            draft_id=data.get("batchId"),
            idempotency_key=data.get("idempotencyKey"),
            present=submit_answer,
        )
        return stored_response_http(stored)


def _sent(payments: list[dict] | None) -> list[SentPayment] | None:
    """The body's payments (their shape checked) in the domain's names."""
    return None if payments is None else [sent_payment_from_wire(payment) for payment in payments]


def _key_or_none(value) -> uuid.UUID | None:
    try:
        return idempotency_key_parse(value, "idempotencyKey")
    except ApiError:
        return None


class BatchListView(BatchRouteView):
    approval_policy = COVERED  # submit

    @extend_schema(
        tags=["batch payments"],
        operation_id="batch_payments_list",
        summary="List batches (or drafts), newest first",
        description="The caller's batches: a custodian's, a customer's own, or for a management caller "
        "(id token, `programId` required) every batch of the program, with customerName and "
        "custodianName. With drafts=true, the caller's drafts instead (never for management callers).",
        parameters=LIST_PARAMETERS,
        responses={
            200: envelope("BatchListResponse", BatchListSerializer()),
            **error_responses(400, 401, 403, 404, s404="RESOURCE_NOT_FOUND: no such program (management)."),
        },
    )
    def get(self, request):
        return ok(_list_body(self.actor(), request))

    @extend_schema(
        tags=["batch payments"],
        operation_id="batch_payments_action",
        summary="Batch payments: verify, initiate, passkey-challenge, submit",
        description=POST_DESCRIPTION,
        request=BatchActionSerializer,
        responses=POST_RESPONSES,
    )
    def post(self, request):
        return self._post(request)


class BatchView(BatchRouteView):
    @extend_schema(
        tags=["batch payments"],
        operation_id="batch_payments_get",
        summary="One batch with its items, or a draft",
        description="`{batchId, status, paymentsBatchItems}` for a batch; `{batchId, draft}` for a draft not "
        "yet submitted (its payload only while verified and unexpired). Another caller's batch or draft, "
        "and any draft for a management caller: 404.",
        parameters=[PROGRAM_ID],
        responses={
            200: envelope("BatchDetailResponse", BatchDetailSerializer()),
            **error_responses(
                400, 401, 403, 404, s404="RESOURCE_NOT_FOUND: no such batch or draft for this caller."
            ),
        },
    )
    def get(self, request, batchId: str):
        return ok(_one_body(self.actor(), batchId))


class CustomerBatchRouteView(BatchRouteView):
    """The single-customer route: a customer (or its custodian) paying from its own accounts."""

    roles = (Role.CUSTOMER, Role.CUSTODIAN)

    def required_token_use(self, claims: dict) -> str:
        return "access"

    def actor(self) -> Actor:
        return Actor(scope=self.scope, route_customer=self._customer)

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        self._customer = access_customer(self.scope, kwargs["customerId"])


class CustomerBatchListView(CustomerBatchRouteView):
    approval_policy = COVERED  # submit

    @extend_schema(
        tags=["batch payments"],
        operation_id="customer_batch_payments_list",
        summary="List one customer's batches (or drafts)",
        description="As GET /v1/batch-payments, narrowed to batches paid from the customer's own accounts.",
        parameters=LIST_PARAMETERS[:-1],
        responses={
            200: envelope("CustomerBatchListResponse", BatchListSerializer()),
            **error_responses(400, 401, 403, 404, s404="RESOURCE_NOT_FOUND: the customer."),
        },
    )
    def get(self, request, customerId: str):
        return ok(_list_body(self.actor(), request))

    @extend_schema(
        tags=["batch payments"],
        operation_id="customer_batch_payments_action",
        summary="One customer's batch payments: verify, initiate, passkey-challenge, submit",
        description=POST_DESCRIPTION + "\n\nEvery payer must be an account of the path's customer.",
        request=BatchActionSerializer,
        responses=POST_RESPONSES,
    )
    def post(self, request, customerId: str):
        return self._post(request)


class CustomerBatchView(CustomerBatchRouteView):
    @extend_schema(
        tags=["batch payments"],
        operation_id="customer_batch_payments_get",
        summary="One of the customer's batches, or a draft",
        description="As GET /v1/batch-payments/{batchId}, for the customer's own batches and drafts.",
        responses={
            200: envelope("CustomerBatchDetailResponse", BatchDetailSerializer()),
            **error_responses(
                401, 403, 404, s404="RESOURCE_NOT_FOUND: the customer, or no such batch or draft."
            ),
        },
    )
    def get(self, request, customerId: str, batchId: str):
        return ok(_one_body(self.actor(), batchId))
