"""Sandbox: record that the payee's bank sent a settled payment back."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from bankapi.approval_gate import exempt
from bankapi.http.api import ScopedAPIView
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import InputSerializer
from payments.selectors import sandbox_payment_request
from payments.serializers import SandboxPaymentRequestSerializer
from payments.services.returns import RETURN_REASON_CODES, payment_return


class PaymentReturnSerializer(InputSerializer):
    reasonCode = serializers.ChoiceField(
        choices=list(RETURN_REASON_CODES),
        help_text=(
            "The ISO 20022 return reason code the scheme reported: "
            + "; ".join(f"{code} {meaning}" for code, meaning in RETURN_REASON_CODES.items())
            + "."
        ),
    )


class SandboxReturnView(ScopedAPIView):
    approval_policy = exempt("sandbox: records a return of a settled payment, money coming back")

    @extend_schema(
        tags=["sandbox"],
        summary="Sandbox: the payee's bank returns a SETTLED payment request",
        description=(
            "Sandbox tokens only. The payer's account is credited with the amount (not the fee), "
            "the request becomes RETURNED (it stays off the payment-requests list), the "
            "transactions list gains a CREDIT whose `returnOf` is the requestId, statements a CRDT "
            "entry with the payment's endToEndId and `returnReason` (camt.053 `RtrInf/Rsn/Cd`), and "
            "the event `payment_request.returned` is sent. Today's used limit is unchanged. Only a "
            "SETTLED request returns, and only once."
        ),
        request=PaymentReturnSerializer,
        responses={
            200: envelope("SandboxReturnResponse", SandboxPaymentRequestSerializer()),
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                s400="VALIDATION_ERROR: reasonCode missing or not one of the listed codes.",
                s404="RESOURCE_NOT_FOUND: no such request for this caller; always for production tokens.",
                s409="INVALID_STATE: the request is not SETTLED (not settled yet, failed, or returned).",
            ),
        },
    )
    def post(self, request: Request, requestId: str) -> Response:
        payment_request = sandbox_payment_request(self.scope, requestId)
        body = PaymentReturnSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        returned = payment_return(payment_request, body.validated_data["reasonCode"])
        return ok(SandboxPaymentRequestSerializer(returned).data)
