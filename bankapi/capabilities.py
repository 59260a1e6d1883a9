"""What a program and the caller's accounts can do (GET /v1/capabilities)."""

from decimal import Decimal

from bankapi.models import Account, Program
from bankapi.scope import Scope, accounts_of, program_for


def _money(value: Decimal) -> str:
    return f"{value:.2f}"


def account_capabilities(account: Account) -> dict:
    return {
        "accountId": str(account.id),
        "customerId": str(account.customer_id),
        "name": account.name,
        "currency": account.currency,
        "balance": _money(account.balance),
        # Acceptance debits the account at once (pending funds sit in clearing);
        # what a submitted batch's items hold is not available until released.
        "availableBalance": _money(account.available),
        "sortCode": account.sort_code or None,
        "accountNumber": account.account_number or None,
        "iban": account.iban or None,
        "payments": {
            "reference": {
                "min": account.reference_min,
                "max": account.reference_max,
                "charset": account.reference_pattern,
            }
        },
    }


def program_capabilities(program: Program) -> dict:
    return {
        "programId": str(program.id),
        "name": program.name,
        "accountType": program.account_type,
        "payments": {
            "international": program.international_payments_enabled,
            "feeWaiverAllowed": program.fee_waiver_allowed,
            "requireIdempotencyKey": program.require_idempotency_key,
            "perPaymentLimit": _money(program.per_payment_limit),
            "dailyOutboundLimit": _money(program.daily_outbound_limit),
            "reviewThreshold": _money(program.review_threshold),
            "fee": _money(program.fee_per_payment),
        },
        "cards": {
            "cardholders": program.cardholders_enabled,
            "pinConfirmation": program.pin_confirmation_enabled,
        },
    }


def capabilities_get(scope: Scope) -> dict:
    accounts = accounts_of(scope).order_by("created_at", "id")
    return {
        "program": program_capabilities(program_for(scope)),
        "sandbox": scope.sandbox,
        "accounts": [account_capabilities(account) for account in accounts],
    }
