"""The authorization route's answer and its events are written in plain code: it
must stay exactly what `CardAuthorizationSerializer` (which defines it and its
document) gives, for every status and every optional value."""

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from cards.models import CardAuthorization
from cards.serializers_authorizations import CardAuthorizationSerializer, card_authorization_data

AT = datetime(2026, 11, 25, 7, 30, 1, 123456, tzinfo=UTC)


def authorization(**fields) -> CardAuthorization:
    values = {
        "id": uuid.uuid4(),
        "card_id": uuid.uuid4(),
        "account_id": uuid.uuid4(),
        # No such customer: its time is the real one (a clock is looked up by id).
        "customer_id": uuid.uuid4(),
        "amount": Decimal("40.00"),
        "currency": "GBP",
        "merchant_name": "Corner Coffee",
        "merchant_category_code": "",
        "status": CardAuthorization.Status.PENDING,
        "decline_reason": "",
        "cleared_amount": None,
        "authorized_at": AT,
        "expires_at": AT + timedelta(days=7),
    }
    values.update(fields)
    return CardAuthorization(**values)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"merchant_category_code": "5814", "amount": Decimal("0.01")},
        {"status": "DECLINED", "decline_reason": "INSUFFICIENT_FUNDS", "expires_at": None},
        {"status": "CLEARED", "cleared_amount": Decimal("12.30")},
        {"status": "REVERSED"},
        # Past its expiry it reads EXPIRED at once.
        {"authorized_at": AT - timedelta(days=400), "expires_at": AT - timedelta(days=393)},
        {"authorized_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5)))},
        {"amount": Decimal("99999999999.99"), "merchant_name": "Café \u00e9 \u201cquoted\u201d"},
    ],
)
def test_the_plain_presenter_gives_what_the_serializer_gives(fields):
    row = authorization(**fields)
    plain = card_authorization_data(row)
    assert plain == CardAuthorizationSerializer(row).data
    assert json.dumps(plain) == json.dumps(dict(CardAuthorizationSerializer(row).data))
