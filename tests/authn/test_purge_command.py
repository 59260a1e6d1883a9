"""`manage.py purge_expired` does the daily purges in its own process, without a
worker: expired idempotency keys, challenges, dead refresh tokens, stale lockouts."""

import io
import uuid
from datetime import timedelta

from django.core.management import call_command
from django.utils import timezone

from authn.models import AuthChallenge, RefreshToken
from bankapi.models import Customer, IdempotencyRecord
from tests.support.factories import UserFactory


def _idempotency_record(customer: Customer, created_at) -> IdempotencyRecord:
    record = IdempotencyRecord.objects.create(
        program=customer.program,
        sandbox=customer.sandbox,
        owner_kind=IdempotencyRecord.OwnerKind.CUSTOMER,
        owner_id=customer.id,
        operation="payments.create",
        key=uuid.uuid4(),
        fingerprint={"amount": "1.00"},
        claimed_at=created_at,
    )
    IdempotencyRecord.objects.filter(id=record.id).update(created_at=created_at)
    return record


def test_the_command_purges_what_beat_purges_and_reports_totals(consumer_program):
    customer = Customer.objects.create(program=consumer_program, sandbox=True, name="Purge Customer")
    person = UserFactory(program_id=consumer_program.id)
    now = timezone.now()
    old_key = _idempotency_record(customer, now - timedelta(days=8))
    recent_key = _idempotency_record(customer, now - timedelta(days=1))
    AuthChallenge.objects.create(
        user=person, kind="SOFTWARE_TOKEN_MFA", token_hash="expired", expires_at=now - timedelta(seconds=1)
    )
    live = AuthChallenge.objects.create(
        user=person, kind="SOFTWARE_TOKEN_MFA", token_hash="live", expires_at=now + timedelta(minutes=4)
    )
    RefreshToken.objects.create(
        user=person, family=uuid.uuid4(), token_hash="dead", expires_at=now - timedelta(seconds=1)
    )
    out = io.StringIO()

    call_command("purge_expired", stdout=out)

    output = out.getvalue()
    assert "Purges: 100%" in output and "2/2" in output
    assert "idempotencyKeys: 1 deleted" in output
    assert "challenges: 1 deleted" in output and "refreshTokens: 1 deleted" in output
    assert "Purged 3 record(s)." in output
    assert not IdempotencyRecord.objects.filter(id=old_key.id).exists()
    assert IdempotencyRecord.objects.filter(id=recent_key.id).exists()
    assert list(AuthChallenge.objects.filter(user=person)) == [live]
    assert not RefreshToken.objects.filter(user=person).exists()
