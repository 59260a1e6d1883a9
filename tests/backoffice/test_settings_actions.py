"""Program settings (administrators) and FX rates (operations) edited in the admin."""

from decimal import Decimal

from django.contrib.admin.models import LogEntry

from bankapi.models import Program
from payments.models import FxRate


def _program_form(program: Program, **changes) -> dict:
    form = {
        "name": program.name,
        "account_type": program.account_type,
        "international_payments_enabled": "on" if program.international_payments_enabled else "",
        "cardholders_enabled": "on" if program.cardholders_enabled else "",
        "pin_confirmation_enabled": "on" if program.pin_confirmation_enabled else "",
        "fee_waiver_allowed": "on" if program.fee_waiver_allowed else "",
        "require_idempotency_key": "",
        "per_payment_limit": str(program.per_payment_limit),
        "daily_outbound_limit": str(program.daily_outbound_limit),
        "review_threshold": str(program.review_threshold),
        "fee_per_payment": str(program.fee_per_payment),
        **changes,
    }
    return {key: value for key, value in form.items() if value != ""}


def test_an_administrator_edits_program_settings_and_capabilities_follow(
    staff_client, program, customer_auth, api
):
    client = staff_client("administrator")
    url = f"/admin/bankapi/program/{program.id}/change/"

    page = client.get(url)
    response = client.post(url, _program_form(program, review_threshold="500.00", fee_per_payment="0.25"))

    assert page.status_code == 200
    assert response.status_code == 302, response.content.decode()[:2000]
    program.refresh_from_db()
    assert (program.review_threshold, program.fee_per_payment) == (Decimal("500.00"), Decimal("0.25"))
    assert LogEntry.objects.filter(object_id=str(program.id)).exists()
    capabilities = api.get("/v1/capabilities", **customer_auth).json()["data"]["program"]
    assert "500.00" in str(capabilities) and "0.25" in str(capabilities)


def test_a_negative_limit_is_refused(staff_client, program):
    client = staff_client("administrator")

    response = client.post(
        f"/admin/bankapi/program/{program.id}/change/", _program_form(program, per_payment_limit="-1")
    )

    assert response.status_code == 200
    program.refresh_from_db()
    assert program.per_payment_limit == Decimal("25000.00")


def test_other_groups_see_program_settings_but_cannot_change_them(staff_client, program):
    for group in ("compliance", "support", "operations"):
        client = staff_client(group)
        url = f"/admin/bankapi/program/{program.id}/change/"
        page = client.get(url)
        response = client.post(url, _program_form(program, review_threshold="1.00"))
        assert (page.status_code, response.status_code) == (200, 403)
        client.logout()
    program.refresh_from_db()
    assert program.review_threshold == Decimal("10000.00")


def _rate_list_form(rates, mid: str) -> dict:
    form = {
        "form-TOTAL_FORMS": str(len(rates)),
        "form-INITIAL_FORMS": str(len(rates)),
        "form-MIN_NUM_FORMS": "0",
        "form-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    for n, rate in enumerate(rates):
        form[f"form-{n}-id"] = str(rate.id)
        form[f"form-{n}-mid_rate"] = mid if n == 0 else str(rate.mid_rate)
        form[f"form-{n}-spread_bps"] = str(rate.spread_bps)
    return form


def test_operations_edit_fx_rates_and_support_cannot(staff_client, fx_rates):
    rates = list(FxRate.objects.order_by("base_currency", "quote_currency"))
    first = rates[0]

    refused = staff_client("support").post("/admin/payments/fxrate/", _rate_list_form(rates, "9.87654321"))
    first.refresh_from_db()
    unchanged = first.mid_rate
    done = staff_client("operations").post("/admin/payments/fxrate/", _rate_list_form(rates, "1.23456789"))

    assert refused.status_code in (200, 403) and unchanged != Decimal("9.87654321")
    assert done.status_code == 302
    first.refresh_from_db()
    assert first.mid_rate == Decimal("1.23456789")
    assert LogEntry.objects.filter(object_id=str(first.id)).exists()
