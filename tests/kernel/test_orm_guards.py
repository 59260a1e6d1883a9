"""The kernel's two ways around the ORM refuse what they cannot do, at once:
`insert_rows` a model whose save() does more than write its columns, and
`Account.save` a change to the fields only the ledger writes."""

from decimal import Decimal

import pytest
from django.db import models
from django.db.models import signals
from django.db.models.functions import Now
from django.test.utils import isolate_apps

from bankapi.models import Account, Customer
from bankapi.rows import insert_rows
from events.models import Event
from payments.ledger import ledger_fund_account
from tests.support.factories import funded_account


def an_event(customer: Customer) -> Event:
    return Event(
        program_id=customer.program_id,
        sandbox=True,
        type="payment_request.accepted",
        resource_type="payment_request",
        resource_id="r-1",
        data={},
    )


@pytest.mark.parametrize("signal", [signals.pre_save, signals.post_save], ids=["pre_save", "post_save"])
def test_insert_rows_refuses_a_model_with_save_receivers_and_writes_nothing(customer, signal):
    def receiver(**kwargs):
        raise AssertionError("never sent")

    signal.connect(receiver, sender=Event, weak=False, dispatch_uid="test-insert-rows")
    try:
        with pytest.raises(TypeError, match="save signals"):
            insert_rows([an_event(customer)])
    finally:
        signal.disconnect(sender=Event, dispatch_uid="test-insert-rows")

    assert not Event.objects.filter(resource_id="r-1").exists()


def test_insert_rows_still_inserts_a_plain_model(customer):
    event = an_event(customer)

    insert_rows([event])

    assert Event.objects.get(id=event.id).resource_id == "r-1"


@isolate_apps("bankapi")
def test_insert_rows_refuses_fields_the_database_fills_in():
    class Stamped(models.Model):
        created = models.DateTimeField(db_default=Now())

        class Meta:
            app_label = "bankapi"

    class Doubled(models.Model):
        value = models.IntegerField()
        twice = models.GeneratedField(
            expression=models.F("value") * 2, output_field=models.IntegerField(), db_persist=True
        )

        class Meta:
            app_label = "bankapi"

    with pytest.raises(TypeError, match=r"Stamped\.created"):
        insert_rows([Stamped()])
    with pytest.raises(TypeError, match=r"Doubled\.twice"):
        insert_rows([Doubled(value=2)])


def test_insert_rows_refuses_a_saved_row_or_mixed_models(customer):
    saved = an_event(customer)
    saved.save()

    with pytest.raises(TypeError, match="unsaved rows of one model"):
        insert_rows([saved])
    with pytest.raises(TypeError, match="unsaved rows of one model"):
        insert_rows([an_event(customer), Account(customer=customer)])


def test_account_save_refuses_balance_in_update_fields(customer):
    account = funded_account(customer, "50.00")

    with pytest.raises(ValueError, match="does not write balance"):
        account.save(update_fields=["name", "balance"])

    assert Account.objects.get(id=account.id).balance == Decimal("50.00")


def test_account_save_refuses_a_balance_changed_in_memory(customer):
    account = Account.objects.get(id=funded_account(customer, "50.00").id)
    account.balance = Decimal("1000000.00")
    account.name = "Renamed"

    with pytest.raises(ValueError, match="does not write balance"):
        account.save()

    stored = Account.objects.get(id=account.id)
    assert (stored.balance, stored.name) == (Decimal("50.00"), "Test GBP")


def test_account_save_writes_other_fields_after_the_ledger_moved_the_balance(customer):
    # funded_account passes this object to the ledger, which shows it the new balance.
    account = funded_account(customer, "50.00")
    assert account.balance == Decimal("50.00")
    account.name = "Renamed"

    account.save()

    stored = Account.objects.get(id=account.id)
    assert (stored.balance, stored.name) == (Decimal("50.00"), "Renamed")


def test_account_save_after_refresh_takes_the_stored_balance(customer):
    account = Account.objects.get(id=funded_account(customer, "50.00").id)
    ledger_fund_account(Account.objects.get(id=account.id), Decimal("20.00"), key="test-refresh")
    account.refresh_from_db()
    account.name = "Renamed"

    account.save()

    stored = Account.objects.get(id=account.id)
    assert (stored.balance, stored.name) == (Decimal("70.00"), "Renamed")
