"""The codes only payments answer, registered with their statuses when the app
is ready (see `bankapi.errors`)."""

from bankapi.errors import DomainErrorCode


class PaymentErrorCode(DomainErrorCode):
    # The acceptance decision's refusals (payments.decision).
    INSUFFICIENT_FUNDS = "INSUFFICIENT_FUNDS"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    # The FX provider cannot price or convert (not offered, or unavailable).
    PROVIDER_ERROR = "PROVIDER_ERROR"
    QUOTE_EXPIRED = "QUOTE_EXPIRED"
    QUOTE_ALREADY_USED = "QUOTE_ALREADY_USED"


STATUSES: dict[DomainErrorCode, int] = {
    PaymentErrorCode.INSUFFICIENT_FUNDS: 422,
    PaymentErrorCode.LIMIT_EXCEEDED: 422,
    PaymentErrorCode.PROVIDER_ERROR: 422,
    PaymentErrorCode.QUOTE_EXPIRED: 422,
    PaymentErrorCode.QUOTE_ALREADY_USED: 422,
}
