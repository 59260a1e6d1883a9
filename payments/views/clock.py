"""The sandbox clock: run a customer's schedules ahead of time, in the sandbox only."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from bankapi.approval_gate import exempt
from bankapi.errors import not_found, validation_error
from bankapi.formats import CALENDAR_DAY_PATTERN, iso_date_parse
from bankapi.http.api import ScopedAPIView
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import InputSerializer, StrictCharField, WholeMatchValidator
from bankapi.roles import Role
from bankapi.scope import access_customer
from payments.services.schedules import sandbox_clock_run

DATE_MESSAGE = "date must be a real calendar date written YYYY-MM-DD."


class SandboxClockSerializer(InputSerializer):
    date = StrictCharField(
        help_text="YYYY-MM-DD, at most 366 days after today (UTC).",
        validators=[WholeMatchValidator(CALENDAR_DAY_PATTERN, DATE_MESSAGE)],
    )


class SandboxClockRunSerializer(serializers.Serializer):
    date = serializers.DateField()
    paid = serializers.IntegerField(help_text="Runs that made a payment (PENDING).")
    held = serializers.IntegerField(help_text="Runs whose payment is held for review (PENDING_TM).")
    failed = serializers.IntegerField(
        help_text="Runs refused before acceptance; see each schedule's lastRun."
    )


class SandboxClockView(ScopedAPIView):
    approval_policy = exempt("sandbox: runs schedules, each covered by the approval of its creation")
    roles = (Role.CUSTOMER,)

    @extend_schema(
        tags=["sandbox"],
        summary="Sandbox: run scheduled payments up to a day",
        description=(
            "Runs every schedule of the calling customer for each day up to `date`, as the 02:00 UTC "
            "run of each of those days would have: a monthly schedule three months ahead pays three "
            "times (on the last day of shorter months when its day is missing). A day run here is "
            "never paid again by the real run of that day. Sandbox access tokens only; production "
            "tokens get 404."
        ),
        request=SandboxClockSerializer,
        responses={
            200: envelope("SandboxClockRunResponse", SandboxClockRunSerializer()),
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                s404="RESOURCE_NOT_FOUND: always for production tokens.",
                s409="INVALID_STATE: the customer lives on a test clock (its schedules run when the "
                "clock is advanced), or its clock is advancing.",
            ),
        },
    )
    def post(self, request):
        if not self.scope.sandbox:
            raise not_found()
        body = SandboxClockSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            up_to = iso_date_parse(body.validated_data["date"])
        except ValueError:
            raise validation_error("date", DATE_MESSAGE)
        customer = access_customer(self.scope, str(self.scope.customer_id))
        summary = sandbox_clock_run(customer=customer, up_to=up_to)
        return ok(
            {
                "date": up_to.isoformat(),
                "paid": summary.paid,
                "held": summary.held,
                "failed": len(summary.failed),
            }
        )
