"""The request examples Swagger UI fills its "Try it out" bodies with.

Without them Swagger UI builds a body from the schema: every optional key at
once (a payment with beneficiaryId, payee and cryptoQuote together, which the
route refuses) and text made up from each pattern. Each example here is a body
the route takes as it stands once its ids are the caller's own (the sandbox's,
printed by `make run`); tests check each one against its own schema.
"""

import copy
from datetime import UTC, date, datetime, timedelta
from typing import Any

UK_PAYEE = {
    "name": "Jane Supplier",
    "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
}
BATCH_PAYMENTS = [
    {
        "payer": {"account": {"type": "uk", "sortCode": "040004", "accountNumber": "12345678"}},
        "payee": UK_PAYEE,
        "reference": "Invoice 7",
        "amount": "12.50",
    }
]
SCA_CHALLENGE = {"id": "5b0e3a52-8f0e-4a4f-9d55-2f3c1f4e9a10", "expiresAt": "2026-11-25T18:05:00+00:00"}
TOTP = {"method": "totp", "code": "123456"}
SESSION = "the session_token the previous step answered"


def _one(summary: str, value: Any) -> dict[str, Any]:
    return {"summary": summary, "value": value}


# By operationId: {example name: {summary, value}}.
REQUEST_EXAMPLES: dict[str, dict[str, dict[str, Any]]] = {
    "auth_login_create": {
        "password": _one("Sign in", {"email": "customer@example.com", "password": "the password"})
    },
    "auth_verify_2fa_create": {
        "totp": _one("The authenticator app's code", {"session_token": SESSION, "totp_code": "123456"})
    },
    "auth_verify_email_create": {
        "code": _one("The e-mailed code", {"session_token": SESSION, "code": "123456"})
    },
    "auth_verify_passkey_create": {
        "assertion": _one(
            "The authenticator's assertion, base64url",
            {
                "session_token": SESSION,
                "assertion": {
                    "credentialIdB64": "AAAA",
                    "clientDataJSON_B64": "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0",
                    "authenticatorDataB64": "SZYN5YgO",
                    "signatureB64": "MEUCIQ",
                },
            },
        )
    },
    "auth_refresh_create": {
        "refresh": _one("Renew the access token", {"refresh_token": "the refresh_token"})
    },
    "auth_logout_create": {"logout": _one("End the session", {"access_token": "the access_token"})},
    "auth_change_password_create": {
        "first": _one(
            "First sign-in with a temporary password",
            {
                "email": "customer@example.com",
                "temporary_password": "the temporary password",
                "new_password": "a long new passphrase 42",
            },
        )
    },
    "auth_mfa_setup_create": {"setup": _one("Start TOTP setup", {"session_token": SESSION})},
    "auth_mfa_verify_setup_create": {
        "verify": _one("Confirm TOTP setup", {"session_token": SESSION, "totp_code": "123456"})
    },
    "auth_passkey_register_start_create": {"start": _one("Name the passkey", {"friendly_name": "Laptop"})},
    "auth_passkey_register_complete_create": {
        "attestation": _one(
            "The authenticator's attestation, base64url",
            {
                "session_token": SESSION,
                "attestation": {
                    "credentialIdB64": "AAAA",
                    "clientDataJSON_B64": "eyJ0eXBlIjoid2ViYXV0aG4uY3JlYXRlIn0",
                    "attestationObjectB64": "o2NmbXRkbm9uZQ",
                    "transports": ["internal"],
                },
            },
        )
    },
    "customers_accounts_payments_create": {
        "beneficiary": _one(
            "Pay a saved beneficiary now",
            {
                "amount": "25.00",
                "currency": "GBP",
                "reference": "Invoice 42",
                "beneficiaryId": "the beneficiaryId (sandbox: customer.beneficiaryId)",
            },
        ),
        "payee": _one(
            "Pay a new payee by sort code and account number",
            {"amount": "10.50", "currency": "GBP", "reference": "Invoice 43", "payee": UK_PAYEE},
        ),
        "monthly": _one(
            "A monthly payment from next week (the sandbox clock runs it ahead)",
            {
                "amount": "5.00",
                "currency": "GBP",
                "reference": "Rent",
                "payee": UK_PAYEE,
                "scheduledDate": "2026-12-01",
                "frequency": "MONTHLY",
            },
        ),
    },
    "customers_accounts_international_transfers_create": {
        "quote": _one(
            "Pay with a quote of the FX route",
            {
                "quoteId": "0f8fad5b-d9cb-469f-a165-70867728950e",
                "reference": "Invoice 44",
                "payee": {
                    "name": "Jean Fournisseur",
                    "account": {"type": "iban", "iban": "FR1420041010050500013M02606"},
                },
            },
        )
    },
    "sandbox_payment_requests_fail_create": {
        "reason": _one("Fail with a reason", {"reason": "Account closed"})
    },
    "sandbox_payment_requests_return_create": {
        "closed": _one("The payee's account is closed (AC04)", {"reasonCode": "AC04"})
    },
    "sandbox_incoming_payments_create": {
        "invoice": _one(
            "A supplier's customer pays an invoice into the sandbox account GB33BUKB20201555555555",
            {
                "creditorIban": "GB33BUKB20201555555555",
                "amount": "250.00",
                "currency": "GBP",
                "debtorName": "Acme Ltd",
                "debtorIban": "DE89370400440532013000",
                "endToEndId": "INV-42",
                "remittanceInformation": "Invoice 42",
            },
        )
    },
    "sandbox_cards_authorizations_create": {
        "coffee": _one(
            "A coffee shop asks to take 4.50",
            {
                "amount": "4.50",
                "currency": "GBP",
                "merchantName": "Corner Coffee",
                "merchantCategoryCode": "5814",
            },
        )
    },
    "sandbox_card_authorizations_clear_create": {
        "all": _one("Clear the whole authorized amount", {}),
        "part": _one("Clear part of it (the rest goes back)", {"amount": "4.00"}),
    },
    "sandbox_scheduled_payments_run_create": {
        "date": _one(
            "Run your schedules up to ten weeks ahead (the monthly example: its first three runs)",
            {"date": "2027-03-01"},
        )
    },
    "sandbox_customers_create": {
        "plain": _one("A customer living at the real time", {"name": "Ada Lovelace"}),
        "on_a_clock": _one(
            "A customer living on a test clock (its testClockId)",
            {"testClockId": "7d4f2b8e-1c3a-4e5f-9a6b-0c1d2e3f4a5b"},
        ),
    },
    "sandbox_test_clocks_create": {
        "month_start": _one(
            "A clock at the start of a month", {"frozenTime": "2027-01-01T00:00:00Z", "name": "Q1"}
        )
    },
    "sandbox_test_clocks_advance_create": {
        "two_months": _one("Two months on: each day's 02:00 UTC run happens", {"to": "2027-03-01T00:00:00Z"})
    },
    **{
        operation: {
            "verify": _one(
                "1. Check the payments (a draft)", {"action": "verify", "payments": BATCH_PAYMENTS}
            ),
            "initiate": _one(
                "2. The scaChallenge for the draft",
                {"action": "initiate", "batchId": "the draft's requestId", "payments": BATCH_PAYMENTS},
            ),
            "submit": _one(
                "3. Pay, confirmed with a TOTP code",
                {
                    "action": "submit",
                    "batchId": "the draft's requestId",
                    "payments": BATCH_PAYMENTS,
                    "scaChallenge": SCA_CHALLENGE,
                    "confirmation": TOTP,
                    "idempotencyKey": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                },
            ),
        }
        for operation in ("batch_payments_action", "customer_batch_payments_action")
    },
    "customers_accounts_cardholders_create": {
        "business": _one(
            "A cardholder of a business program",
            {
                "firstName": "Ada",
                "lastName": "Lovelace",
                "email": "ada@example.com",
                "dateOfBirth": "1990-12-10",
                "address": {
                    "addressLine1": "1 High Street",
                    "city": "London",
                    "postalCode": "N1 9GU",
                    "country": "GB",
                },
            },
        )
    },
    "customers_accounts_cards_cardholders_create": {
        "invite": _one("Add a cardholder to the card", {"cardholderId": "the cardholderId"})
    },
    "customers_accounts_cards_secure_create": {
        "totp": _one("Confirm with a TOTP code", {"confirmation": TOTP})
    },
    "applications_create": {
        "individual": _one("An individual (KYC)", {"isCompany": False}),
        "company": _one("A company (KYB)", {"isCompany": True, "email": "finance@example.com"}),
    },
    "applications_documents_legal_accept_create": {
        "accept": _one(
            "Accept the set, copying id, hash and version of each document",
            {
                "documentSetVersion": "1",
                "acceptedDocuments": [
                    {
                        "id": "terms",
                        "hash": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                        "version": "1",
                    }
                ],
            },
        )
    },
    "applications_ubos_actions_create": {
        "email": _one(
            "E-mail a verification link",
            {
                "action": "UBO_VERIFICATION_EMAIL",
                "uboIds": ["the uboId"],
                "redirectSuccessUrl": "https://example.com/verified",
                "ttlInSecs": 86400,
            },
        ),
        "reset": _one("Start a UBO's verification over", {"action": "UBO_RESET", "uboIds": ["the uboId"]}),
    },
    "customers_documents_presign_create": {
        "upload": _one(
            "An upload URL for a passport scan",
            {"collection": "kyc", "documentType": "PASSPORT", "contentType": "application/pdf"},
        ),
        "download": _one(
            "A download URL for an uploaded key",
            {"collection": "kyc", "key": "the key the upload answered", "applicationId": "the applicationId"},
        ),
    },
    "sandbox_ubo_verification_create": {"approve": _one("Approve the UBO", {"outcome": "approve"})},
    "approvals_approve_create": {
        "totp": _one(
            "Approve with the authenticator app's code (where the policy allows TOTP)",
            {"confirmation": TOTP},
        ),
        "passkey": _one(
            "Approve with a passkey, over the approval's challenge",
            {
                "confirmation": {
                    "method": "passkey",
                    "passkeySession": "the passkeySession of POST /v1/approvals/{approvalId}/challenge",
                    "assertion": {
                        "credentialIdB64": "AAAA",
                        "clientDataJSON_B64": "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0",
                        "authenticatorDataB64": "SZYN5YgO",
                        "signatureB64": "MEUCIQ",
                    },
                }
            },
        ),
    },
    "approvals_reject_create": {"reason": _one("Reject, saying why", {"reason": "Wrong supplier"})},
    "webhook_endpoints_create": {
        "payments": _one(
            "Receive payment events",
            {
                "url": "https://example.com/hooks/bank",
                "eventTypes": ["payment_request.settled", "payment_request.failed"],
            },
        )
    },
}


# Days after today (UTC) of the dated examples: a schedule's first day must be a later
# day (today's pays at once), and the clock's day is ten weeks on, so that a monthly
# schedule made from the example has had three runs by then, whatever the months.
SCHEDULE_DAYS_AHEAD = 7
CLOCK_DAYS_AHEAD = 70


def examples_dated(today: date) -> dict[str, dict[str, dict[str, Any]]]:
    """The examples with their dates counted from `today`: fixed dates would stop
    working once they had passed."""
    examples = copy.deepcopy(REQUEST_EXAMPLES)
    monthly = examples["customers_accounts_payments_create"]["monthly"]["value"]
    monthly["scheduledDate"] = (today + timedelta(days=SCHEDULE_DAYS_AHEAD)).isoformat()
    clock = examples["sandbox_scheduled_payments_run_create"]["date"]["value"]
    clock["date"] = (today + timedelta(days=CLOCK_DAYS_AHEAD)).isoformat()
    # A test clock at the start of next month, advanced two months.
    month = (today.replace(day=1) + timedelta(days=32)).replace(day=1)
    start = examples["sandbox_test_clocks_create"]["month_start"]["value"]
    start["frozenTime"] = f"{month.isoformat()}T00:00:00Z"
    later = (month + timedelta(days=62)).replace(day=1)
    examples["sandbox_test_clocks_advance_create"]["two_months"]["value"]["to"] = (
        f"{later.isoformat()}T00:00:00Z"
    )
    return examples


def request_examples(
    result: dict[str, Any], generator: object, request: object, public: bool
) -> dict[str, Any]:
    """Postprocessing hook: each request body gets the examples above (a file body,
    `format: binary`, has none)."""
    dated = examples_dated(datetime.now(UTC).date())
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            examples = dated.get(operation.get("operationId", ""))
            for media in operation.get("requestBody", {}).get("content", {}).values():
                if examples and media.get("schema", {}).get("format") != "binary":
                    media["examples"] = examples
    return result
