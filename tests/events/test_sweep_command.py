"""`manage.py sweep_webhooks` re-drives due webhook retries in its own process,
without a worker, as the beat sweep does."""

import io
from decimal import Decimal

import pytest
from django.core.management import call_command

from events.endpoints import endpoint_create
from events.models import Delivery
from payments.services.acceptance import PaymentInstruction, payment_accept
from tests.support.receiver import start_receiver


@pytest.fixture
def hook():
    receiver, server = start_receiver(script=[500])
    yield receiver
    server.shutdown()


def _sweep() -> str:
    out = io.StringIO()
    call_command("sweep_webhooks", stdout=out)
    return out.getvalue()


def test_a_due_retry_is_delivered_by_the_command(account, hook, settings, django_capture_on_commit_callbacks):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0.0
    endpoint_create(
        program_id=account.program_id, sandbox=True, url=hook.url, event_types=["payment_request.accepted"]
    )
    with django_capture_on_commit_callbacks(execute=True):
        request = payment_accept(
            account=account,
            instruction=PaymentInstruction(
                amount=Decimal("3.00"), currency=account.currency, reference="Hook"
            ),
        )
    assert hook.answered == [500]

    output = _sweep()
    again = _sweep()

    assert hook.answered == [500, 200]
    delivery = Delivery.objects.get(event__resource_id=str(request.id))
    assert (delivery.state, delivery.attempts) == (Delivery.State.DELIVERED, 2)
    assert "Webhook endpoints: 100%" in output and "1/1" in output
    assert "Swept 1 endpoint(s): 1 event(s) delivered, 0 endpoint(s) left to the worker" in output
    assert "Swept 0 endpoint(s): 0 event(s) delivered" in again
