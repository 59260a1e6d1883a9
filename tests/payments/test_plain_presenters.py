"""The payment route's answer and its events are written in plain code: they must
stay exactly what their serializers (which define them and their document) give."""

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from payments.models import PaymentRequest, ScheduledPayment
from payments.serializers import (
    PaymentCreatedSerializer,
    PaymentRequestSerializer,
    payment_created_data,
    payment_request_data,
)
from payments.services.create import PaymentSubmission

CREATED = datetime(2026, 11, 25, 7, 30, 1, 123456, tzinfo=UTC)


def request(**fields) -> PaymentRequest:
    values = {
        "id": uuid.uuid4(),
        "status": PaymentRequest.Status.PENDING,
        "amount": Decimal("10.00"),
        "currency": "GBP",
        "reference": "Invoice 42",
        "beneficiary_id": uuid.uuid4(),
        "schedule_id": None,
        "failure_reason": "",
        "created_at": CREATED,
        "updated_at": CREATED,
    }
    values.update(fields)
    return PaymentRequest(**values)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"status": PaymentRequest.Status.PENDING_TM, "amount": Decimal("50000")},
        {
            "status": "FAILED",
            "failure_reason": "Returned by the payee's bank",
            "updated_at": CREATED + timedelta(1),
        },
        {"beneficiary_id": None, "schedule_id": uuid.uuid4(), "currency": "EUR", "amount": Decimal("0.10")},
        {"reference": "Ünïcode — ref", "created_at": CREATED.astimezone(timezone(timedelta(hours=2)))},
    ],
)
def test_a_payment_requests_event_data_is_what_its_serializer_gives(fields):
    shown = request(**fields)

    # Same keys, values and order: the same bytes once rendered.
    assert json.dumps(payment_request_data(shown)) == json.dumps(PaymentRequestSerializer(shown).data)


@pytest.mark.parametrize("made", ["request", "schedule", "both"])
def test_the_payment_routes_answer_is_what_its_serializer_gives(made):
    submission = PaymentSubmission(
        payment_request=request() if made in ("request", "both") else None,
        schedule=ScheduledPayment(id=uuid.uuid4()) if made in ("schedule", "both") else None,
    )

    assert json.dumps(payment_created_data(submission)) == json.dumps(
        PaymentCreatedSerializer(submission).data
    )
