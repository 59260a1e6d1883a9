"""One clock: time that belongs to a customer's money and objects comes from
`bankapi.clock.customer_now` (a sandbox test clock's time for its customers).
Every read of the wall clock left in the service is listed here with why it is
not the customer's time: security, delivery or operations. A new read fails
this test until it is routed through `customer_now` or listed with its reason.

Read as code, not text: `timezone.now`, `datetime.now`, `datetime.utcnow`,
`time.time` and `date.today`, and a plain `DateTimeField(auto_now...)` (the
customer's rows use `bankapi.clock.ClockedDateTimeField`), by the function or
class they appear in.
"""

import ast
from pathlib import Path

from tests.kernel.test_dependencies import DOMAIN_APPS, KERNEL

ROOT = Path(__file__).resolve().parents[2]
WALL_CLOCK = {
    ("timezone", "now"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("time", "time"),
    ("date", "today"),
}
SECURITY, DELIVERY, OPERATIONS = "security", "delivery", "operations"

ALLOWED: dict[tuple[str, str], tuple[str, str]] = {
    # The clock itself: the real time of a customer without a clock, and of a clock that is gone.
    ("bankapi/clock.py", "clock_now"): (OPERATIONS, "a clock deleted under a reader: the real time"),
    ("bankapi/clock.py", "customer_now"): (
        OPERATIONS,
        "a customer without a test clock lives at the real time",
    ),
    ("bankapi/test_clocks.py", "clock_advancing"): (OPERATIONS, "an advance's heartbeat"),
    ("sandbox/clocks.py", "_claim"): (OPERATIONS, "an advance's claim and heartbeat"),
    ("sandbox/clocks.py", "_moment_done"): (OPERATIONS, "an advance's heartbeat"),
    ("sandbox/clocks.py", "clock_advance"): (OPERATIONS, "how often a running advance beats"),
    ("sandbox/clocks.py", "clock_create"): (OPERATIONS, "a clock is set within 366 days of the real now"),
    ("sandbox/customers.py", "_budget_check"): (SECURITY, "the per-program budget of customers on demand"),
    ("sandbox/customers.py", "sandbox_customer_make"): (SECURITY, "when the budget counts the customer"),
    ("bankapi/models.py", "TestClock"): (OPERATIONS, "a clock's own createdAt/updatedAt are real times"),
    ("bankapi/models.py", "Program"): (OPERATIONS, "a program is the bank's configuration"),
    ("bankapi/models.py", "SandboxManifest"): (OPERATIONS, "the bootstrap's record"),
    # Idempotency keys, leases, purges, the back office's figures.
    ("bankapi/idempotency/__init__.py", "idempotency_records_purge"): (OPERATIONS, "keys' lifetime"),
    ("bankapi/idempotency/records.py", "FirstUse.record_sql"): (OPERATIONS, "a key's claim time"),
    ("bankapi/idempotency/records.py", "claim"): (OPERATIONS, "a key's claim and its takeover"),
    ("bankapi/idempotency/records.py", "complete"): (OPERATIONS, "a key's record"),
    ("bankapi/ops/periodic.py", "Lease.beat"): (OPERATIONS, "a periodic run's lease"),
    ("bankapi/ops/periodic.py", "lease_release"): (OPERATIONS, "a periodic run's lease"),
    ("bankapi/ops/periodic.py", "lease_take"): (OPERATIONS, "a periodic run's lease"),
    ("bankapi/backoffice/admin_site.py", "BankAdminSite.index"): (OPERATIONS, "the dashboard's figures"),
    ("bankapi/http/examples.py", "request_examples"): (OPERATIONS, "the OpenAPI examples' dates"),
    ("payments/admin/payments.py", "payment_volume_today"): (OPERATIONS, "the dashboard's figures"),
    ("events/admin.py", "oldest_undelivered_event"): (OPERATIONS, "the dashboard's figures"),
    ("audit/models.py", "ChangeRecord"): (OPERATIONS, "audit records"),
    ("audit/models.py", "StaffView"): (OPERATIONS, "audit records"),
    # Authentication and security.
    ("authn/admin_login.py", "StaffLoginForm.clean"): (SECURITY, "staff sign-in throttle"),
    ("authn/models.py", "AuthChallenge"): (SECURITY, "sign-in challenges"),
    ("authn/models.py", "PasskeyCredential"): (SECURITY, "passkeys"),
    ("authn/models.py", "RefreshToken"): (SECURITY, "refresh tokens"),
    ("authn/models.py", "User"): (SECURITY, "users and their credentials"),
    ("authn/services/challenges.py", "_live"): (SECURITY, "challenge expiry"),
    ("authn/services/challenges.py", "challenge_consume"): (SECURITY, "challenge use"),
    ("authn/services/challenges.py", "challenge_create"): (SECURITY, "challenge expiry"),
    ("authn/services/challenges.py", "challenge_take"): (SECURITY, "challenge use"),
    ("authn/services/challenges.py", "sign_in_complete"): (SECURITY, "last login"),
    ("authn/services/cleanup.py", "auth_records_purge"): (OPERATIONS, "purge of spent challenges"),
    ("authn/services/login.py", "credentials_check"): (SECURITY, "login lockout"),
    ("authn/services/passkeys.py", "passkey_assertion_verify"): (SECURITY, "a passkey's last use"),
    ("authn/services/request_budget.py", "budget_spend"): (SECURITY, "request budgets"),
    ("authn/services/staff.py", "user_is_locked"): (SECURITY, "lockouts"),
    ("authn/services/staff.py", "user_locked_condition"): (SECURITY, "lockouts"),
    ("authn/services/throttle.py", "client_rank"): (SECURITY, "client throttle"),
    ("authn/services/throttle.py", "client_throttle_address"): (SECURITY, "client throttle"),
    ("authn/services/throttle.py", "passkey_sign_in_attempt"): (SECURITY, "passkey lockout"),
    ("authn/services/throttle.py", "second_factor_attempt"): (SECURITY, "second-factor lockout"),
    ("authn/services/throttle.py", "second_factor_judge"): (SECURITY, "second-factor lockout"),
    ("authn/services/throttle.py", "sign_in_slot"): (SECURITY, "sign-in slots"),
    ("authn/tokens.py", "_new_refresh_token"): (SECURITY, "refresh token lifetime"),
    ("authn/tokens.py", "decode_token"): (SECURITY, "token expiry"),
    ("authn/tokens.py", "encode_token"): (SECURITY, "token issue time"),
    ("authn/tokens.py", "tokens_refresh"): (SECURITY, "refresh token rotation"),
    ("authn/tokens.py", "tokens_revoke_all"): (SECURITY, "global logout"),
    ("batches/services/challenges.py", "batch_initiate"): (SECURITY, "the scaChallenge's lifetime"),
    ("batches/services/challenges.py", "sca_challenge_live"): (SECURITY, "the scaChallenge's lifetime"),
    ("batches/services/submit.py", "batch_submit.work"): (SECURITY, "the scaChallenge consumed"),
    ("onboarding/links.py", "now_seconds"): (SECURITY, "signed links' expiry"),
    # Webhook and e-mail delivery.
    ("events/delivery.py", "deliveries_create"): (DELIVERY, "webhook deliveries"),
    ("events/delivery.py", "deliveries_sweep"): (DELIVERY, "webhook retries"),
    ("events/delivery.py", "endpoints_to_drain"): (DELIVERY, "drain leases"),
    ("events/drain.py", "Lease.keep"): (DELIVERY, "drain leases"),
    ("events/drain.py", "Lease.take"): (DELIVERY, "drain leases"),
    ("events/drain.py", "_drain"): (DELIVERY, "due deliveries"),
    ("events/drain.py", "_post"): (DELIVERY, "webhook-timestamp"),
    ("events/drain.py", "_record"): (DELIVERY, "delivery attempts"),
    ("events/drain.py", "endpoint_drain"): (DELIVERY, "due deliveries"),
    ("events/drain.py", "retry_schedule"): (DELIVERY, "retry backoff"),
    ("events/endpoints.py", "endpoint_rotate_secret"): (SECURITY, "a rotated secret's overlap"),
    ("events/endpoints.py", "event_redeliver"): (DELIVERY, "a redelivery"),
    ("events/models.py", "Delivery"): (DELIVERY, "webhook deliveries"),
    ("events/models.py", "DeliveryAttempt"): (DELIVERY, "delivery attempts"),
    ("events/selectors.py", "outbox_oldest_pending_seconds"): (OPERATIONS, "the outbox's age"),
    ("onboarding/services/ubo_emails.py", "ubo_email_settled"): (DELIVERY, "UBO e-mail retries"),
    ("cards/tasks.py", "expire_card_authorizations"): (
        OPERATIONS,
        "beat's sweep of the customers without a clock, whose time is the real one",
    ),
    ("cards/authorizations.py", "authorizations_clear_run"): (
        OPERATIONS,
        "a clearing run takes only customers without a clock, whose time is the real one",
    ),
    ("onboarding/models.py", "Ubo"): (DELIVERY, "a UBO's e-mail bookkeeping"),
    ("onboarding/models.py", "VerificationStep"): (OPERATIONS, "the verification provider's report"),
    # The background runs: leases, stall detection, settlement and the real sweeps.
    ("payments/ledger/legs.py", "movement_now"): (OPERATIONS, "a movement of system accounts only"),
    ("payments/ledger/bulk.py", "ledger_post_many"): (OPERATIONS, "callers pass the movement's time"),
    ("payments/models/fx.py", "FxQuote"): (
        OPERATIONS,
        "a default; quotes are stamped at the customer's time",
    ),
    ("payments/models/fx.py", "FxRate"): (OPERATIONS, "the rate table's configuration"),
    ("payments/models/ledger.py", "LedgerPosting"): (OPERATIONS, "a default; the ledger books each posting"),
    ("payments/models/ledger.py", "LedgerTransaction"): (OPERATIONS, "when a movement was written"),
    ("payments/models/schedule.py", "ScheduleRun"): (OPERATIONS, "when a run record was written"),
    ("payments/services/schedules.py", "schedule_run_day"): (OPERATIONS, "the real 02:00 run's day"),
    ("payments/services/settlement.py", "payments_settle_chunk"): (OPERATIONS, "a settlement run's moment"),
    ("payments/services/settlement.py", "payments_settle_oldest_pending_seconds"): (OPERATIONS, "lag metric"),
    ("payments/services/settlement.py", "payments_settle_pending"): (OPERATIONS, "what a run covers"),
    ("payments/tasks.py", "settle_pending_payments"): (OPERATIONS, "a periodic run's lease"),
    ("approvals/services.py", "approvals_expire"): (
        OPERATIONS,
        "the real sweep, of customers without a clock",
    ),
    ("batches/selectors.py", "_window"): (OPERATIONS, "management's lookback over a program"),
    ("batches/selectors.py", "batches_oldest_stall_seconds"): (OPERATIONS, "stall metric"),
    ("batches/services/verification.py", "drafts_stalled"): (OPERATIONS, "stall detection"),
    ("batches/services/files.py", "status_report"): (OPERATIONS, "a status report file's creation"),
    ("batches/services/housekeeping.py", "batch_records_purge"): (OPERATIONS, "purges"),
    ("batches/services/processing.py", "_moved"): (OPERATIONS, "processing heartbeat (stall sweep)"),
    ("batches/models.py", "Batch"): (OPERATIONS, "progressed_at: when it last moved (stall sweep)"),
    ("batches/models.py", "Draft"): (OPERATIONS, "written_at: stalled verifications and purges"),
    ("batches/models.py", "expired_in_own_time"): (
        OPERATIONS,
        "purges and sweeps: the real time of a row of a customer without a clock",
    ),
    ("events/models.py", "Event"): (OPERATIONS, "written_at: the outbox's age and the fan-out grace"),
    ("batches/services/processing.py", "batches_stalled"): (OPERATIONS, "stall detection"),
    ("batches/services/retry.py", "_failed_again"): (OPERATIONS, "an operator's retry, recorded"),
    ("batches/services/retry.py", "batch_item_retry"): (OPERATIONS, "an operator's retry, recorded"),
    ("cards/serializers.py", "PastDateField.to_internal_value"): (
        SECURITY,
        "a cardholder's date of birth is checked against the real calendar (identity data)",
    ),
}


def wall_clock_reads(path: Path) -> set[str]:
    """The functions and classes of a module that read the wall clock."""
    found: set[str] = set()

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = f"{scope}.{child.name}" if scope else child.name
            if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name):
                if (child.value.id, child.attr) in WALL_CLOCK:
                    found.add(inner or "<module>")
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr == "DateTimeField"
                and any(keyword.arg in ("auto_now", "auto_now_add") for keyword in child.keywords)
            ):
                found.add(inner or "<module>")
            visit(child, inner)

    visit(ast.parse(path.read_text()), "")
    return found


def service_reads() -> set[tuple[str, str]]:
    return {
        (path.relative_to(ROOT).as_posix(), scope)
        for package in (KERNEL, *DOMAIN_APPS)
        for path in sorted((ROOT / package).rglob("*.py"))
        if "/migrations/" not in path.as_posix()
        for scope in wall_clock_reads(path)
    }


def test_every_wall_clock_read_is_listed_with_its_reason():
    found = service_reads()
    assert sorted(found - set(ALLOWED)) == [], "route these through bankapi.clock.customer_now, or list them"
    assert sorted(set(ALLOWED) - found) == [], "listed but gone: remove them from the list"
    assert {kind for kind, _ in ALLOWED.values()} <= {SECURITY, DELIVERY, OPERATIONS}


def test_the_scan_finds_each_kind_of_read(tmp_path):
    module = tmp_path / "sample.py"
    module.write_text(
        "from django.utils import timezone\n"
        "class Row:\n    at = models.DateTimeField(auto_now_add=True)\n"
        "def stamp():\n    return timezone.now()\n"
        "def fine(customer):\n    return customer_now(customer)\n"
    )
    assert wall_clock_reads(module) == {"Row", "stamp"}
