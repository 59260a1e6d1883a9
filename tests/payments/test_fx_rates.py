"""The sandbox FX rate table: bootstrapped once, edited by operators in admin."""

import io
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import DataError, IntegrityError, transaction
from django.test import Client

from payments.fx import fx_quote_create
from payments.models import FxQuote, FxRate
from tests.support.factories_backoffice import operator_user

SANDBOX_PAIRS = {("GBP", "EUR"), ("GBP", "USD"), ("EUR", "USD")}


@pytest.fixture
def operator(db) -> Client:
    client = Client()
    client.force_login(operator_user())
    return client


def test_the_sandbox_quotes_gbp_eur_and_usd(sandbox):
    rows = {(row.base_currency, row.quote_currency): row for row in FxRate.objects.all()}

    assert set(rows) == SANDBOX_PAIRS
    assert all(row.mid_rate > 0 and row.spread_bps == 25 for row in rows.values())


def test_a_rerun_of_the_bootstrap_adds_nothing_and_keeps_operator_edits(sandbox):
    # Given an operator changed a rate and re-entered another pair the other way round
    FxRate.objects.filter(base_currency="GBP", quote_currency="EUR").update(mid_rate=Decimal("1.20"))
    FxRate.objects.filter(base_currency="EUR", quote_currency="USD").delete()
    FxRate.objects.create(base_currency="USD", quote_currency="EUR", mid_rate=Decimal("0.92"), spread_bps=10)

    call_command("bootstrap_sandbox", "--json", stdout=io.StringIO())

    assert FxRate.objects.count() == 3
    assert FxRate.objects.get(base_currency="GBP", quote_currency="EUR").mid_rate == Decimal("1.20")
    assert not FxRate.objects.filter(base_currency="EUR", quote_currency="USD").exists()


@pytest.mark.parametrize(
    ("base", "quote", "mid", "spread"),
    [
        ("EUR", "GBP", "0.85", 25),  # the inverse of a pair already in the table
        ("GBP", "GBP", "1", 25),
        ("gbp", "JPY", "190", 25),
        ("GBP", "JPY", "0", 25),
        ("GBP", "JPY", "190", 10000),
    ],
)
def test_the_database_refuses_a_rate_that_could_misprice(sandbox, base, quote, mid, spread):
    with pytest.raises(IntegrityError), transaction.atomic():
        FxRate.objects.create(
            base_currency=base, quote_currency=quote, mid_rate=Decimal(mid), spread_bps=spread
        )


@pytest.mark.parametrize(("base", "quote"), [("GBP\n", "CHF"), ("GBP", "CHF\n")])
def test_the_database_refuses_a_currency_code_with_a_trailing_newline(sandbox, base, quote):
    # PostgreSQL's varchar(3) stops it first; SQLite enforces no length, only the
    # check constraint, which Django runs through Python's re.search there.
    with pytest.raises((IntegrityError, DataError)), transaction.atomic():
        FxRate.objects.create(base_currency=base, quote_currency=quote, mid_rate=Decimal("190"))


def test_an_operator_lists_and_edits_rates_in_admin(operator):
    row = FxRate.objects.get(base_currency="GBP", quote_currency="USD")

    listing = operator.get("/admin/payments/fxrate/")
    edited = operator.post(
        f"/admin/payments/fxrate/{row.pk}/change/",
        {"base_currency": "GBP", "quote_currency": "USD", "mid_rate": "1.25000000", "spread_bps": "40"},
    )

    assert listing.status_code == 200 and b"GBP/USD" in listing.content
    assert edited.status_code == 302
    row.refresh_from_db()
    assert (row.mid_rate, row.spread_bps) == (Decimal("1.25000000"), 40)


def test_admin_explains_why_an_inverse_pair_is_refused(operator):
    response = operator.post(
        "/admin/payments/fxrate/add/",
        {"base_currency": "EUR", "quote_currency": "GBP", "mid_rate": "0.85", "spread_bps": "25"},
    )

    assert response.status_code == 200
    assert b"This pair, or its inverse, already has a rate." in response.content
    assert FxRate.objects.count() == 3


def test_quotes_are_read_only_in_admin(operator, account):
    quote = fx_quote_create(
        account=account,
        currency_one="GBP",
        currency_two="EUR",
        amount_currency="GBP",
        amount=Decimal("10.00"),
        tenor="SPOT",
    )

    listing = operator.get("/admin/payments/fxquote/")
    found = operator.get("/admin/payments/fxquote/", {"q": str(quote.pk)})
    not_an_id = operator.get("/admin/payments/fxquote/", {"q": "not-an-id"})
    detail = operator.get(f"/admin/payments/fxquote/{quote.pk}/change/")
    changed = operator.post(f"/admin/payments/fxquote/{quote.pk}/change/", {"rate": "9.99"})
    added = operator.get("/admin/payments/fxquote/add/")
    deleted = operator.post(f"/admin/payments/fxquote/{quote.pk}/delete/", {"post": "yes"})

    assert listing.status_code == 200 and str(quote.pk).encode() in listing.content
    assert found.status_code == 200 and str(quote.pk).encode() in found.content
    assert not_an_id.status_code == 200 and str(quote.pk).encode() not in not_an_id.content
    assert detail.status_code == 200
    assert (changed.status_code, added.status_code, deleted.status_code) == (403, 403, 403)
    quote.refresh_from_db()
    assert quote.rate == Decimal("1.16707500")
    assert FxQuote.objects.filter(pk=quote.pk).exists()
