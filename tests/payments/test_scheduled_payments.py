"""Scheduled creates, the scheduled-payments list and cancellation."""

import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
import time_machine

from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun
from payments.services.schedules import scheduled_payments_run
from tests.payments.conftest import balance, payments_url
from tests.support.auth import access_header, id_header

# Quotes are priced from the starting rate table.
pytestmark = pytest.mark.usefixtures("fx_rates")

TODAY = datetime(2026, 3, 10, 15, 0, tzinfo=UTC)
SCHEDULE_KEYS = {
    "scheduleId",
    "status",
    "frequency",
    "scheduledDate",
    "nextRunDate",
    "amount",
    "currency",
    "reference",
    "lastRun",
}


@pytest.fixture
def frozen():
    with time_machine.travel(TODAY, tick=False) as traveller:
        yield traveller


@pytest.fixture
def auth(payer, frozen):
    """Minted inside the frozen clock, so the token is valid there."""
    return access_header(payer.email, payer.program_id)


def create(api, auth, account, beneficiary, key=None, **fields):
    body = {
        "amount": "25.00",
        "reference": "Rent",
        "beneficiaryId": str(beneficiary.id),
    } | fields
    headers = {"HTTP_IDEMPOTENCY_KEY": str(key)} if key else {}
    return api.post(payments_url(account.customer_id, account.id), body, format="json", **headers, **auth)


def listed(api, auth, account, **query):
    response = api.get(payments_url(account.customer_id, account.id, "scheduled-payments"), query, **auth)
    assert response.status_code == 200, response.json()
    return response.json()["data"]


@pytest.mark.parametrize(
    ("scheduled_date", "first_run"),
    [
        ("2026-03-11", "2026-03-11"),
        ("2026-03-11T00:00:00Z", "2026-03-11"),
        # 23:59 on the 10th at UTC-01:00 is already the 11th in UTC.
        ("2026-03-10T23:59:59-01:00", "2026-03-11"),
        # Without an offset the time is read as UTC.
        ("2026-12-31T23:30:00", "2026-12-31"),
    ],
)
def test_a_later_utc_day_creates_a_schedule_and_pays_nothing_yet(
    api, auth, account, scheduled_date, first_run, beneficiary
):
    response = create(api, auth, account, beneficiary, scheduledDate=scheduled_date)

    assert response.status_code == 200
    transfer = response.json()["data"]["bankTransfer"]
    assert set(transfer) == {"status", "scheduleId"} and transfer["status"] == "success"
    assert PaymentRequest.objects.count() == 0
    assert balance(account) == Decimal("100000.00")
    schedule = ScheduledPayment.objects.get(id=transfer["scheduleId"])
    assert schedule.next_run_date == schedule.scheduled_date == date.fromisoformat(first_run)


@pytest.mark.parametrize(
    "scheduled_date",
    [
        "2026-03-10",
        "2026-03-01",
        "2025-12-31T23:00:00Z",
        # 00:30 on the 11th at UTC+02:00 is still the 10th in UTC.
        "2026-03-11T00:30:00+02:00",
    ],
)
def test_today_or_an_earlier_utc_day_pays_at_once(api, auth, account, scheduled_date, beneficiary):
    response = create(api, auth, account, beneficiary, scheduledDate=scheduled_date)

    assert set(response.json()["data"]["bankTransfer"]) == {"status", "requestId"}
    assert ScheduledPayment.objects.count() == 0
    assert balance(account) == Decimal("99975.00")


@pytest.mark.parametrize("starting", [{"scheduledDate": "2026-03-10"}, {"scheduledDate": "2026-02-01"}, {}])
def test_a_repeating_payment_starting_today_pays_now_and_goes_on_from_today(
    api, auth, account, starting, beneficiary
):
    response = create(api, auth, account, beneficiary, frequency="MONTHLY", **starting)

    transfer = response.json()["data"]["bankTransfer"]
    assert set(transfer) == {"status", "requestId", "scheduleId"}
    entry = listed(api, auth, account)["scheduledPayments"][0]
    assert (entry["status"], entry["scheduledDate"], entry["nextRunDate"]) == (
        "ACTIVE",
        "2026-03-10",
        "2026-04-10",
    )
    assert entry["lastRun"] == {
        "date": "2026-03-10",
        "outcome": "PAID",
        "requestId": transfer["requestId"],
        "reason": None,
    }
    request = PaymentRequest.objects.get(id=transfer["requestId"])
    assert str(request.schedule_id) == transfer["scheduleId"]


def test_a_repeating_payment_refused_today_creates_no_schedule(api, auth, snapshot, low_account, beneficiary):
    low = low_account
    before = snapshot()

    response = create(api, auth, low, beneficiary, amount="6.00", frequency="WEEKLY")

    assert (response.status_code, response.json()["code"]) == (422, "INSUFFICIENT_FUNDS")
    assert before.unchanged() and ScheduledPayment.objects.count() == 0


def test_a_retried_scheduled_create_returns_the_original_schedule(api, auth, account, beneficiary):
    key = uuid.uuid4()

    first = create(api, auth, account, beneficiary, key, scheduledDate="2026-04-01", frequency="WEEKLY")
    retry = create(api, auth, account, beneficiary, key, scheduledDate="2026-04-01", frequency="WEEKLY")

    assert retry.json() == first.json() and retry["Idempotent-Replayed"] == "true"
    assert ScheduledPayment.objects.count() == 1


def test_monthly_from_31_january_in_a_leap_year_runs_on_month_ends(
    api, account, customer, payer, program, beneficiary
):
    with time_machine.travel(datetime(2028, 1, 20, 9, 0, tzinfo=UTC), tick=False):
        auth = access_header(payer.email, payer.program_id)
        response = create(api, auth, account, beneficiary, scheduledDate="2028-01-31", frequency="MONTHLY")
    schedule_id = response.json()["data"]["bankTransfer"]["scheduleId"]

    # The 02:00 UTC beat, every day from the 20th of January to the end of June.
    day = date(2028, 1, 20)
    while day <= date(2028, 6, 30):
        with time_machine.travel(datetime(day.year, day.month, day.day, 2, 0, tzinfo=UTC), tick=False):
            scheduled_payments_run(day)
        day = date.fromordinal(day.toordinal() + 1)

    run_dates = list(
        ScheduleRun.objects.filter(schedule_id=schedule_id)
        .order_by("run_date")
        .values_list("run_date", flat=True)
    )
    assert run_dates == [
        date(2028, 1, 31),
        date(2028, 2, 29),
        date(2028, 3, 31),
        date(2028, 4, 30),
        date(2028, 5, 31),
        date(2028, 6, 30),
    ]
    assert PaymentRequest.objects.filter(schedule_id=schedule_id).count() == 6
    assert ScheduledPayment.objects.get(id=schedule_id).next_run_date == date(2028, 7, 31)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"scheduledDate": "2026-03-32"}, "scheduledDate"),
        ({"scheduledDate": "11/03/2026"}, "scheduledDate"),
        ({"scheduledDate": ""}, "scheduledDate"),
        ({"frequency": "monthly"}, "frequency"),
        ({"frequency": None}, "frequency"),
        (
            {
                "beneficiaryId": None,
                "cryptoQuote": {"quoteId": str(uuid.uuid4())},
                "scheduledDate": "2026-04-01",
            },
            "cryptoQuote",
        ),
        (
            {"beneficiaryId": None, "cryptoQuote": {"quoteId": str(uuid.uuid4())}, "frequency": "DAILY"},
            "cryptoQuote",
        ),
    ],
)
def test_bad_schedule_fields_are_a_400_and_create_nothing(
    api, auth, account, snapshot, fields, field, beneficiary
):
    before = snapshot()
    body = {key: value for key, value in fields.items() if key != "beneficiaryId"}
    if "beneficiaryId" in fields:
        response = api.post(
            payments_url(account.customer_id, account.id),
            {"amount": "25.00", "reference": "Rent"} | body,
            format="json",
            **auth,
        )
    else:
        response = create(api, auth, account, beneficiary, **body)

    assert response.status_code == 400, response.json()
    assert field in [error["field"] for error in response.json()["errors"]]
    assert before.unchanged() and ScheduledPayment.objects.count() == 0


def test_schedules_are_listed_newest_first_across_pages(api, auth, account, frozen, beneficiary):
    made = []
    for day in ("2026-04-01", "2026-05-01", "2026-06-01"):
        made.append(
            create(api, auth, account, beneficiary, scheduledDate=day).json()["data"]["bankTransfer"][
                "scheduleId"
            ]
        )
        frozen.shift(1)

    first = listed(api, auth, account, limit=2)
    second = listed(api, auth, account, limit=2, nextToken=first["nextToken"])

    ids = [s["scheduleId"] for s in first["scheduledPayments"] + second["scheduledPayments"]]
    assert ids == list(reversed(made))
    assert second["nextToken"] is None
    entry = second["scheduledPayments"][0]
    assert set(entry) == SCHEDULE_KEYS
    assert entry == {
        "scheduleId": made[0],
        "status": "ACTIVE",
        "frequency": "NEVER",
        "scheduledDate": "2026-04-01",
        "nextRunDate": "2026-04-01",
        "amount": "25.00",
        "currency": "GBP",
        "reference": "Rent",
        "lastRun": None,
    }


def test_cancelling_keeps_the_schedule_listed_as_cancelled_and_it_pays_nothing(
    api, auth, account, frozen, beneficiary
):
    schedule_id = create(
        api, auth, account, beneficiary, scheduledDate="2026-03-11", frequency="DAILY"
    ).json()["data"]["bankTransfer"]["scheduleId"]
    url = payments_url(account.customer_id, account.id, f"scheduled-payments/{schedule_id}")

    response = api.delete(url, **auth)
    again = api.delete(url, **auth)
    listed_status = listed(api, auth, account)["scheduledPayments"][0]["status"]
    # Ten days on, the 02:00 UTC run.
    frozen.move_to(datetime(2026, 3, 20, 2, 0, tzinfo=UTC))
    scheduled_payments_run(date(2026, 3, 20))

    assert response.status_code == 200
    assert response.json()["data"]["scheduledPayment"]["status"] == "CANCELLED"
    assert response.json()["data"]["scheduledPayment"]["nextRunDate"] is None
    assert (again.status_code, again.json()["code"]) == (409, "INVALID_STATE")
    assert listed_status == "CANCELLED"
    assert PaymentRequest.objects.count() == 0 and ScheduleRun.objects.count() == 0
    assert balance(account) == Decimal("100000.00")


def test_outsiders_cannot_list_or_cancel_schedules(
    api, auth, account, program, customer2, customer2_account, beneficiary, business
):
    schedule_id = create(api, auth, account, beneficiary, scheduledDate="2026-04-01").json()["data"][
        "bankTransfer"
    ]["scheduleId"]
    other = access_header(customer2.email, str(program.id))
    outsider = access_header(business.email, business.program_id)
    base = payments_url(account.customer_id, account.id, "scheduled-payments")
    other_account = customer2_account

    responses = [
        api.get(base, **other),
        api.get(base, **outsider),
        api.delete(f"{base}/{schedule_id}", **other),
        api.delete(f"{base}/{schedule_id}", **outsider),
        # The caller's own account, another account's schedule id.
        api.delete(
            payments_url(other_account.customer_id, other_account.id, f"scheduled-payments/{schedule_id}"),
            **other,
        ),
        api.delete(f"{base}/{uuid.uuid4()}", **auth),
        api.delete(f"{base}/not-an-id", **auth),
    ]

    assert [r.status_code for r in responses] == [404] * 7
    assert ScheduledPayment.objects.get(id=schedule_id).status == "ACTIVE"


def test_the_schedule_routes_need_the_access_token(api, auth, account, payer, program, beneficiary):
    schedule_id = create(api, auth, account, beneficiary, scheduledDate="2026-04-01").json()["data"][
        "bankTransfer"
    ]["scheduleId"]
    base = payments_url(account.customer_id, account.id, "scheduled-payments")
    id_token = id_header(payer.email, payer.program_id)

    responses = [
        api.get(base),
        api.get(base, **id_token),
        api.delete(f"{base}/{schedule_id}"),
        api.delete(f"{base}/{schedule_id}", **id_token),
    ]

    assert [r.status_code for r in responses] == [401] * 4
    assert ScheduledPayment.objects.get(id=schedule_id).status == "ACTIVE"


@pytest.mark.parametrize("query", [{"limit": "0"}, {"limit": "x"}, {"nextToken": "forged"}])
def test_bad_list_parameters_are_a_400(api, auth, account, query):
    response = api.get(payments_url(account.customer_id, account.id, "scheduled-payments"), query, **auth)

    assert response.status_code == 400
