"""Reconciliation routes of an account: statements, the balance at a moment, limits."""

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from bankapi.clock import customer_now
from bankapi.formats import CALENDAR_DAY, CALENDAR_DAY_PATTERN
from bankapi.http.api import AccountScopedView
from bankapi.http.responses import ok, served_as_attachment
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import MoneyField, TimestampField
from payments.selectors.holds import available_as_of
from payments.selectors.ledger import balance_as_of, day_start
from payments.services.limits import account_limits
from payments.services.statements import (
    STATEMENT_MAX_DAYS,
    StatementFormat,
    balance_moment,
    statement_format,
    statement_period,
)
from payments.statement_formats import (
    CAMT053_LAYOUT,
    CSV_HEADER,
    CSV_LAYOUT,
    JSON_LAYOUT,
    statement_camt053,
    statement_csv,
    statement_json,
    statement_read,
)

# An ISO 8601 timestamp as `asOf` takes it: a calendar day, a time, an optional
# fraction and an optional offset (UTC without one).
TIMESTAMP_PATTERN = (
    f"^{CALENDAR_DAY}[T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.,][0-9]{{1,9}})?)?"
    "(Z|[+-]([01][0-9]|2[0-3])(:?[0-5][0-9])?)?$"
)


class StatementEntrySerializer(serializers.Serializer):
    entryId = serializers.CharField(help_text="The ledger posting's id: unique, opaque, stable.")
    bookedAt = TimestampField(help_text="When the posting was booked (UTC).")
    amount = MoneyField(help_text="Decimal string in the account currency, always positive.")
    creditDebit = serializers.ChoiceField(choices=["CRDT", "DBIT"])
    balanceAfter = MoneyField(help_text="The account's balance after this entry.")
    reference = serializers.CharField(
        allow_blank=True, help_text="The payment's reference, or what the movement was booked with."
    )
    requestId = serializers.UUIDField(
        allow_null=True,
        help_text=(
            "The payment request: on its acceptance (DBIT) and, when it failed after acceptance, on "
            "the credit that gave the money back."
        ),
    )
    endToEndId = serializers.CharField(
        allow_null=True,
        help_text=(
            "What to match the entry to: a batch item's end-to-end id (a file's PmtId/EndToEndId, or "
            "a JSON item's id as 32 hex digits, as its pain.002 names it), else the requestId as 32 "
            "hex digits; null on an entry that books no payment. A return's entry carries the "
            "returned payment's."
        ),
    )
    returnReason = serializers.CharField(
        allow_null=True,
        help_text="On a return's entry (CRDT), the ISO 20022 return reason code; null on any other entry.",
    )
    description = serializers.CharField()


class StatementSerializer(serializers.Serializer):
    accountId = serializers.UUIDField()
    currency = serializers.CharField()
    # `from` is a Python keyword: declared through the class namespace.
    locals()["from"] = serializers.DateField(help_text="First day (UTC).")
    to = serializers.DateField(help_text="Last day (UTC).")
    openingBalance = MoneyField(help_text="The balance at 00:00 UTC of `from`.")
    closingBalance = MoneyField(help_text="The balance after the last entry of `to`.")
    entries = StatementEntrySerializer(many=True, help_text="Oldest first.")


class BalanceSerializer(serializers.Serializer):
    accountId = serializers.UUIDField(source="account.id")
    currency = serializers.CharField(source="account.currency")
    asOf = TimestampField(source="moment")
    balance = MoneyField(
        help_text="Decimal string: the ledger balance after every posting booked up to asOf."
    )
    available = MoneyField(
        help_text=(
            "Decimal string: the balance less the holds in force at asOf (a batch's items from "
            "its funding until each is paid or released). What a payment may spend."
        )
    )


class PerPaymentLimitSerializer(serializers.Serializer):
    max = MoneyField(source="per_payment_max", help_text="The largest amount one payment may debit.")


class DailyLimitSerializer(serializers.Serializer):
    limit = MoneyField(source="daily_limit", help_text="What the account may send in one UTC day.")
    used = MoneyField(
        source="daily_used",
        help_text="Sent today (UTC): payments accepted today, less those that failed since. Fees excluded.",
    )
    remaining = MoneyField(
        source="daily_remaining", help_text="limit − used, never below zero: a payment up to it fits today."
    )
    resetsAt = TimestampField(source="resets_at", help_text="The next 00:00 UTC, when used starts again.")


class LimitsSerializer(serializers.Serializer):
    currency = serializers.CharField()
    perPayment = PerPaymentLimitSerializer(source="*")
    daily = DailyLimitSerializer(source="*")


STATEMENT_PARAMETERS = [
    OpenApiParameter(
        name,
        {"type": "string", "pattern": CALENDAR_DAY_PATTERN},
        OpenApiParameter.QUERY,
        required=True,
        description=description,
    )
    for name, description in (
        ("from", "First day, YYYY-MM-DD (UTC), on or before `to`."),
        (
            "to",
            f"Last day, YYYY-MM-DD (UTC), today at the latest; `to` − `from` is at most "
            f"{STATEMENT_MAX_DAYS} days.",
        ),
    )
] + [
    OpenApiParameter(
        "format",
        {"type": "string", "enum": list(StatementFormat.ALL), "default": StatementFormat.JSON},
        OpenApiParameter.QUERY,
        required=False,
        description=(
            "`json` (the envelope), `camt053` (an ISO 20022 camt.053.001.08 document, application/xml) "
            "or `csv` (RFC 4180, text/csv)."
        ),
    )
]


def _download(body: bytes | str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    served_as_attachment(response, filename)
    return response


class StatementView(AccountScopedView):
    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # The body's format is the `format` parameter's; whatever Accept says,
        # errors answer in the JSON envelope.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        tags=["payments"],
        summary="Statement of an account for a period",
        description=(
            "The account's ledger entries booked from 00:00 UTC of `from` to the end of `to`, oldest "
            "first, with the opening and closing balances: openingBalance + credits − debits = "
            "closingBalance, and each entry's balanceAfter is the running balance. Payments appear "
            "when accepted (DBIT, amount plus fee); a payment that fails after acceptance appears "
            "again as a CRDT carrying its requestId. The three formats carry the same entries.\n\n"
            "camt053: one `Stmt` with balances OPBD and CLBD and one `Ntry` per entry "
            "(`AcctSvcrRef` = entryId; `NtryDtls/TxDtls/Refs`: `EndToEndId` = endToEndId, or "
            "NOTPROVIDED, `TxId` = requestId as 32 hex digits, and for a payment from a pain.001 "
            "file its `MsgId`, `PmtInfId` and `InstrId` where the file had them; `RmtInf/Ustrd` = "
            "reference; on a return, `RtrInf/Rsn/Cd` = returnReason). A pain.001 file's payments "
            "are matched to their entries by EndToEndId, one entry per paid item.\n\n"
            f"csv: header `{','.join(CSV_HEADER)}`, one row per entry, an empty cell for a null; a "
            "cell beginning with `=`, `+`, `-` or `@` is prefixed with `'`."
        ),
        parameters=STATEMENT_PARAMETERS,
        responses={
            # First: a client generated from this document reads the body as bytes, whatever
            # the format (generators take the first media type they know for all of them).
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY,
                description=(
                    "The body of any format as bytes, for clients that read it as a file; its "
                    "Content-Type is the format's (below)."
                ),
            ),
            (200, "application/json"): envelope("StatementResponse", StatementSerializer()),
            (200, "application/xml"): OpenApiResponse(
                OpenApiTypes.BINARY, description="format=camt053: a camt.053.001.08 document (attachment)."
            ),
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.BINARY, description="format=csv: RFC 4180, UTF-8 (attachment)."
            ),
            **error_responses(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, customerId: str, accountId: str) -> HttpResponse:
        now = customer_now(self.account.customer_id)
        params = request.query_params
        period = statement_period(params.get("from"), params.get("to"), today=now.date())
        chosen = statement_format(params.get("format"))
        filename = f"statement-{self.account.id}-{period.first_day}-{period.last_day}"
        days = (self.account, period.first_day, period.last_day)
        if chosen == StatementFormat.CSV:
            body = statement_csv(statement_read(*days, CSV_LAYOUT))
            return _download(body, "text/csv; charset=utf-8", f"{filename}.csv")
        if chosen == StatementFormat.CAMT053:
            statement = statement_read(*days, CAMT053_LAYOUT)
            # CLAV is taken with CLBD: at the end of `to`, or now when `to` is today.
            closing = min(now, day_start(period.last_day + timedelta(days=1)) - timedelta(microseconds=1))
            available = available_as_of(self.account, Decimal(statement.closing_balance), closing)
            document = statement_camt053(
                statement, message_id=uuid.uuid4().hex, created_at=now, closing_available=available
            )
            return _download(document, "application/xml; charset=utf-8", f"{filename}.xml")
        # The envelope written out: the JSON renderer's bytes, without a dict per entry.
        return HttpResponse(
            statement_json(statement_read(*days, JSON_LAYOUT)), content_type="application/json"
        )


class BalanceView(AccountScopedView):
    @extend_schema(
        tags=["payments"],
        summary="Balance of an account at a moment",
        description=(
            "The ledger balance after every posting booked at or before `asOf`: the balance a "
            "statement shows at that moment. 0.00 before the account's first posting. `available` "
            "is that balance less the holds in force then: a submitted batch holds each item's "
            "amount and fee from its funding until the item is paid (one debit on the statement) "
            "or refused (the hold released). A hold is not a booking and is on no statement."
        ),
        parameters=[
            OpenApiParameter(
                "asOf",
                {"type": "string", "pattern": TIMESTAMP_PATTERN},
                OpenApiParameter.QUERY,
                required=False,
                description=(
                    "ISO 8601 timestamp, e.g. 2026-01-31T23:59:59Z; UTC when it has no offset (send "
                    "`+` as %2B). Not in the future. Default: now."
                ),
            )
        ],
        responses={
            200: envelope("BalanceResponse", BalanceSerializer()),
            **error_responses(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, customerId: str, accountId: str) -> Response:
        moment = balance_moment(request.query_params.get("asOf"), now=customer_now(self.account.customer_id))
        balance = balance_as_of(self.account, moment)
        available = available_as_of(self.account, balance, moment)
        return ok(
            BalanceSerializer(
                {"account": self.account, "moment": moment, "balance": balance, "available": available}
            ).data
        )


class LimitsView(AccountScopedView):
    @extend_schema(
        tags=["payments"],
        summary="Payment limits of an account and what is left of today's",
        description=(
            "The program's per-payment maximum and daily outbound limit, with what the account has "
            "sent today (UTC), as payment creation counts them: a payment of at most the smaller of "
            "perPayment.max and daily.remaining passes both limits (funds allowing); one cent more than "
            "daily.remaining is 422 LIMIT_EXCEEDED. A payment that fails after acceptance gives its "
            "amount back to today's used."
        ),
        responses={
            200: envelope("LimitsResponse", LimitsSerializer()),
            **error_responses(401, 403, 404),
        },
    )
    def get(self, request: Request, customerId: str, accountId: str) -> Response:
        limits = account_limits(
            program=self.account.program, account=self.account, now=customer_now(self.account.customer_id)
        )
        return ok(LimitsSerializer(limits).data)
