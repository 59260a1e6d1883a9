"""`manage.py resume_batches` finishes stalled batches and draft verifications in
its own process, without a worker, as the beat sweep would have them re-run."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from bankapi.models import Account
from batches.models import Batch, Draft
from batches.rules import sent_payment_from_wire
from payments.models import PaymentRequest
from tests.batches.conftest import payment
from tests.batches.helpers import batch_submitted


def _resume(*args) -> str:
    out = io.StringIO()
    call_command("resume_batches", *args, stdout=out)
    return out.getvalue()


def test_stalled_work_is_finished_by_the_command_and_only_once(custodian_user, custodian_accounts):
    payer = Account.objects.get(id=custodian_accounts[0]["accountId"])
    batch = batch_submitted(custodian_user, [payment(payer, "1.00"), payment(payer, "2.00")])
    draft = Draft.objects.create(
        program_id=custodian_user.program_id,
        custodian_id=custodian_user.custodian_id,
        payments=[sent_payment_from_wire(payment(payer, "1.00")).to_stored()],
        payments_count=1,
        expires_at=timezone.now() + timedelta(hours=1),
    )
    fresh = _resume()
    old = timezone.now() - timedelta(minutes=5)
    Batch.objects.filter(id=batch.id).update(progressed_at=old)
    Draft.objects.filter(id=draft.id).update(written_at=old)

    output = _resume()
    again = _resume()

    assert "Resumed 0 draft verification(s) and 0 batch(es)." in fresh
    assert "Stalled work: 100%" in output and "2/2" in output
    assert "Resumed 1 draft verification(s) and 1 batch(es)." in output
    assert Batch.objects.get(id=batch.id).status == "COMPLETED"
    assert PaymentRequest.objects.filter(batch_item__batch=batch).count() == 2
    assert Draft.objects.get(id=draft.id).valid_payments[0]["index"] == 0
    assert "Resumed 0 draft verification(s) and 0 batch(es)." in again


def test_a_negative_age_is_refused(db):
    with pytest.raises(CommandError, match="must not be negative"):
        _resume("--older-than", "-1")
