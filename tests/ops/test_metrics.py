"""GET /metrics: the series an operator alerts on, counted as a user's requests
happen, labelled by route pattern, guarded in a deployment."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from bankapi.models import Account
from bankapi.ops import metrics
from events.endpoints import endpoint_create
from events.models import Event, EventType
from events.recording import event_record
from payments.models import Beneficiary
from tests.batches.conftest import payment
from tests.batches.helpers import batch_submitted
from tests.payments.conftest import payments_url
from tests.support.factories import custodian_with_clients
from tests.support.receiver import start_receiver

SERIES = {
    "bankapi_http_requests_total",
    "bankapi_http_request_duration_seconds",
    "bankapi_payments_total",
    "bankapi_batch_items_total",
    "bankapi_webhook_deliveries_total",
    "bankapi_outbox_oldest_pending_seconds",
    "bankapi_task_publish_failures_total",
    "bankapi_batch_oldest_stall_seconds",
    "bankapi_settlement_lag_seconds",
    "bankapi_celery_queue_length",
    "bankapi_periodic_task_last_success_timestamp_seconds",
}
PAYMENTS_ROUTE = "/v1/customers/{customerId}/accounts/{accountId}/payments"
AN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-|\d{4,}")


def scrape(api, **headers) -> dict[tuple[str, tuple], float]:
    response = api.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def rise(before, after, name: str, **labels) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def pay(api, account: Account, beneficiary: Beneficiary, auth, amount: str):
    return api.post(
        payments_url(account.customer_id, account.id),
        {"amount": amount, "reference": "Metrics", "beneficiaryId": str(beneficiary.id)},
        format="json",
        **auth,
    )


def test_the_metrics_are_exactly_the_series_an_operator_alerts_on(api, db):
    response = api.get("/metrics", HTTP_ACCEPT="text/plain")

    assert response.status_code == 200
    families = {family.name for family in text_string_to_metric_families(response.content.decode())}
    # The parser names counters without their `_total`; Redis is asked only where configured.
    expected = {name.removesuffix("_total") for name in SERIES}
    if settings.REDIS_URL:
        expected.add("bankapi_redis_up")
    assert expected == families


def test_payments_count_accepted_held_and_refused_and_a_400_is_no_payment(
    api, account, beneficiary, customer_auth, django_capture_on_commit_callbacks
):
    before = scrape(api)

    with django_capture_on_commit_callbacks(execute=True):
        assert pay(api, account, beneficiary, customer_auth, "1.00").status_code == 200
        assert pay(api, account, beneficiary, customer_auth, "2.00").status_code == 200
        assert (
            pay(api, account, beneficiary, customer_auth, "10000.00").status_code == 200
        )  # the review threshold
        assert (
            pay(api, account, beneficiary, customer_auth, "25000.01").status_code == 422
        )  # over the per-payment limit
        assert pay(api, account, beneficiary, customer_auth, "not money").status_code == 400

    after = scrape(api)
    payments = {
        outcome: rise(before, after, "bankapi_payments_total", outcome=outcome)
        for outcome in ("accepted", "held", "refused")
    }
    assert payments == {"accepted": 2, "held": 1, "refused": 1}
    route = {"method": "POST", "route": PAYMENTS_ROUTE}
    requests = {
        status: rise(before, after, "bankapi_http_requests_total", **route, status=status)
        for status in ("200", "400", "422")
    }
    assert requests == {"200": 3, "400": 1, "422": 1}
    assert rise(before, after, "bankapi_http_request_duration_seconds_count", **route) == 5


def test_a_replayed_payment_is_not_counted_twice(
    api, account, beneficiary, customer_auth, django_capture_on_commit_callbacks
):
    before = scrape(api)
    body = {"amount": "3.00", "reference": "Once", "beneficiaryId": str(beneficiary.id)}

    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(2):
            response = api.post(
                payments_url(account.customer_id, account.id),
                body,
                format="json",
                HTTP_IDEMPOTENCY_KEY="0b8c6c2e-2f57-4a43-8d7f-1f1c1a0d9e01",
                **customer_auth,
            )
            assert response.status_code == 200

    assert response["Idempotent-Replayed"] == "true"
    after = scrape(api)
    assert (
        value(after, "bankapi_payments_total", outcome="accepted")
        - value(before, "bankapi_payments_total", outcome="accepted")
        == 1
    )


def test_route_labels_are_url_patterns_never_ids(
    api, account, beneficiary, customer_auth, customer2_account, customer2_auth
):
    pay(api, account, beneficiary, customer_auth, "1.00")
    api.post(
        payments_url(customer2_account.customer_id, customer2_account.id),
        {"amount": "1.00", "reference": "Other", "beneficiaryId": str(beneficiary.id)},
        format="json",
        **customer2_auth,
    )
    account_url = f"/v1/customers/{account.customer_id}/accounts/{account.id}"
    api.get(f"{account_url}/payment-requests", **customer_auth)
    api.get(f"/v1/no/such/route/{account.customer_id}")
    api.get("/admin/payments/paymentrequest/12345/change/")

    samples = scrape(api)
    routes = {dict(labels)["route"] for (name, labels) in samples if name == "bankapi_http_requests_total"}
    assert PAYMENTS_ROUTE in routes
    assert "/v1/customers/{customerId}/accounts/{accountId}/payment-requests" in routes
    assert "unmatched" in routes
    assert "/admin/payments/paymentrequest/{object_id}/change/" in routes
    every_label_value = [value_ for (_name, labels) in samples for (_key, value_) in labels]
    assert not [label for label in every_label_value if AN_ID.search(label) and label != "+Inf"]


def test_batch_items_count_what_was_paid_and_what_failed(program, django_capture_on_commit_callbacks, api):
    custodian = custodian_with_clients(program, clients=2)
    accounts = custodian.accounts
    before = scrape(api)

    with django_capture_on_commit_callbacks(execute=True):
        batch_submitted(
            custodian.user,
            [payment(accounts[0], "1.00"), payment(accounts[1], "2.00"), payment(accounts[0], "0")],
        )

    after = scrape(api)
    items = {
        outcome: rise(before, after, "bankapi_batch_items_total", outcome=outcome)
        for outcome in ("success", "failed")
    }
    assert items == {"success": 2, "failed": 1}


@pytest.fixture
def receiver():
    receiver, server = start_receiver(script=[500])
    yield receiver
    server.shutdown()
    server.server_close()


def subscribe(account: Account, receiver) -> None:
    endpoint_create(
        program_id=account.program_id,
        sandbox=True,
        url=receiver.url,
        event_types=[EventType.PAYMENT_REQUEST_ACCEPTED],
    )


def _accepted_event(account: Account, resource_id: str):
    return event_record(
        type=EventType.PAYMENT_REQUEST_ACCEPTED,
        program_id=account.program_id,
        sandbox=account.sandbox,
        customer_id=account.customer_id,
        resource_type="payment_request",
        resource_id=resource_id,
        data={"requestId": resource_id},
    )


def test_webhook_deliveries_count_each_attempt_by_outcome(
    api, account, receiver, settings, django_capture_on_commit_callbacks
):
    from events.tasks import deliveries_sweep

    settings.WEBHOOK_RETRY_BASE_SECONDS = 0.0
    subscribe(account, receiver)
    before = scrape(api)

    with django_capture_on_commit_callbacks(execute=True):
        _accepted_event(account, "metrics-1")  # answered 500 first
    deliveries_sweep.delay()  # the retry: answered 200

    after = scrape(api)
    assert receiver.answered == [500, 200]
    deliveries = {
        outcome: rise(before, after, "bankapi_webhook_deliveries_total", outcome=outcome)
        for outcome in ("delivered", "failed")
    }
    assert deliveries == {"delivered": 1, "failed": 1}


def test_the_outbox_gauge_is_the_age_of_the_oldest_undelivered_event(api, account, receiver):
    subscribe(account, receiver)
    Event.objects.update(fanned_out=True)
    assert value(scrape(api), "bankapi_outbox_oldest_pending_seconds") == 0

    written = timezone.now()
    with time_machine.travel(written, tick=False):
        _accepted_event(account, "metrics-2")  # not yet fanned out: its task runs after commit
    with time_machine.travel(written + timedelta(minutes=10), tick=False):
        assert value(scrape(api), "bankapi_outbox_oldest_pending_seconds") == 600


@pytest.mark.parametrize(
    ("token", "sent", "status"),
    [
        (None, "Bearer anything", 404),
        ("s3cret-scrape-token", None, 401),
        ("s3cret-scrape-token", "Bearer wrong-token", 401),
        ("s3cret-scrape-token", "s3cret-scrape-token", 401),
        ("s3cret-scrape-token", "Bearer s3cret-scrape-token", 200),
    ],
)
def test_a_deployment_needs_the_metrics_token(api, db, settings, token, sent, status):
    settings.METRICS_REQUIRE_TOKEN = True
    settings.METRICS_TOKEN = token
    headers = {"HTTP_AUTHORIZATION": sent} if sent else {}

    response = api.get("/metrics", **headers)

    assert response.status_code == status
    if status == 200:
        assert b"bankapi_payments_total" in response.content
    else:
        assert response.json()["success"] is False
        assert response.json()["code"] == {401: "UNAUTHORIZED", 404: "RESOURCE_NOT_FOUND"}[status]
        assert b"bankapi_" not in response.content


def test_the_counters_still_answer_when_the_database_does_not(api, db, monkeypatch):
    def database_down() -> float:
        raise OperationalError("connection refused")

    monkeypatch.setitem(
        metrics._scrape_gauges,
        "bankapi_outbox_oldest_pending_seconds",
        ("Age of the oldest undelivered event.", None, database_down),
    )

    samples = scrape(api)

    assert ("bankapi_outbox_oldest_pending_seconds", ()) not in samples
    assert ("bankapi_payments_total", (("outcome", "accepted"),)) in samples
