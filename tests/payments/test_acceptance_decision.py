"""The acceptance decision as a table: both sides of every boundary it draws.

`payments.decision.decide` is pure (no database, no clock), so each row is one
call: the program's rules, the account as read under its lock, the payment and
the moment, and what must come out.
"""

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from bankapi.errors import DomainErrorCode, ErrorCode
from payments.decision import ACCOUNT, Accepted, Instruction, Refused, Rules, Snapshot, decide, plan
from payments.errors import PaymentErrorCode
from payments.models import PaymentRequest, SystemAccount

RULES = Rules(
    per_payment_limit=Decimal("1000.00"),
    daily_outbound_limit=Decimal("5000.00"),
    review_threshold=Decimal("800.00"),
    fee_per_payment=Decimal("1.50"),
    fee_waiver_allowed=True,
)
NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
TODAY = date(2026, 3, 10)
YESTERDAY = date(2026, 3, 9)
MIDNIGHT = datetime(2026, 3, 10, tzinfo=UTC)
# Plenty of money, 4,500.00 already sent today: 500.00 of the day's limit is left.
ACCOUNT_ROW = Snapshot(
    balance=Decimal("10000.00"), currency="GBP", outbound_day=TODAY, outbound_total=Decimal("4500.00")
)
FRESH = replace(ACCOUNT_ROW, outbound_day=None, outbound_total=Decimal("0.00"))
PENDING, HELD = PaymentRequest.Status.PENDING, PaymentRequest.Status.PENDING_TM
LIMIT, FUNDS, UNSUPPORTED = (
    PaymentErrorCode.LIMIT_EXCEEDED,
    PaymentErrorCode.INSUFFICIENT_FUNDS,
    ErrorCode.NOT_SUPPORTED,
)

PER_PAYMENT = "The amount is above the per-payment limit of 1000.00."


def daily(sent: str, limit: str = "5000.00") -> str:
    return (
        f"The payment would exceed the account's daily outbound limit of {limit} "
        f"(already sent today: {sent})."
    )


def funds(available: str, needs: str, amount: str, fee: str = "1.50", held: str = "") -> str:
    return (
        f"The account has {available} GBP available{held}; "
        f"this payment needs {needs} (amount {amount} plus fee {fee})."
    )


# (case, account, debit, fee waived, rules, now, expected): expected is
# (status, balance after, day's count after) when accepted, (code, message) when refused.
CASES = [
    # Per-payment maximum (checked on a fresh account, so nothing else can refuse).
    ("per-payment max exactly", FRESH, "1000.00", False, RULES, NOW, (HELD, "8998.50", "1000.00")),
    ("per-payment max plus a cent", FRESH, "1000.01", False, RULES, NOW, (LIMIT, PER_PAYMENT)),
    # Daily limit: 500.00 left today.
    (
        "daily: exactly what is left",
        ACCOUNT_ROW,
        "500.00",
        False,
        RULES,
        NOW,
        (PENDING, "9498.50", "5000.00"),
    ),
    ("daily: a cent over what is left", ACCOUNT_ROW, "500.01", False, RULES, NOW, (LIMIT, daily("4500.00"))),
    (
        "daily: the fee does not count",
        replace(ACCOUNT_ROW, outbound_total=Decimal("4999.99")),
        "0.01",
        False,
        RULES,
        NOW,
        (PENDING, "9998.49", "5000.00"),
    ),
    (
        "daily: limit lowered below what was sent",
        replace(ACCOUNT_ROW, outbound_total=Decimal("5200.00")),
        "0.01",
        False,
        RULES,
        NOW,
        (LIMIT, daily("5200.00")),
    ),
    (
        "daily: above the whole limit on a fresh day",
        FRESH,
        "900.00",
        False,
        replace(RULES, daily_outbound_limit=Decimal("899.99")),
        NOW,
        (LIMIT, daily("0.00", limit="899.99")),
    ),
    # Funds, the fee included.
    (
        "funds: exactly amount plus fee",
        replace(FRESH, balance=Decimal("101.50")),
        "100.00",
        False,
        RULES,
        NOW,
        (PENDING, "0.00", "100.00"),
    ),
    (
        "funds: a cent short of amount plus fee",
        replace(FRESH, balance=Decimal("101.49")),
        "100.00",
        False,
        RULES,
        NOW,
        (FUNDS, funds("101.49", "101.50", "100.00")),
    ),
    # Holds: what a batch's items hold is not available; exactly what is left is.
    (
        "funds: the balance less its holds, exactly",
        replace(FRESH, balance=Decimal("301.50"), held=Decimal("200.00")),
        "100.00",
        False,
        RULES,
        NOW,
        (PENDING, "200.00", "100.00"),
    ),
    (
        "funds: held money is not available",
        replace(FRESH, balance=Decimal("301.49"), held=Decimal("200.00")),
        "100.00",
        False,
        RULES,
        NOW,
        (FUNDS, funds("101.49", "101.50", "100.00", held=" (301.49 less 200.00 held)")),
    ),
    (
        "funds: a waived fee is not needed",
        replace(FRESH, balance=Decimal("100.00")),
        "100.00",
        True,
        RULES,
        NOW,
        (PENDING, "0.00", "100.00"),
    ),
    # Review threshold.
    (
        "review: a cent below the threshold",
        FRESH,
        "799.99",
        False,
        RULES,
        NOW,
        (PENDING, "9198.51", "799.99"),
    ),
    ("review: exactly the threshold", FRESH, "800.00", False, RULES, NOW, (HELD, "9198.50", "800.00")),
    # Day rollover at 00:00 UTC: yesterday's full count stops counting at midnight.
    (
        "rollover: last instant of yesterday",
        replace(ACCOUNT_ROW, outbound_day=YESTERDAY, outbound_total=Decimal("5000.00")),
        "0.01",
        False,
        RULES,
        MIDNIGHT - timedelta(microseconds=1),
        (LIMIT, daily("5000.00")),
    ),
    (
        "rollover: midnight UTC",
        replace(ACCOUNT_ROW, outbound_day=YESTERDAY, outbound_total=Decimal("5000.00")),
        "500.00",
        False,
        RULES,
        MIDNIGHT,
        (PENDING, "9498.50", "500.00"),
    ),
    (
        "rollover: after midnight in Paris is still yesterday in UTC",
        replace(ACCOUNT_ROW, outbound_day=YESTERDAY, outbound_total=Decimal("5000.00")),
        "0.01",
        False,
        RULES,
        datetime(2026, 3, 10, 0, 30, tzinfo=timezone(timedelta(hours=1))),
        (LIMIT, daily("5000.00")),
    ),
    # Order: per-payment before daily, daily before the fee waiver, the waiver before funds.
    (
        "order: per-payment before daily and funds",
        replace(ACCOUNT_ROW, balance=Decimal("0.00")),
        "1000.01",
        False,
        RULES,
        NOW,
        (LIMIT, PER_PAYMENT),
    ),
    (
        "order: daily before funds",
        replace(ACCOUNT_ROW, balance=Decimal("0.00")),
        "500.01",
        False,
        RULES,
        NOW,
        (LIMIT, daily("4500.00")),
    ),
    (
        "order: daily before a refused fee waiver",
        ACCOUNT_ROW,
        "500.01",
        True,
        replace(RULES, fee_waiver_allowed=False),
        NOW,
        (LIMIT, daily("4500.00")),
    ),
    (
        "order: a refused fee waiver before funds",
        replace(FRESH, balance=Decimal("0.00")),
        "10.00",
        True,
        replace(RULES, fee_waiver_allowed=False),
        NOW,
        (UNSUPPORTED, "This program does not allow waiving the payment fee."),
    ),
]


@pytest.mark.parametrize(
    ("account", "debit", "fee_waived", "rules", "now", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_decision_table(account, debit, fee_waived, rules, now, expected):
    instruction = Instruction(
        debit=Decimal(debit), amount=Decimal(debit), currency="GBP", fee_waived=fee_waived
    )

    decided = decide(rules, account, instruction, now=now)

    if isinstance(expected[0], ErrorCode | DomainErrorCode):
        assert decided == Refused(*expected)
        return
    status, balance, total = expected
    assert isinstance(decided, Accepted)
    assert (decided.status, decided.after.balance, decided.after.outbound_total) == (
        status,
        Decimal(balance),
        Decimal(total),
    )
    assert decided.after.outbound_day == decided.day == now.astimezone(UTC).date()
    # The movement takes exactly what the balance loses, and balances.
    assert -sum(leg.amount for leg in decided.legs if leg.holder == ACCOUNT) == account.balance - Decimal(
        balance
    )
    assert sum(leg.amount for leg in decided.legs) == 0


def test_legs_of_a_payment_with_a_fee():
    decided = decide(RULES, FRESH, Instruction(Decimal("10.00"), Decimal("10.00"), "GBP"), now=NOW)

    assert isinstance(decided, Accepted)
    assert [(leg.holder, leg.amount, leg.currency) for leg in decided.legs] == [
        (ACCOUNT, Decimal("-11.50"), "GBP"),
        (SystemAccount.Kind.CLEARING, Decimal("10.00"), "GBP"),
        (SystemAccount.Kind.FEES, Decimal("1.50"), "GBP"),
    ]


def test_legs_of_a_converted_payment_go_through_the_fx_position():
    instruction = Instruction(
        debit=Decimal("85.00"), amount=Decimal("100.00"), currency="EUR", fee_waived=True, converted=True
    )

    decided = decide(RULES, FRESH, instruction, now=NOW)

    assert isinstance(decided, Accepted)
    assert [(leg.holder, leg.amount, leg.currency) for leg in decided.legs] == [
        (ACCOUNT, Decimal("-85.00"), "GBP"),
        (SystemAccount.Kind.CLEARING, Decimal("100.00"), "EUR"),
        (SystemAccount.Kind.FX, Decimal("85.00"), "GBP"),
        (SystemAccount.Kind.FX, Decimal("-100.00"), "EUR"),
    ]
    # The limits count what the account pays, not what the payee receives.
    assert (decided.debit, decided.after.outbound_total) == (Decimal("85.00"), Decimal("85.00"))


@pytest.mark.parametrize(
    ("account", "debit", "fee_waived", "rules", "now", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_plan_requirements_are_the_decision(account, debit, fee_waived, rules, now, expected):
    """The single-payment writer applies a plan in one statement from its two
    requirements (`needs`, `count`); on every row of the table they admit the
    account exactly when the decision accepts it (short of the rules the plan
    answers itself)."""
    instruction = Instruction(Decimal(debit), Decimal(debit), "GBP", fee_waived=fee_waived)
    planned = plan(rules, instruction, account_currency="GBP", now=now)
    if isinstance(planned, Refused):
        assert planned == Refused(*expected)
        return

    if not planned.count.admits_any():
        assert not isinstance(planned.decide(account), Accepted)
    admitted = account.available >= planned.needs and planned.count.admits(
        account.outbound_day, account.outbound_total
    )

    assert admitted == (planned.deferred is None and isinstance(planned.decide(account), Accepted))


def test_an_account_pays_only_in_its_own_currency_unless_a_quote_converts():
    """Rule 0, before every other: an unconverted instruction stated in another
    currency is refused, however rich the account; the words are a batch item's
    reason too (its status report's AM03)."""
    refused = decide(RULES, FRESH, Instruction(Decimal("7.50"), Decimal("7.50"), "EUR"), now=NOW)
    over_limit = decide(RULES, FRESH, Instruction(Decimal("5000.00"), Decimal("5000.00"), "EUR"), now=NOW)
    converted = Instruction(Decimal("6.40"), Decimal("7.50"), "EUR", converted=True)

    mismatch = "amount: in EUR, not the payer account's currency GBP."
    assert refused == Refused(ErrorCode.VALIDATION_ERROR, mismatch)
    assert over_limit == Refused(ErrorCode.VALIDATION_ERROR, mismatch)
    assert isinstance(decide(RULES, FRESH, converted, now=NOW), Accepted)


# The card network's authorizations: (case, account, amount, currency, card
# active, expected): ("approved", held after, day's count after) or the decline reason.
CARD_ROWS = [
    ("the remaining day's limit", ACCOUNT_ROW, "500.00", "GBP", True, ("approved", "500.00", "5000.00")),
    ("a cent over the day's limit", ACCOUNT_ROW, "500.01", "GBP", True, "LIMIT_EXCEEDED"),
    ("the per-payment limit", FRESH, "1000.00", "GBP", True, ("approved", "1000.00", "1000.00")),
    ("a cent over the per-payment limit", FRESH, "1000.01", "GBP", True, "LIMIT_EXCEEDED"),
    # No fee: the whole available balance may be held.
    (
        "all that is available",
        replace(FRESH, balance=Decimal("300.00"), held=Decimal("100.00")),
        "200.00",
        "GBP",
        True,
        ("approved", "300.00", "200.00"),
    ),
    (
        "a cent more than available",
        replace(FRESH, balance=Decimal("300.00"), held=Decimal("100.00")),
        "200.01",
        "GBP",
        True,
        "INSUFFICIENT_FUNDS",
    ),
    ("another currency", FRESH, "1.00", "EUR", True, "CURRENCY_NOT_SUPPORTED"),
    ("a card not active, whatever else", ACCOUNT_ROW, "99999.00", "EUR", False, "CARD_INACTIVE"),
    ("another currency before the limit", ACCOUNT_ROW, "99999.00", "EUR", True, "CURRENCY_NOT_SUPPORTED"),
    (
        "the limit before the funds",
        replace(ACCOUNT_ROW, balance=Decimal("1.00")),
        "600.00",
        "GBP",
        True,
        "LIMIT_EXCEEDED",
    ),
]


@pytest.mark.parametrize(
    ("case", "account", "amount", "currency", "active", "expected"),
    CARD_ROWS,
    ids=[row[0] for row in CARD_ROWS],
)
def test_the_card_authorization_decision(case, account, amount, currency, active, expected):
    from payments.card_decision import Authorized, CardSpend, Declined, authorization_decide

    decided = authorization_decide(
        RULES, account, CardSpend(amount=Decimal(amount), currency=currency, card_active=active), now=NOW
    )
    if isinstance(expected, str):
        assert isinstance(decided, Declined) and decided.reason == expected, case
        return
    assert isinstance(decided, Authorized), (case, decided)
    _, held, count = expected
    assert decided.after.balance == account.balance
    assert (decided.after.held, decided.after.outbound_total, decided.day) == (
        Decimal(held),
        Decimal(count),
        TODAY,
    )
