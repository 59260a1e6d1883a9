"""The daily purge: a day after expiry an unsubmitted draft keeps its record and
loses its payload, and spent or expired initiate challenges are deleted; what can
still be used, or what a batch reads, stays whole."""

from datetime import timedelta

import pytest
from celery.schedules import crontab
from django.conf import settings
from django.utils import timezone

from authn.models import AuthChallenge
from batches.models import Draft, ScaChallenge
from batches.tasks import purge_expired_records
from bench.pain001 import Instruction, Tx, pain001, scan
from tests.batches.conftest import URL, payment, verify
from tests.batches.iso20022 import report, statuses, upload
from tests.batches.test_iso20022_round_trip import PAYEE_UK

pytestmark = pytest.mark.django_db


def _challenge(user, **fields) -> ScaChallenge:
    return ScaChallenge.objects.create(
        program_id=user.program_id,
        sandbox=user.sandbox,
        custodian_id=user.custodian_id,
        user=user,
        payments_hash="0" * 64,
        total_amount="1.00",
        currency="GBP",
        **fields,
    )


def _expired(draft_id: str, ago: timedelta) -> None:
    Draft.objects.filter(id=draft_id).update(expires_at=timezone.now() - ago)


def test_a_draft_expired_a_day_ago_keeps_its_record_and_loses_its_payload(
    api, custodian_auth, custodian_user, custodian_accounts
):
    first = custodian_accounts[0]
    old = verify(api, custodian_auth, [payment(first, "1.00", "Rent for Bob")])
    recent = verify(api, custodian_auth, [payment(first, "2.00")])
    live = verify(api, custodian_auth, [payment(first, "3.00")])
    _expired(old, timedelta(days=1, minutes=1))
    _expired(recent, timedelta(hours=23))

    result = purge_expired_records.delay().get()
    again = purge_expired_records.delay().get()

    assert result["draftPayloads"] == 1 and again["draftPayloads"] == 0
    purged = Draft.objects.get(id=old)
    assert (purged.payments, purged.valid_payments, purged.invalid_payments) == ([], None, None)
    assert "Rent for Bob" not in str(Draft.objects.filter(id=old).values().get())
    for kept in (recent, live):
        assert len(Draft.objects.get(id=kept).payments) == 1
    # Still listed and opened as an expired draft of one payment.
    shown = api.get(f"{URL}/{old}", **custodian_auth)
    assert shown.status_code == 200
    assert shown.json()["data"]["draft"]["status"] == "EXPIRED"
    assert shown.json()["data"]["draft"]["paymentsCount"] == 1
    listed = api.get(f"{URL}?drafts=true", **custodian_auth).json()["data"]["paymentsBatches"]
    assert old in {entry["id"] for entry in listed}
    # Its status report: refused as a whole, naming no payment it no longer holds.
    assert statuses(report(api, custodian_auth, old))["group"] == "RJCT"
    assert statuses(report(api, custodian_auth, old))["instructions"] == []


def test_a_file_drafts_instructions_go_with_its_payload(api, custodian_auth, custodian_accounts):
    first = custodian_accounts[0]
    file = pain001(
        [Instruction(scan(first["sortCode"], first["accountNumber"]), [Tx("E2E-1", "1.00", PAYEE_UK)])]
    )
    draft_id = upload(api, custodian_auth, file).json()["requestId"]
    assert Draft.objects.get(id=draft_id).instructions
    _expired(draft_id, timedelta(days=2))

    purge_expired_records.delay().get()

    draft = Draft.objects.get(id=draft_id)
    assert (draft.payments, draft.instructions, draft.message_id) == ([], None, draft.message_id)
    assert draft.message_id  # the record, and the MsgId a second upload is refused for, stay


def test_a_submitted_draft_keeps_everything_its_batch_reads(
    api, custodian_auth, custodian_user, custodian_accounts
):
    first = custodian_accounts[0]
    draft_id = verify(api, custodian_auth, [payment(first, "1.00")])
    Draft.objects.filter(id=draft_id).update(
        submitted_at=timezone.now(), expires_at=timezone.now() - timedelta(days=3)
    )

    assert purge_expired_records.delay().get()["draftPayloads"] == 0
    assert len(Draft.objects.get(id=draft_id).payments) == 1


def test_spent_and_expired_challenges_go_a_day_on_and_live_ones_stay(custodian_user):
    now = timezone.now()
    expired_long_ago = _challenge(custodian_user, expires_at=now - timedelta(days=1, seconds=1))
    spent_long_ago = _challenge(
        custodian_user, expires_at=now + timedelta(minutes=5), consumed_at=now - timedelta(days=2)
    )
    expired_today = _challenge(custodian_user, expires_at=now - timedelta(hours=2))
    live = _challenge(custodian_user, expires_at=now + timedelta(minutes=5))

    result = purge_expired_records.delay().get()

    assert result["challenges"] == 2
    remaining = set(ScaChallenge.objects.values_list("id", flat=True))
    assert {expired_today.id, live.id} <= remaining
    assert not remaining & {expired_long_ago.id, spent_long_ago.id}


def test_passkey_sessions_and_sign_in_challenges_are_purged_by_the_daily_auth_purge(custodian_user):
    """The batch and card step-up's passkey sessions are sign-in challenges: the
    daily auth purge deletes them once expired."""
    from authn.tasks import purge_auth_records

    session = AuthChallenge.objects.create(
        user=custodian_user,
        kind="STEP_UP_PASSKEY",
        token_hash="s" * 64,
        expires_at=timezone.now() - timedelta(days=1),
    )

    purge_auth_records.delay().get()

    assert not AuthChallenge.objects.filter(id=session.id).exists()


def test_the_purge_runs_daily_on_beat():
    entry = next(
        entry
        for entry in settings.CELERY_BEAT_SCHEDULE.values()
        if entry["task"] == purge_expired_records.name
    )
    assert isinstance(entry["schedule"], crontab)
    assert entry["schedule"].hour == {3} and entry["schedule"].minute == {45}


def test_the_operator_command_purges_in_its_own_process(custodian_user):
    import io

    from django.core.management import call_command

    _challenge(custodian_user, expires_at=timezone.now() - timedelta(days=2))
    out = io.StringIO()

    call_command("purge_batch_records", stdout=out)

    assert "challenges: 1 deleted" in out.getvalue() and "draftPayloads: 0 emptied" in out.getvalue()
    assert not ScaChallenge.objects.exists()
