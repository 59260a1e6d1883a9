"""GET /v1/accounts/{accountId}/fx/quote: firm quotes as a customer sees them."""

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from bankapi.models import Account
from payments.models import FxQuote, FxRate
from tests.support.auth import access_header
from tests.support.factories import custodian_with_clients, funded_account

# Quotes are priced from the starting rate table.
pytestmark = pytest.mark.usefixtures("fx_rates")

THURSDAY = datetime(2026, 3, 5, 10, 0, tzinfo=UTC)
FRIDAY = datetime(2026, 3, 6, 10, 0, tzinfo=UTC)
SATURDAY = datetime(2026, 3, 7, 10, 0, tzinfo=UTC)
SELL_100_GBP_FOR_EUR = {
    "currencyOne": "GBP",
    "currencyTwo": "EUR",
    "amountCurrency": "GBP",
    "amount": "100.00",
}


def quote_url(account_id: str) -> str:
    return f"/v1/accounts/{account_id}/fx/quote"


def exact(response) -> dict:
    """The body with JSON numbers read as Decimal, digit for digit."""
    return json.loads(response.content, parse_float=Decimal)


@pytest.fixture
def on_thursday(time_machine):
    time_machine.move_to(THURSDAY, tick=False)


@pytest.fixture
def quoter(payer, account, on_thursday) -> dict:
    """The payer's GBP account, and an access token minted at the frozen time."""
    return {"accountId": str(account.id), "auth": access_header(payer.email, payer.program_id)}


@pytest.mark.parametrize(
    ("tenor", "value_date"),
    [
        ("ON", "2026-03-05T00:00:00Z"),
        ("TN", "2026-03-06T00:00:00Z"),
        ("SPOT", "2026-03-09T00:00:00Z"),
        (None, "2026-03-09T00:00:00Z"),
    ],
)
def test_a_customer_gets_a_firm_quote_for_each_tenor(api, quoter, tenor, value_date):
    # Given the sandbox rate table (GBP/EUR mid 1.17, spread 25 bps), on a Thursday
    params = dict(SELL_100_GBP_FOR_EUR, **({"tenor": tenor} if tenor else {}))

    # When the customer asks to sell 100.00 GBP for EUR
    response = api.get(quote_url(quoter["accountId"]), params, **quoter["auth"])

    # Then a firm quote comes back: 1.17 less 0.25%, and the EUR amount rounded down
    assert response.status_code == 200, response.content
    body = exact(response)
    data = body["data"]
    assert body["success"] is True
    assert data == {
        "quoteId": data["quoteId"],
        "currencyOne": "GBP",
        "currencyTwo": "EUR",
        "amountCurrency": "GBP",
        "amount": Decimal("100.00"),
        "rate": Decimal("1.16707500"),
        "price": Decimal("116.70"),
        "tenor": tenor or "SPOT",
        "valueDate": value_date,
        "validUntil": "2026-03-05T10:00:30Z",
    }
    # And it is stored for the account, unused
    quote = FxQuote.objects.get(id=data["quoteId"])
    assert str(quote.account_id) == quoter["accountId"]
    assert (quote.rate, quote.price, quote.used_at) == (Decimal("1.16707500"), Decimal("116.70"), None)
    assert str(quote.program_id) == str(quote.account.program_id) and quote.sandbox is True


def test_amount_rate_and_price_are_json_numbers_written_digit_for_digit(api, quoter):
    response = api.get(quote_url(quoter["accountId"]), SELL_100_GBP_FOR_EUR, **quoter["auth"])

    text = response.content.decode()
    assert '"amount":100.00' in text
    assert '"rate":1.16707500' in text
    assert '"price":116.70' in text
    data = json.loads(text)["data"]
    assert all(isinstance(data[name], float) for name in ("amount", "rate", "price"))


def test_large_amounts_keep_every_digit(api, quoter):
    # Given an amount with more significant digits than a float holds
    params = dict(SELL_100_GBP_FOR_EUR, amountCurrency="EUR", amount="1234567890123456.78")

    response = api.get(quote_url(quoter["accountId"]), params, **quoter["auth"])

    # Then amount and price reach the client to the cent (a float would say ...456.8)
    assert response.status_code == 200, response.content
    text = response.content.decode()
    assert '"amount":1234567890123456.78' in text
    assert '"price":1057830807894485.60' in text


def test_buying_a_fixed_amount_prices_what_the_customer_pays_rounded_up(api, quoter):
    # When the customer wants exactly 100.00 EUR and sells GBP for it
    params = dict(SELL_100_GBP_FOR_EUR, amountCurrency="EUR")

    response = api.get(quote_url(quoter["accountId"]), params, **quoter["auth"])

    # Then 100 / 1.167075 = 85.6843... GBP is rounded up to the cent
    assert response.status_code == 200, response.content
    data = exact(response)["data"]
    assert (data["amountCurrency"], data["amount"], data["price"]) == (
        "EUR",
        Decimal("100.00"),
        Decimal("85.69"),
    )


def test_the_spread_is_taken_against_the_customer_in_both_directions(api, quoter):
    # Given every pair of the sandbox table (GBP, EUR and USD), asked both ways round
    rows = list(FxRate.objects.all())
    pairs = {frozenset((row.base_currency, row.quote_currency)) for row in rows}
    assert pairs == {frozenset(("GBP", "EUR")), frozenset(("GBP", "USD")), frozenset(("EUR", "USD"))}
    quoted = []
    for row in rows:
        for one, two in ((row.base_currency, row.quote_currency), (row.quote_currency, row.base_currency)):
            mid = row.mid_rate if one == row.base_currency else 1 / row.mid_rate
            params = {"currencyOne": one, "currencyTwo": two, "amountCurrency": one, "amount": "1000.00"}

            response = api.get(quote_url(quoter["accountId"]), params, **quoter["auth"])

            # Then the customer's rate is below mid, and the price below 1000 at mid
            assert response.status_code == 200, response.content
            data = exact(response)["data"]
            assert data["rate"] < mid, (one, two)
            assert data["rate"] >= mid * Decimal("0.9975") - Decimal("0.00000001"), (one, two)
            assert data["price"] < Decimal("1000.00") * mid, (one, two)
            quoted.append((data["currencyOne"], data["currencyTwo"]))
    # Six quotes: each pair sold both ways, none skipped.
    assert len(set(quoted)) == 6


def test_the_inverse_of_a_table_pair_is_priced_from_the_inverted_mid(api, quoter):
    # When the customer sells EUR for exactly 100.00 GBP (the table holds GBP/EUR)
    params = {"currencyOne": "EUR", "currencyTwo": "GBP", "amountCurrency": "GBP", "amount": "100"}

    response = api.get(quote_url(quoter["accountId"]), params, **quoter["auth"])

    # Then the rate is 1/1.17 less 0.25%, and the EUR to pay is rounded up
    data = exact(response)["data"]
    assert (data["rate"], data["amount"], data["price"]) == (
        Decimal("0.85256410"),
        Decimal("100.00"),
        Decimal("117.30"),
    )


@pytest.mark.parametrize(
    ("moment", "on", "tn", "spot"),
    [
        (THURSDAY, "2026-03-05", "2026-03-06", "2026-03-09"),
        (FRIDAY, "2026-03-06", "2026-03-09", "2026-03-10"),
        # Nothing values on a weekend: ON rolls to Monday, like TN
        (SATURDAY, "2026-03-09", "2026-03-09", "2026-03-10"),
    ],
)
def test_value_dates_skip_the_weekend(api, time_machine, moment, on, tn, spot, account, payer, program):
    time_machine.move_to(moment, tick=False)
    auth = access_header(payer.email, payer.program_id)
    value_dates = {}
    for tenor in ("ON", "TN", "SPOT"):
        params = dict(SELL_100_GBP_FOR_EUR, tenor=tenor)
        response = api.get(quote_url(str(account.id)), params, **auth)
        assert response.status_code == 200, response.content
        value_dates[tenor] = response.json()["data"]["valueDate"]

    assert value_dates == {"ON": f"{on}T00:00:00Z", "TN": f"{tn}T00:00:00Z", "SPOT": f"{spot}T00:00:00Z"}


@pytest.mark.parametrize("value_date", ["2026-03-05", "2026-03-13", "2027-01-04"])
def test_a_valuation_date_overrides_the_tenor(api, quoter, value_date):
    params = dict(SELL_100_GBP_FOR_EUR, tenor="ON", valueDate=value_date)

    response = api.get(quote_url(quoter["accountId"]), params, **quoter["auth"])

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert (data["tenor"], data["valueDate"]) == ("ON", f"{value_date}T00:00:00Z")
    assert str(FxQuote.objects.get(id=data["quoteId"]).value_date) == value_date


def test_a_custodian_quotes_for_its_clients_accounts_only(api, program, on_thursday, account):
    custodian = custodian_with_clients(program, clients=1)
    auth = access_header(custodian.user.email, program.id)
    client_account = str(custodian.accounts[0].id)

    own = api.get(quote_url(client_account), SELL_100_GBP_FOR_EUR, **auth)
    other = api.get(quote_url(str(account.id)), SELL_100_GBP_FOR_EUR, **auth)

    assert own.status_code == 200, own.content
    assert other.status_code == 404 and other.json()["code"] == "RESOURCE_NOT_FOUND"


BAD_QUERIES = [
    ({"currencyOne": None}, "currencyOne"),
    ({"currencyOne": ""}, "currencyOne"),
    ({"currencyOne": "gbp"}, "currencyOne"),
    ({"currencyOne": "GB"}, "currencyOne"),
    ({"currencyOne": "GBPX"}, "currencyOne"),
    ({"currencyOne": " GBP"}, "currencyOne"),
    ({"currencyOne": "JPY", "amountCurrency": "JPY"}, "currencyOne"),
    ({"currencyTwo": None}, "currencyTwo"),
    ({"currencyTwo": "XXX"}, "currencyTwo"),
    ({"currencyTwo": "GBP"}, "currencyTwo"),
    ({"amountCurrency": None}, "amountCurrency"),
    ({"amountCurrency": "USD"}, "amountCurrency"),
    ({"amountCurrency": "eur"}, "amountCurrency"),
    ({"amount": None}, "amount"),
    ({"amount": ""}, "amount"),
    ({"amount": "0"}, "amount"),
    ({"amount": "0.00"}, "amount"),
    ({"amount": "-5"}, "amount"),
    ({"amount": "+5"}, "amount"),
    ({"amount": "1.234"}, "amount"),
    ({"amount": "1."}, "amount"),
    ({"amount": ".5"}, "amount"),
    ({"amount": "1e3"}, "amount"),
    ({"amount": "1,000"}, "amount"),
    ({"amount": " 100"}, "amount"),
    ({"amount": "100\n"}, "amount"),
    ({"amount": "١٠٠"}, "amount"),
    ({"amount": "NaN"}, "amount"),
    ({"amount": "12345678901234567"}, "amount"),
    # 0.01 USD buys less than one penny
    ({"currencyOne": "USD", "currencyTwo": "GBP", "amountCurrency": "USD", "amount": "0.01"}, "amount"),
    ({"tenor": ""}, "tenor"),
    ({"tenor": "spot"}, "tenor"),
    ({"tenor": "1W"}, "tenor"),
    ({"valueDate": ""}, "valueDate"),
    ({"valueDate": "2026/03/10"}, "valueDate"),
    ({"valueDate": "2026-3-10"}, "valueDate"),
    ({"valueDate": "2026-02-30"}, "valueDate"),
    ({"valueDate": "2026-03-10\n"}, "valueDate"),
    ({"valueDate": "\u0662\u0660\u0662\u0666-\u0660\u0663-\u0661\u0660"}, "valueDate"),
    ({"currencyTwo": "EUR\n"}, "currencyTwo"),
    ({"valueDate": "2026-03-10T00:00:00Z"}, "valueDate"),
    ({"valueDate": "2026-03-04"}, "valueDate"),
    ({"valueDate": "2026-03-07"}, "valueDate"),
    ({"indicative": "false"}, "indicative"),
    ({"indicative": "true"}, "indicative"),
    ({"indicative": ""}, "indicative"),
]


@pytest.mark.parametrize(("change", "field"), BAD_QUERIES)
def test_a_bad_query_parameter_is_a_400_and_stores_nothing(api, quoter, change, field):
    params = {**SELL_100_GBP_FOR_EUR, **change}
    params = {name: value for name, value in params.items() if value is not None}
    before = FxQuote.objects.count()

    response = api.get(quote_url(quoter["accountId"]), params, **quoter["auth"])

    assert response.status_code == 400, response.content
    body = response.json()
    assert (body["success"], body["code"]) == (False, "VALIDATION_ERROR")
    assert field in {error["field"] for error in body["errors"]}, body
    assert FxQuote.objects.count() == before


def test_a_parameter_given_twice_is_a_400(api, quoter):
    url = (
        quote_url(quoter["accountId"])
        + "?currencyOne=GBP&currencyTwo=EUR&amountCurrency=GBP&amount=1&amount=2"
    )

    response = api.get(url, **quoter["auth"])

    assert response.status_code == 400
    assert response.json()["errors"] == [{"field": "amount", "message": "Must be given once."}]
    assert not FxQuote.objects.exists()


def test_the_indicative_flag_is_refused_whatever_its_value(api, quoter):
    response = api.get(
        quote_url(quoter["accountId"]), {**SELL_100_GBP_FOR_EUR, "indicative": "false"}, **quoter["auth"]
    )

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "indicative"
    assert not FxQuote.objects.exists()


def test_a_pair_missing_from_the_rate_table_is_a_400(api, quoter):
    # Given both currencies are known but the operator removed their pair
    FxRate.objects.filter(base_currency="EUR", quote_currency="USD").delete()
    params = {"currencyOne": "USD", "currencyTwo": "EUR", "amountCurrency": "USD", "amount": "10"}

    response = api.get(quote_url(quoter["accountId"]), params, **quoter["auth"])

    assert response.status_code == 400
    assert response.json()["errors"] == [{"field": "currencyTwo", "message": "No rate for USD/EUR."}]
    assert not FxQuote.objects.exists()


def test_a_program_without_international_payments_gets_provider_error(api, business, on_thursday):
    # Given the business program, whose international payments are off
    auth = access_header(business.email, business.program_id)
    account = funded_account(business.customer, "100000.00")

    response = api.get(quote_url(str(account.id)), SELL_100_GBP_FOR_EUR, **auth)

    assert response.status_code == 422
    assert response.json()["code"] == "PROVIDER_ERROR"
    assert not FxQuote.objects.exists()


def test_an_account_whose_provider_cannot_quote_gets_provider_error(api, quoter):
    Account.objects.filter(id=quoter["accountId"]).update(fx_quotes_supported=False)

    response = api.get(quote_url(quoter["accountId"]), SELL_100_GBP_FOR_EUR, **quoter["auth"])

    assert response.status_code == 422
    assert response.json()["code"] == "PROVIDER_ERROR"
    assert not FxQuote.objects.exists()


def test_a_rate_too_small_to_quote_gets_provider_error(api, quoter):
    # Given an operator typo: 1 GBP = 0.00000001 USD, which less the spread is no rate at all
    FxRate.objects.filter(base_currency="GBP", quote_currency="USD").update(mid_rate=Decimal("0.00000001"))
    params = {"currencyOne": "GBP", "currencyTwo": "USD", "amountCurrency": "GBP", "amount": "10"}

    response = api.get(quote_url(quoter["accountId"]), params, **quoter["auth"])

    assert response.status_code == 422
    assert response.json()["code"] == "PROVIDER_ERROR"
    assert not FxQuote.objects.exists()


@pytest.mark.parametrize("whose", ["customer2", "business"])
def test_an_outsiders_account_is_not_found(api, quoter, whose, customer2, business):
    outsider = {"customer2": customer2, "business": business}[whose]
    theirs = funded_account(outsider.customer, "100000.00")
    response = api.get(quote_url(str(theirs.id)), SELL_100_GBP_FOR_EUR, **quoter["auth"])

    assert response.status_code == 404
    assert response.json()["code"] == "RESOURCE_NOT_FOUND"
    assert not FxQuote.objects.exists()


@pytest.mark.parametrize("account_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_an_unknown_account_is_not_found(api, quoter, account_id):
    response = api.get(quote_url(account_id), SELL_100_GBP_FOR_EUR, **quoter["auth"])

    assert response.status_code == 404
    assert response.json()["code"] == "RESOURCE_NOT_FOUND"


def test_without_a_token_the_route_is_unauthorized(api, account):
    response = api.get(quote_url(str(account.id)), SELL_100_GBP_FOR_EUR)

    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"
    assert not FxQuote.objects.exists()


def test_the_id_token_is_refused(api, customer_id_auth, account):
    response = api.get(quote_url(str(account.id)), SELL_100_GBP_FOR_EUR, **customer_id_auth)

    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"
    assert not FxQuote.objects.exists()
