"""Card spending in the sandbox: the card network's authorizations, their
clearing and reversal, freezing a card; and the card's list of authorizations."""

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework.request import Request

from bankapi.approval_gate import exempt
from bankapi.errors import validation_error
from bankapi.http.api import PAGE_PARAMETERS, AccountScopedView, CursorListView, ScopedAPIView, respond_once
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses, management_program_id, post_responses
from bankapi.http.serializers import validated_body
from bankapi.idempotency import HEADER, Fingerprint, idempotency_key_resolve, idempotency_owner_of
from bankapi.roles import Role
from bankapi.scope import get_or_not_found, program_for
from bankapi.test_clocks import clock_still_require
from cards.authorizations import (
    AuthorizationOrder,
    authorization_clear,
    authorization_reverse,
    authorizations_of_card,
    card_authorize,
    card_status_set,
)
from cards.authorizations_at_once import card_authorize_at_once
from cards.caller_read import CardWithCaller
from cards.errors import CardErrorCode
from cards.models import Card, CardAuthorization
from cards.selectors import card_of
from cards.serializers_authorizations import (
    AuthorizationClearSerializer,
    AuthorizationCreateSerializer,
    CardAuthorizationListSerializer,
    CardAuthorizationSerializer,
    SandboxCardSerializer,
    card_authorization_data,
)
from payments.views.incoming import SANDBOX_IDEMPOTENCY_KEY

PROGRAM_ID = management_program_id(
    "The program whose sandbox it acts in, for management callers (required for them); ignored for others.",
    management_only=False,
)
CALLERS = (
    "A management id token with `programId`, or a sandbox access token of the card's customer; "
    "production tokens get 404."
)
S404_CARD = "CARD_NOT_FOUND: no such card for this caller (another program's or customer's included)."
S404_AUTHORIZATION = "RESOURCE_NOT_FOUND: no such authorization for this caller."
S409_KEY = "IDEMPOTENCY_KEY_IN_PROGRESS: the first request with this key is still running."
S409_CLOCK = "INVALID_STATE: the card's customer's test clock is advancing (retry once it reads ready)."
S409_STATE = (
    "INVALID_STATE: the authorization is not PENDING (cleared, reversed, declined or expired), or "
    "the card's customer's test clock is advancing. "
    "IDEMPOTENCY_KEY_IN_PROGRESS: the first request with this key is still running."
)


class SandboxCardView(CardWithCaller, ScopedAPIView):
    """The sandbox's card routes: the management caller of the program, or the
    card's own customer, in the sandbox only; answered once per Idempotency-Key.
    A customer's card named in the path is read with the caller (`CardWithCaller`)."""

    roles = (Role.MANAGEMENT, Role.CUSTOMER)

    def required_token_use(self, claims: dict) -> str:
        return "id" if claims.get("role") == Role.MANAGEMENT else "access"

    def cards(self):
        """The cards the caller may use here: the program's sandbox cards, a customer's own."""
        if not self.scope.sandbox:
            return Card.objects.none()
        rows = Card.objects.for_scope(self.scope).select_related("account", "program")
        if self.scope.is_management:
            return rows
        if self.scope.customer_id is None:
            return Card.objects.none()
        return rows.filter(account__customer_id=self.scope.customer_id)

    def card(self, card_id: str) -> Card:
        return self.preloaded_card(self.scope, card_id) or get_or_not_found(
            self.cards(), card_id, "Card", CardErrorCode.CARD_NOT_FOUND
        )

    def authorization(self, authorization_id: str) -> CardAuthorization:
        rows = CardAuthorization.objects.filter(card__in=self.cards())
        return get_or_not_found(rows, authorization_id, "Card authorization")

    def once(
        self,
        request: Request,
        path: dict[str, str],
        work: Any,
        serializer: Any,
        work_at_once: Any = None,
        *,
        customer_id: Any,
    ) -> Any:
        # The customer's writes wait while its test clock advances, whoever asks
        # (a customer caller was refused already, before anything was read).
        clock_still_require(customer_id)
        program = program_for(self.scope)
        key = idempotency_key_resolve(program=program, header=request.headers.get(HEADER), body_key=None)
        owner_kind, owner_id = idempotency_owner_of(self.scope)
        assert self.idempotency_operation is not None
        return respond_once(
            program=program,
            sandbox=True,
            owner_kind=owner_kind,
            owner_id=owner_id,
            operation=self.idempotency_operation,
            key=key,
            fingerprint=Fingerprint(
                {"programId": str(program.id), "path": path, "body": request.data if request.data else {}}
            ),
            checks=lambda: None,
            work=lambda _: work(),
            serializer=serializer,
            work_at_once=work_at_once,
        )


class SandboxAuthorizationCreateView(SandboxCardView):
    approval_policy = exempt("sandbox: the card network asks to spend; the decision is the card's rules")
    idempotency_operation = "sandbox.card_authorizations.create"

    @extend_schema(
        tags=["sandbox"],
        summary="Sandbox: the card network asks to spend with a card",
        description=(
            f"{CALLERS} Decided in this order: the card ACTIVE (else declined `CARD_INACTIVE`), "
            "`currency` the card account's (`CURRENCY_NOT_SUPPORTED`), the program's per-payment limit "
            "and the day's outbound limit (`LIMIT_EXCEEDED`), the available balance covering `amount` "
            "(`INSUFFICIENT_FUNDS`; cards pay no fee). Approved: a hold of `amount` on the card's "
            "account (available falls; the balance and statements do not), status PENDING, counted on "
            "the day's `used` at once, expiring 7 days after `createdAt`. Declined: status DECLINED with "
            "`declineReason`, nothing held or counted. Both answer 200 and send "
            "`card_authorization.created`. Approval policies do not apply."
        ),
        parameters=[PROGRAM_ID, SANDBOX_IDEMPOTENCY_KEY],
        request=AuthorizationCreateSerializer,
        responses=post_responses(
            "CardAuthorizationResponse",
            CardAuthorizationSerializer(),
            s400="VALIDATION_ERROR: a field breaks its rule (currency not an ISO 4217 code). "
            "IDEMPOTENCY_KEY_MISMATCH.",
            s404=S404_CARD,
            s409=f"{S409_CLOCK} {S409_KEY}",
        ),
    )
    def post(self, request, cardId: str):
        card = self.card(cardId)
        body = validated_body(AuthorizationCreateSerializer, request)
        order = AuthorizationOrder(
            amount=body["amount"],
            currency=body["currency"],
            merchant_name=body["merchantName"],
            merchant_category_code=body.get("merchantCategoryCode", ""),
        )
        return self.once(
            request,
            {"cardId": str(card.id)},
            lambda: card_authorize(card=card, order=order),
            card_authorization_data,
            # Nearly every approval: one statement with the key's record (PostgreSQL).
            lambda _, claim, rendered: card_authorize_at_once(
                card=card, order=order, claim=claim, respond=rendered
            ),
            customer_id=card.account.customer_id,
        )


class SandboxAuthorizationClearView(SandboxCardView):
    approval_policy = exempt("sandbox: pays a card authorization from the hold its approval placed")
    idempotency_operation = "sandbox.card_authorizations.clear"

    @extend_schema(
        tags=["sandbox"],
        summary="Sandbox: clear a PENDING card authorization",
        description=(
            f"{CALLERS} One DBIT of `amount` (default: the authorized amount) is booked from the card's "
            "account, paid from the authorization's hold (released at that booking); what was not "
            "cleared goes back to available and to the `used` of the authorization's day. Status "
            "CLEARED with `clearedAmount`; event `card_authorization.cleared`. The transaction's "
            "`reference` is the merchant name and its `cardAuthorizationId` names the authorization; "
            "camt.053 shows the merchant as `RltdPties/Cdtr/Pty/Nm`."
        ),
        parameters=[PROGRAM_ID, SANDBOX_IDEMPOTENCY_KEY],
        request=AuthorizationClearSerializer,
        responses=post_responses(
            "CardAuthorizationClearResponse",
            CardAuthorizationSerializer(),
            s400="VALIDATION_ERROR: amount breaks its rule or is above the authorized amount. "
            "IDEMPOTENCY_KEY_MISMATCH.",
            s404=S404_AUTHORIZATION,
            s409=S409_STATE,
        ),
    )
    def post(self, request, authorizationId: str):
        authorization = self.authorization(authorizationId)
        body = validated_body(AuthorizationClearSerializer, request)
        amount = body.get("amount")
        if amount is not None and amount > authorization.amount:
            raise validation_error(
                "amount", f"Must be at most {authorization.amount:.2f}, the authorized amount."
            )
        return self.once(
            request,
            {"authorizationId": str(authorization.id)},
            lambda: authorization_clear(authorization, amount),
            CardAuthorizationSerializer,
            customer_id=authorization.customer_id,
        )


class SandboxAuthorizationReverseView(SandboxCardView):
    approval_policy = exempt("sandbox: releases a card authorization's hold, nothing leaves the account")
    idempotency_operation = "sandbox.card_authorizations.reverse"

    @extend_schema(
        tags=["sandbox"],
        summary="Sandbox: reverse a PENDING card authorization",
        description=(
            f"{CALLERS} The hold is released and nothing is booked; the amount goes back to the `used` "
            "of the authorization's day. Status REVERSED; event `card_authorization.reversed`."
        ),
        parameters=[PROGRAM_ID, SANDBOX_IDEMPOTENCY_KEY],
        request=None,
        responses=post_responses(
            "CardAuthorizationReverseResponse",
            CardAuthorizationSerializer(),
            s400="IDEMPOTENCY_KEY_MISMATCH.",
            s404=S404_AUTHORIZATION,
            s409=S409_STATE,
        ),
    )
    def post(self, request, authorizationId: str):
        authorization = self.authorization(authorizationId)
        return self.once(
            request,
            {"authorizationId": str(authorization.id)},
            lambda: authorization_reverse(authorization),
            CardAuthorizationSerializer,
            customer_id=authorization.customer_id,
        )


def _card_status_view(status: str, verb: str) -> type[SandboxCardView]:
    class View(SandboxCardView):
        approval_policy = exempt(f"sandbox: {verb}s a card, no money moves")
        idempotency_operation = f"sandbox.cards.{verb}"

        @extend_schema(
            tags=["sandbox"],
            summary=f"Sandbox: {verb} a card",
            description=(
                f"{CALLERS} Sets the card {status}; a card already {status} answers 200 as it is. "
                "A FROZEN card's authorizations are declined CARD_INACTIVE."
            ),
            parameters=[PROGRAM_ID, SANDBOX_IDEMPOTENCY_KEY],
            request=None,
            responses=post_responses(
                f"SandboxCard{verb.title()}Response",
                SandboxCardSerializer(),
                s400="IDEMPOTENCY_KEY_MISMATCH.",
                s404=S404_CARD,
                s409=(
                    "INVALID_STATE: the card is CANCELLED, or the card's customer's test clock is "
                    "advancing. IDEMPOTENCY_KEY_IN_PROGRESS."
                ),
            ),
        )
        def post(self, request, cardId: str):
            card = self.card(cardId)
            return self.once(
                request,
                {"cardId": str(card.id)},
                lambda: card_status_set(card, status),
                SandboxCardSerializer,
                customer_id=card.account.customer_id,
            )

    View.__name__ = View.__qualname__ = f"SandboxCard{verb.title()}View"
    return View


SandboxCardFreezeView = _card_status_view(Card.Status.FROZEN, "freeze")
SandboxCardUnfreezeView = _card_status_view(Card.Status.ACTIVE, "unfreeze")

STATUS_FILTER = OpenApiParameter(
    "status",
    {"type": "string", "enum": [choice for choice, _ in CardAuthorization.Status.choices]},
    OpenApiParameter.QUERY,
    required=False,
    description=(
        "Only authorizations of this status (as they read now: a PENDING one past its expiry is EXPIRED)."
    ),
)


@extend_schema_view(
    get=extend_schema(
        tags=["cards"],
        summary="Authorizations of a card",
        operation_id="customers_accounts_cards_authorizations_list",
        description="The card network's authorizations of the card, newest first.",
        parameters=[STATUS_FILTER, *PAGE_PARAMETERS],
        responses={
            200: envelope("CardAuthorizationListResponse", CardAuthorizationListSerializer()),
            **error_responses(
                400,
                401,
                403,
                404,
                s400="VALIDATION_ERROR: limit, nextToken or status is not valid.",
                s404="RESOURCE_NOT_FOUND: the customer or account is not one the caller may see. "
                "CARD_NOT_FOUND: no such card on that account.",
            ),
        },
    )
)
class CardAuthorizationListView(AccountScopedView, CursorListView):
    serializer = CardAuthorizationListSerializer
    items_key = "authorizations"
    created_field = "authorized_at"

    def rows(self):
        card = card_of(self.scope, self.account, self.kwargs["cardId"])
        status = self.request.query_params.get("status")
        if status is not None and status not in CardAuthorization.Status.values:
            raise validation_error("status", f"Must be one of {', '.join(CardAuthorization.Status.values)}.")
        return authorizations_of_card(card, status)


class CardAuthorizationView(AccountScopedView):
    @extend_schema(
        tags=["cards"],
        summary="A card authorization",
        responses={
            200: envelope("CardAuthorizationDetailResponse", CardAuthorizationSerializer()),
            **error_responses(
                401,
                403,
                404,
                s404="RESOURCE_NOT_FOUND: the customer, account or authorization is not one the caller may "
                "see. CARD_NOT_FOUND: no such card on that account.",
            ),
        },
    )
    def get(self, request, customerId: str, accountId: str, cardId: str, authorizationId: str):
        card = card_of(self.scope, self.account, cardId)
        authorization = get_or_not_found(authorizations_of_card(card), authorizationId, "Card authorization")
        return ok(CardAuthorizationSerializer(authorization).data)
