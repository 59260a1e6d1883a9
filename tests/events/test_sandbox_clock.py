"""The sandbox clock runs a customer's schedules ahead of time."""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine

from authn.models import User
from authn.tokens import tokens_issue
from bankapi.models import Account, Customer
from events.models import Event
from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun
from payments.payees import Payee, UkAccount
from payments.services.acceptance import PaymentInstruction
from payments.services.schedules import schedule_create, scheduled_payments_run, utc_today
from tests.support.factories import funded_account

URL = "/v1/sandbox/scheduled-payments/run"
PAYEE = Payee(name="Landlord", account=UkAccount(sort_code="200000", account_number="55779911"))


def monthly(account: Account, anchor: date, amount: str = "7.00") -> ScheduledPayment:
    instruction = PaymentInstruction(
        amount=Decimal(amount), currency=account.currency, reference="Rent", payee=PAYEE
    )
    return schedule_create(account=account, instruction=instruction, anchor=anchor, frequency="MONTHLY")


def month_end_anchor() -> date:
    """The next 31 January at least a day ahead: the month-end rule shows in February."""
    today = utc_today()
    year = today.year if today < date(today.year, 1, 31) else today.year + 1
    return date(year, 1, 31)


def test_three_months_ahead_in_one_call_month_end_rule_included(api, customer_auth, account):
    anchor = month_end_anchor()
    schedule = monthly(account, anchor)
    up_to = date(anchor.year, 3, 31)
    february_end = date(anchor.year, 3, 1) - timedelta(days=1)
    balance_before = Account.objects.get(id=account.id).balance

    response = api.post(URL, {"date": up_to.isoformat()}, format="json", **customer_auth)

    assert response.status_code == 200
    assert response.json()["data"] == {"date": up_to.isoformat(), "paid": 3, "held": 0, "failed": 0}
    runs = ScheduleRun.objects.filter(schedule=schedule).order_by("run_date")
    assert [run.run_date for run in runs] == [anchor, february_end, up_to]
    assert PaymentRequest.objects.filter(schedule=schedule).count() == 3
    assert Account.objects.get(id=account.id).balance == balance_before - Decimal("21.00")
    assert ScheduledPayment.objects.get(id=schedule.id).next_run_date == date(anchor.year, 4, 30)
    events = Event.objects.filter(resource_id=str(schedule.id), type="scheduled_payment.run_succeeded")
    assert events.count() == 3


def test_the_real_run_of_those_days_pays_nothing_again(api, customer_auth, account):
    anchor = month_end_anchor()
    schedule = monthly(account, anchor)
    api.post(URL, {"date": date(anchor.year, 2, 28).isoformat()}, format="json", **customer_auth)
    runs_before = ScheduleRun.objects.filter(schedule=schedule).count()

    for day in (anchor, date(anchor.year, 2, 28)):
        with time_machine.travel(datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=2)):
            summary = scheduled_payments_run(day)
        assert summary.runs == 0

    assert ScheduleRun.objects.filter(schedule=schedule).count() == runs_before == 2
    assert PaymentRequest.objects.filter(schedule=schedule).count() == 2


def test_a_second_call_for_the_same_day_pays_nothing(api, customer_auth, account):
    schedule = monthly(account, month_end_anchor())
    day = schedule.scheduled_date.isoformat()
    first = api.post(URL, {"date": day}, format="json", **customer_auth).json()["data"]
    second = api.post(URL, {"date": day}, format="json", **customer_auth).json()["data"]
    assert (first["paid"], second["paid"]) == (1, 0)


def test_only_the_callers_schedules_run(api, customer_auth, account, customer2_account):
    other_account = customer2_account
    other = monthly(other_account, month_end_anchor())

    api.post(URL, {"date": other.scheduled_date.isoformat()}, format="json", **customer_auth)

    assert not ScheduleRun.objects.filter(schedule=other).exists()


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"date": ""},
        {"date": "2027/01/31"},
        {"date": "2027-02-30"},
        {"date": "2027-1-31"},
        {"date": "2027-01-31T00:00:00Z"},
        {"date": 20270131},
        {"date": (date.today() + timedelta(days=400)).isoformat()},
    ],
)
def test_bad_dates_are_400_and_run_nothing(api, customer_auth, account, body):
    schedule = monthly(account, month_end_anchor())
    response = api.post(URL, body, format="json", **customer_auth)
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert not ScheduleRun.objects.filter(schedule=schedule).exists()


def test_production_tokens_get_404(api, customer):
    live = Customer.objects.create(program_id=customer.program_id, sandbox=False, name="Live clock")
    live_account = funded_account(live, "100.00")
    schedule = monthly(live_account, month_end_anchor())
    user = User.objects.create(
        email="live-clock@example.com", program_id=customer.program_id, sandbox=False, customer=live
    )
    header = {"HTTP_AUTHORIZATION": f"Bearer {tokens_issue(user).access_token}"}

    response = api.post(URL, {"date": schedule.scheduled_date.isoformat()}, format="json", **header)

    assert response.status_code == 404
    assert response.json()["code"] == "RESOURCE_NOT_FOUND"
    assert not ScheduleRun.objects.filter(schedule=schedule).exists()


def test_wrong_tokens_are_refused(api, sandbox, customer_id_auth):
    body = {"date": month_end_anchor().isoformat()}
    assert api.post(URL, body, format="json").status_code == 401
    assert api.post(URL, body, format="json", **customer_id_auth).status_code == 401
