"""`bankapi.row_objects` makes the very objects Django makes: `row_new(M, **v)`
equals `M(**v)` and `row_loaded` equals `M.from_db`, field by field, in the
relation caches and in the object's state, for every model of the project;
and what it cannot make the same way it leaves to Django."""

import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.apps import apps
from django.db import models
from django.db.models.signals import post_init

from bankapi.models import Account, IdempotencyRecord, Program
from bankapi.row_objects import _plan, row_loaded, row_new
from events.models import Event
from payments.models import LedgerPosting, LedgerTransaction, PaymentRequest

PROJECT_MODELS = [model for model in apps.get_models() if not model.__module__.startswith("django.")]


def _seen(row: models.Model, *, drop: frozenset[str] = frozenset()) -> dict[str, Any]:
    """What an object holds: its field values, relation cache, and state."""
    own = {name: value for name, value in row.__dict__.items() if name != "_state" and name not in drop}
    cache = {name: id(value) for name, value in row._state.fields_cache.items()}
    return {"values": own, "cache": cache, "adding": row._state.adding, "db": row._state.db}


def _random_defaults(model: type[models.Model]) -> frozenset[str]:
    """Attnames whose default is made anew on each call (a fresh UUID)."""
    return frozenset(
        f.attname for f in model._meta.concrete_fields if f.has_default() and callable(f.default)
    )


@pytest.mark.parametrize("model", PROJECT_MODELS, ids=lambda m: m._meta.label)
def test_a_model_made_with_its_defaults_equals_djangos(model: type[models.Model]) -> None:
    drop = _random_defaults(model)
    assert _seen(row_new(model), drop=drop) == _seen(model(), drop=drop)


def test_the_payments_rows_are_made_directly() -> None:
    # The rows a payment's write makes are the ones this is for: none falls back.
    written = (PaymentRequest, LedgerTransaction, LedgerPosting, Event, IdempotencyRecord)
    for model in (*written, Account, Program):
        assert _plan(model) is not None, model


def test_a_payment_request_with_related_objects_equals_djangos() -> None:
    program = Program(id=uuid.uuid4(), name="P")
    account = Account(id=uuid.uuid4(), program=program, balance=Decimal("5.00"))
    values = {
        "id": uuid.uuid4(),
        "program_id": program.id,
        "sandbox": True,
        "customer_id": uuid.uuid4(),
        "account": account,
        "status": PaymentRequest.Status.PENDING,
        "amount": Decimal("1.00"),
        "currency": "GBP",
        "reference": "Rent",
        "beneficiary": None,
        "schedule": None,
        "fx_quote": None,
    }
    made, django = row_new(PaymentRequest, **values), PaymentRequest(**values)
    assert _seen(made) == _seen(django)
    assert made.account is account and made.account_id == account.id
    assert made._state.db == django._state.db == "default"


def test_a_one_to_one_caches_its_reverse_side_as_djangos() -> None:
    entry, django_entry = LedgerTransaction(id=uuid.uuid4()), LedgerTransaction(id=uuid.uuid4())
    made, django = row_new(PaymentRequest, acceptance=entry), PaymentRequest(acceptance=django_entry)
    assert made.acceptance_id == entry.id and made.acceptance is entry
    assert list(entry._state.fields_cache) == list(django_entry._state.fields_cache) != []
    assert list(entry._state.fields_cache.values()) == [made]
    assert list(django_entry._state.fields_cache.values()) == [django]


def test_a_posting_and_its_entry_equal_djangos() -> None:
    entry = row_new(LedgerTransaction, program_id=uuid.uuid4(), sandbox=False, kind="PAYMENT", memo="m")
    account = Account(id=uuid.uuid4())
    values = {"transaction": entry, "account": account, "currency": "GBP", "amount": Decimal("-1.00")}
    made, django = row_new(LedgerPosting, **values), LedgerPosting(**values)
    drop = _random_defaults(LedgerPosting)
    assert _seen(made, drop=drop) == _seen(django, drop=drop)
    assert made.transaction is entry


def test_what_it_cannot_make_the_same_way_is_djangos_to_make() -> None:
    # A wrong object for a relation: Django's own error.
    with pytest.raises(ValueError, match="must be a"):
        row_new(PaymentRequest, account=Program(id=uuid.uuid4()))
    # A keyword that is no field: Django's own error.
    with pytest.raises(TypeError, match="unexpected keyword"):
        row_new(Event, no_such_field=1)
    # Both spellings of a relation: Django's precedence (the attname, set last).
    other = uuid.uuid4()
    both = row_new(PaymentRequest, account=Account(id=uuid.uuid4()), account_id=other)
    assert both.account_id == PaymentRequest(account=Account(id=uuid.uuid4()), account_id=other).account_id


def test_a_post_init_receiver_gets_every_object() -> None:
    seen: list[models.Model] = []

    def receiver(sender: Any, instance: models.Model, **kwargs: Any) -> None:
        seen.append(instance)

    post_init.connect(receiver, sender=Event)
    try:
        made = row_new(Event, type="payment_request.accepted")
        loaded = row_loaded(Event, "default", ["id"], [7])
    finally:
        post_init.disconnect(receiver, sender=Event)
    assert seen == [made, loaded]


@pytest.mark.parametrize("model", PROJECT_MODELS, ids=lambda m: m._meta.label)
def test_a_loaded_row_equals_djangos(model: type[models.Model]) -> None:
    fields = model._meta.concrete_fields
    # Every other field read, the rest left to load on first use.
    read = [f for index, f in enumerate(fields) if index % 2 == 0 or f.primary_key]
    attnames = [f.attname for f in read]
    values = [_a_value(f) for f in read]
    assert _seen(row_loaded(model, "default", attnames, values)) == _seen(
        model.from_db("default", attnames, values)
    )


def _a_value(field: models.Field) -> Any:
    if isinstance(field, models.UUIDField | models.ForeignKey):
        return uuid.UUID(int=7)
    if isinstance(field, models.DateTimeField):
        return datetime(2026, 12, 7, tzinfo=UTC)
    if isinstance(field, models.DecimalField):
        return Decimal("1.00")
    return None
