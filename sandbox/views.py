"""The sandbox's customers on demand and test clocks: management id token with
`programId`, sandbox only (a production token gets 404)."""

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request

from bankapi.approval_gate import exempt
from bankapi.errors import not_found
from bankapi.http.api import PAGE_PARAMETERS, ScopedAPIView, respond_once
from bankapi.http.pagination import page_body, paginate
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses, management_program_id, post_responses
from bankapi.http.serializers import validated_body
from bankapi.idempotency import Fingerprint
from bankapi.idempotency.keys import HEADER, idempotency_key_parse, idempotency_owner_of
from bankapi.idempotency.records import SEALED_OPERATIONS
from bankapi.roles import Role
from bankapi.scope import program_for
from bankapi.test_clocks import clock_ready_require
from sandbox.clocks import clock_advance, clock_create, clock_of, clocks_of
from sandbox.customers import MadeCustomer, sandbox_customer_make
from sandbox.serializers import (
    ClockAdvanceSerializer,
    ClockCreateSerializer,
    ClockListSerializer,
    ClockSerializer,
    CustomerCreatedSerializer,
    CustomerCreateSerializer,
)

CUSTOMER_OPERATION = "sandbox.customers.create"
CLOCK_OPERATION = "sandbox.test_clocks.create"
ADVANCE_OPERATION = "sandbox.test_clocks.advance"
# A made customer's answer holds its password and TOTP secret: stored encrypted.
SEALED_OPERATIONS.add(CUSTOMER_OPERATION)

PROGRAM_ID = management_program_id("The program whose sandbox the route acts in.", management_only=True)
IDEMPOTENCY_KEY = OpenApiParameter(
    HEADER,
    str,
    OpenApiParameter.HEADER,
    required=False,
    pattern="^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    description=(
        "Optional UUID, scoped to the management user. The same key with the same route, path ids, "
        "programId and body replays the first answer word for word (header `Idempotent-Replayed: "
        "true`); with any of them different, 400 IDEMPOTENCY_KEY_MISMATCH; 409 while the first is "
        "still running."
    ),
)
S400_KEY = "VALIDATION_ERROR (field errors in `errors`), or IDEMPOTENCY_KEY_MISMATCH."
S401 = "UNAUTHORIZED: missing, invalid or wrong-kind token (these routes take the id token)."
S403 = "FORBIDDEN: only management callers use the sandbox's world routes."
S404 = "RESOURCE_NOT_FOUND: unknown programId, a production token, or another program's test clock."
TAGS = ["sandbox"]


class SandboxWorldView(ScopedAPIView):
    token_use = "id"
    roles = (Role.MANAGEMENT,)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if not self.scope.sandbox:
            raise not_found()

    def respond(self, *, operation: str, fingerprint: dict[str, Any], checks, work, serializer) -> Any:
        """A create at most once per Idempotency-Key (see `respond_once`)."""
        header = self.request.headers.get(HEADER)
        owner_kind, owner_id = idempotency_owner_of(self.scope)
        return respond_once(
            program=program_for(self.scope),
            sandbox=True,
            owner_kind=owner_kind,
            owner_id=owner_id,
            operation=operation,
            key=idempotency_key_parse(header) if header is not None else None,
            fingerprint=Fingerprint({"programId": str(self.scope.program_id), **fingerprint}),
            checks=checks,
            work=work,
            serializer=serializer,
        )


def _made_data(made: MadeCustomer) -> dict[str, Any]:
    return CustomerCreatedSerializer(
        {
            "customerId": made.customer.id,
            "name": made.customer.name,
            "email": made.email,
            "password": made.password,
            "totpSecret": made.totp_secret,
            "pin": made.pin,
            "accountId": made.account.id,
            "accountIban": made.account.iban,
            "eurAccountId": made.eur_account.id,
            "eurAccountIban": made.eur_account.iban,
            "beneficiaryId": made.beneficiary_id,
            "cardId": made.card.id,
            "testClockId": made.customer.test_clock_id,
        }
    ).data


class SandboxCustomerCreateView(SandboxWorldView):
    approval_policy = exempt("sandbox: makes a customer; its funding is the sandbox's opening balance")
    idempotency_operation = CUSTOMER_OPERATION

    @extend_schema(
        tags=TAGS,
        summary="Sandbox: make a customer",
        description=(
            "A new customer of the program's sandbox: one user (TOTP enrolled; its password, TOTP secret "
            "and, on a program with PIN confirmation, step-up PIN are shown in this answer and its replay "
            "only), a GBP and an EUR account each funded with 100000.00 through the ledger, a saved "
            "beneficiary and an ACTIVE card on the GBP account (`nameOnCard` the name in capitals, A-Z "
            "and spaces only, at most 26 characters). With `testClockId` the customer lives at that "
            "clock's time for good. At most `SANDBOX_CUSTOMERS_MAX` (default 1,000) per program in any "
            "24 hours. The user signs in like any other, with `x-program-id` the program's id."
        ),
        parameters=[PROGRAM_ID, IDEMPOTENCY_KEY],
        request=CustomerCreateSerializer,
        responses=post_responses(
            "SandboxCustomerCreatedResponse",
            CustomerCreatedSerializer(),
            422,
            made="Made.",
            s400=S400_KEY,
            s401=S401,
            s403=S403,
            s404=S404 + " (`testClockId` in the body)",
            s409="INVALID_STATE: the test clock is advancing; or IDEMPOTENCY_KEY_IN_PROGRESS.",
            s422="LIMIT_EXCEEDED: the program made `SANDBOX_CUSTOMERS_MAX` customers in the last 24 hours.",
        ),
    )
    def post(self, request: Request) -> Any:
        body = validated_body(CustomerCreateSerializer, request)
        name, clock_id = body.get("name"), body.get("testClockId")

        def checks() -> Any:
            if clock_id is None:
                return None
            clock = clock_of(self.scope, clock_id)
            clock_ready_require(clock)
            return clock

        return self.respond(
            operation=CUSTOMER_OPERATION,
            fingerprint={"name": name, "testClockId": clock_id},
            checks=checks,
            work=lambda clock: sandbox_customer_make(program=program_for(self.scope), name=name, clock=clock),
            serializer=_made_data,
        )


class TestClockListView(SandboxWorldView):
    approval_policy = exempt("sandbox: makes a clock, moves nothing")
    idempotency_operation = CLOCK_OPERATION

    @extend_schema(
        tags=TAGS,
        operation_id="sandbox_test_clocks_list",
        summary="Sandbox: test clocks of the program",
        description="Newest first, cursor paginated.",
        parameters=[PROGRAM_ID, *PAGE_PARAMETERS],
        responses={
            200: envelope("TestClockListResponse", ClockListSerializer()),
            **error_responses(400, 401, 403, 404, s401=S401, s403=S403, s404=S404),
        },
    )
    def get(self, request: Request) -> Any:
        page = paginate(clocks_of(self.scope), request)
        return ok(page_body(page, "testClocks", lambda clock: ClockSerializer(clock).data))

    @extend_schema(
        tags=TAGS,
        summary="Sandbox: make a test clock",
        description=(
            "A clock reading `frozenTime` (within 366 days of now either way), `ready`. Customers made "
            "on it (`POST /v1/sandbox/customers` with `testClockId`) live at its time: their payments, "
            "bookings, statements, balances, limits, schedules, expiries and events. `createdAt` is "
            "real time. At most `SANDBOX_CLOCKS_MAX` (default 100) clocks per program."
        ),
        parameters=[PROGRAM_ID, IDEMPOTENCY_KEY],
        request=ClockCreateSerializer,
        responses=post_responses(
            "TestClockResponse",
            ClockSerializer(),
            422,
            made="Made.",
            s400=S400_KEY,
            s401=S401,
            s403=S403,
            s404=S404,
            s409="IDEMPOTENCY_KEY_IN_PROGRESS: the key's first request is still running.",
            s422="LIMIT_EXCEEDED: the program has `SANDBOX_CLOCKS_MAX` test clocks.",
        ),
    )
    def post(self, request: Request) -> Any:
        body = validated_body(ClockCreateSerializer, request)
        frozen_time, name = body["frozenTime"], body.get("name")
        return self.respond(
            operation=CLOCK_OPERATION,
            fingerprint={"frozenTime": frozen_time.isoformat(), "name": name},
            checks=lambda: None,
            work=lambda _: clock_create(scope=self.scope, frozen_time=frozen_time, name=name),
            serializer=ClockSerializer,
        )


class TestClockView(SandboxWorldView):
    @extend_schema(
        tags=TAGS,
        summary="Sandbox: a test clock",
        parameters=[PROGRAM_ID],
        responses={
            200: envelope("TestClockGetResponse", ClockSerializer()),
            **error_responses(400, 401, 403, 404, s401=S401, s403=S403, s404=S404),
        },
    )
    def get(self, request: Request, testClockId: str) -> Any:
        return ok(ClockSerializer(clock_of(self.scope, testClockId)).data)


class TestClockAdvanceView(SandboxWorldView):
    approval_policy = exempt("sandbox: runs what falls due, each run covered as beat's run is")
    idempotency_operation = ADVANCE_OPERATION

    @extend_schema(
        tags=TAGS,
        summary="Sandbox: advance a test clock",
        description=(
            "Moves the clock forward to `to` (after its frozenTime, at most 366 days after it; real time "
            "does not bound it), running in time order, each at its own moment while the clock reads "
            "that moment, everything that falls due for its customers: expiries (FX quotes, batch "
            "drafts, approvals: `approval.expired`) first, then each day's 02:00 UTC scheduled-payment "
            "run exactly as the real run (same run records, events and month-end rules). Answers the "
            "clock, `ready`, at `to`. While it runs the clock reads `advancing`: another advance, and "
            "its customers' requests that move money or make objects, answer 409 INVALID_STATE (reads "
            "are served). An advance whose process died leaves the clock `advancing` for at most 90 s; "
            "it then reads `ready` at the last moment fully run and may be advanced again."
        ),
        parameters=[PROGRAM_ID, IDEMPOTENCY_KEY],
        request=ClockAdvanceSerializer,
        responses=post_responses(
            "TestClockAdvancedResponse",
            ClockSerializer(),
            made="Advanced.",
            s400=S400_KEY,
            s401=S401,
            s403=S403,
            s404=S404,
            s409="INVALID_STATE: an advance of this clock is running; or IDEMPOTENCY_KEY_IN_PROGRESS.",
        ),
    )
    def post(self, request: Request, testClockId: str) -> Any:
        clock = clock_of(self.scope, testClockId)
        body = validated_body(ClockAdvanceSerializer, request)
        to = body["to"]

        # The advance commits moment by moment, so it runs where the key is held
        # and no transaction is open (`checks`); the stored answer is the clock after it.
        def checks() -> Any:
            return clock_advance(clock=clock, to=to)

        return self.respond(
            operation=ADVANCE_OPERATION,
            fingerprint={"testClockId": str(clock.id), "to": to.isoformat()},
            checks=checks,
            work=lambda advanced: advanced,
            serializer=ClockSerializer,
        )
