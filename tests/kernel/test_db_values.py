"""`bankapi.rows.db_value` passes a value on as it is only where Django's own
`get_db_prep_save` on PostgreSQL would give back that very value: every field
of every model the payment's one statement writes, fed values of every kind
(of the field's own type and not, odd ones included), answers as Django does."""

import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.conf import settings
from django.db.backends.postgresql.base import DatabaseWrapper

from bankapi.models import Account, IdempotencyRecord
from bankapi.row_objects import row_new
from bankapi.rows import _as_it_is, _written_fields, db_value, insert_select_sql
from events.models import Event
from payments.models import LedgerPosting, LedgerTransaction, PaymentRequest

VALUES = [
    None,
    "",
    "text",
    True,
    False,
    0,
    7,
    Decimal("1.00"),
    Decimal("-0.10"),
    Decimal("NaN"),
    Decimal("Infinity"),
    uuid.UUID("0b97c690-4a11-47fc-90ac-a71044d089b6"),
    "0b97c690-4a11-47fc-90ac-a71044d089b6",
    datetime(2026, 12, 7, 18, 0, tzinfo=UTC),
    datetime(2026, 12, 7, 18, 0),
    date(2026, 12, 7),
    {"a": 1},
    b"bytes",
    True,
    -3,
    2**40,
    LedgerTransaction.Kind.PAYMENT,
    PaymentRequest.Status.PENDING,
]


@pytest.fixture(scope="module")
def postgresql():
    return DatabaseWrapper(
        {
            **settings.DATABASES["default"],
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "never_connected",
            "OPTIONS": {},
        },
        alias="db_values",
    )


def django_answer(field, value, connection):
    try:
        return ("value", field.get_db_prep_save(value, connection))
    except Exception as error:  # noqa: BLE001 (the kind of refusal is compared)
        return ("refused", type(error))


def our_answer(field, value, connection):
    try:
        return ("value", db_value(field, _as_it_is(field, connection.vendor), value, connection))
    except Exception as error:  # noqa: BLE001
        return ("refused", type(error))


@pytest.mark.filterwarnings("ignore:DateTimeField .* received a naive datetime")
@pytest.mark.parametrize(
    "model", [Account, LedgerTransaction, LedgerPosting, PaymentRequest, Event, IdempotencyRecord]
)
def test_every_field_answers_as_django_does(model, postgresql):
    passed = 0
    for field in model._meta.concrete_fields:
        for value in VALUES:
            ours = our_answer(field, value, postgresql)
            assert repr(ours) == repr(django_answer(field, value, postgresql)), (field.name, value)
            kept = _as_it_is(field, "postgresql")
            if ours[0] == "value" and value is not None and kept is not None and type(value) is kept:
                passed += 1
    assert passed, "no value was passed on as it is"


def test_other_databases_always_ask_the_field():
    assert all(_as_it_is(field, "sqlite") is None for field in PaymentRequest._meta.concrete_fields)


@pytest.mark.filterwarnings("ignore:DateTimeField .* received a naive datetime")
@pytest.mark.parametrize(
    "model", [LedgerTransaction, LedgerPosting, PaymentRequest, Event, IdempotencyRecord]
)
def test_the_insert_sends_each_value_as_django_would(model, postgresql):
    # `insert_select_sql` passes some values on without calling `db_value`: the
    # parameter it sends for each field is still Django's answer.
    _, written = _written_fields(model)
    for field in written:
        for value in VALUES:
            row = row_new(model)
            row.__dict__[field.attname] = value
            try:
                _, params = insert_select_sql([row], "source", postgresql)
                ours = ("value", params[written.index(field)])
            except Exception as error:  # noqa: BLE001 (the kind of refusal is compared)
                ours = ("refused", type(error))
            assert repr(ours) == repr(django_answer(field, value, postgresql)), (field.name, value)
