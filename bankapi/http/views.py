import logging

from django.conf import settings
from django.db import connection
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bankapi.capabilities import capabilities_get
from bankapi.http.api import ScopedAPIView
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses
from bankapi.ops.outages import outage_log, redis_answers

logger = logging.getLogger(__name__)


class HealthView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    # The probes spend no request budget: a load balancer probes from one address,
    # often the proxy's, many times a minute; counted, its probes would be refused,
    # with every bearer-less route of that address, and the node taken out of rotation.
    throttle_classes: list = []

    @extend_schema(
        tags=["service"],
        summary="Liveness",
        responses={200: inline_serializer("Health", {"status": serializers.CharField()})},
    )
    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})


class IndexView(APIView):
    """What a newcomer opening the server's root address needs: where everything is."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        tags=["service"],
        summary="Where to start",
        description="Links to the API description, Swagger UI, the back office and the probes.",
        responses={
            200: inline_serializer(
                "Index",
                {
                    "success": serializers.BooleanField(),
                    "data": inline_serializer(
                        "IndexLinks",
                        {
                            "name": serializers.CharField(),
                            "openapi": serializers.CharField(),
                            "docs": serializers.CharField(),
                            "admin": serializers.CharField(),
                            "health": serializers.CharField(),
                            "ready": serializers.CharField(),
                            "jwks": serializers.CharField(),
                        },
                    ),
                },
            )
        },
    )
    def get(self, request: Request) -> Response:
        return Response(
            {
                "success": True,
                "data": {
                    "name": "Bank API",
                    "openapi": "/v1/openapi.json",
                    "docs": "/v1/docs",
                    "admin": "/admin/",
                    "health": "/healthz",
                    "ready": "/readyz",
                    "jwks": "/.well-known/jwks.json",
                },
            }
        )


class ReadyView(APIView):
    """200 while the node can serve payments, that is while the database answers;
    503 when it does not. Redis is reported but does not fail readiness: payments
    do not need it (the request budgets count per process, and the work queued
    for workers waits for the beat sweep, until it is back)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []  # no request budget, as HealthView

    @extend_schema(
        tags=["service"],
        summary="Readiness: 200 while the database answers",
        responses={
            200: inline_serializer(
                "Ready",
                {
                    "status": serializers.CharField(),
                    "checks": serializers.DictField(
                        help_text="`database` and `redis`: `ok`, `unavailable` or `not configured`."
                    ),
                },
            ),
            503: inline_serializer(
                "NotReady",
                {"status": serializers.CharField(), "checks": serializers.DictField()},
            ),
        },
    )
    def get(self, request: Request) -> Response:
        checks: dict[str, str] = {}
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            checks["database"] = "ok"
        except Exception as error:  # noqa: BLE001 - any failure means not ready
            checks["database"] = "unavailable"
            # Probed every few seconds by each load balancer: one line per outage.
            outage_log(logger, "readyz", "Not ready: the database does not answer", error=error)
        if settings.REDIS_URL:
            checks["redis"] = "ok" if redis_answers(timeout=1.0) else "unavailable"
        else:
            checks["redis"] = "not configured"
        ready = checks["database"] == "ok"
        response = Response(
            {"status": "ok" if ready else "unavailable", "checks": checks},
            status=200 if ready else 503,
        )
        # Logged above, throttled: not again by Django as an error per probe.
        response._has_been_logged = not ready  # type: ignore[attr-defined]  # read by django.utils.log.log_response
        return response


class ReferenceLimitSerializer(serializers.Serializer):
    min = serializers.IntegerField()
    max = serializers.IntegerField()
    charset = serializers.CharField(help_text="Regular expression the reference must match.")


class AccountPaymentsSerializer(serializers.Serializer):
    reference = ReferenceLimitSerializer()


class AccountCapabilitySerializer(serializers.Serializer):
    accountId = serializers.CharField()
    customerId = serializers.CharField()
    name = serializers.CharField()
    currency = serializers.CharField()
    balance = serializers.CharField(help_text="Decimal string.")
    availableBalance = serializers.CharField(
        help_text="Decimal string: the balance less what a submitted batch's unpaid items hold."
    )
    sortCode = serializers.CharField(allow_null=True)
    accountNumber = serializers.CharField(allow_null=True)
    iban = serializers.CharField(allow_null=True)
    payments = AccountPaymentsSerializer()


class ProgramPaymentsSerializer(serializers.Serializer):
    international = serializers.BooleanField()
    feeWaiverAllowed = serializers.BooleanField()
    requireIdempotencyKey = serializers.BooleanField()
    perPaymentLimit = serializers.CharField()
    dailyOutboundLimit = serializers.CharField()
    reviewThreshold = serializers.CharField()
    fee = serializers.CharField()


class ProgramCardsSerializer(serializers.Serializer):
    cardholders = serializers.BooleanField()
    pinConfirmation = serializers.BooleanField()


class ProgramCapabilitySerializer(serializers.Serializer):
    programId = serializers.CharField()
    name = serializers.CharField()
    accountType = serializers.ChoiceField(choices=["consumer", "business"])
    payments = ProgramPaymentsSerializer()
    cards = ProgramCardsSerializer()


class CapabilitiesSerializer(serializers.Serializer):
    program = ProgramCapabilitySerializer()
    sandbox = serializers.BooleanField()
    accounts = AccountCapabilitySerializer(many=True)


class CapabilitiesView(ScopedAPIView):
    @extend_schema(
        tags=["accounts"],
        summary="What the program and the caller's accounts can do",
        description=(
            "Program settings (international payments, cardholders, PIN, limits) and, "
            "for each account the caller may act for, its balance and the statement "
            "reference rules (`accounts[].payments.reference`)."
        ),
        responses={
            200: envelope("CapabilitiesResponse", CapabilitiesSerializer()),
            **error_responses(401, 403),
        },
    )
    def get(self, request: Request) -> Response:
        return ok(capabilities_get(self.scope))
