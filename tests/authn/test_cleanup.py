"""The daily beat task forgets sessions, refresh tokens and lockout counters that
can no longer matter, and keeps those that can."""

import uuid
from datetime import timedelta

from celery.schedules import crontab
from django.conf import settings
from django.utils import timezone

from authn.models import AuthChallenge, LoginThrottle, RefreshToken
from authn.tasks import purge_auth_records
from tests.support.factories import UserFactory


def test_purge_keeps_what_can_still_be_used(consumer_program):
    program = str(consumer_program.id)
    person = UserFactory(program_id=program)
    now = timezone.now()

    def challenge(name: str, expires_at):
        return AuthChallenge.objects.create(
            user=person, kind="SOFTWARE_TOKEN_MFA", token_hash=name, expires_at=expires_at
        )

    def refresh(name: str, **fields):
        fields.setdefault("expires_at", now + timedelta(days=1))
        return RefreshToken.objects.create(user=person, family=uuid.uuid4(), token_hash=name, **fields)

    expired_challenge = challenge("expired", now - timedelta(seconds=1))
    live_challenge = challenge("live", now + timedelta(minutes=4))
    expired_token = refresh("expired", expires_at=now - timedelta(seconds=1))
    revoked_token = refresh("revoked", revoked_at=now)
    rotated_token = refresh("rotated", rotated_at=now)
    live_token = refresh("live")
    stale = LoginThrottle.objects.create(
        program_id=program, email="stale@x", window_started_at=now - timedelta(hours=1), failures=3
    )
    locked = LoginThrottle.objects.create(
        program_id=program,
        email="locked@x",
        window_started_at=now - timedelta(minutes=20),
        failures=5,
        locked_until=now + timedelta(minutes=5),
    )
    counting = LoginThrottle.objects.create(
        program_id=program, email="counting@x", window_started_at=now, failures=2
    )

    result = purge_auth_records.delay().get()

    assert result == {"challenges": 1, "refreshTokens": 2, "throttles": 1}
    assert not AuthChallenge.objects.filter(id=expired_challenge.id).exists()
    assert AuthChallenge.objects.filter(id=live_challenge.id).exists()
    assert set(RefreshToken.objects.filter(user=person).values_list("id", flat=True)) == {
        rotated_token.id,
        live_token.id,
    }
    assert not RefreshToken.objects.filter(id__in=[expired_token.id, revoked_token.id]).exists()
    remaining = set(LoginThrottle.objects.filter(program_id=program).values_list("id", flat=True))
    assert stale.id not in remaining and {locked.id, counting.id} <= remaining


def test_the_purge_runs_daily_on_beat():
    entry = next(
        entry for entry in settings.CELERY_BEAT_SCHEDULE.values() if entry["task"] == purge_auth_records.name
    )
    assert isinstance(entry["schedule"], crontab)
    assert entry["schedule"].hour == {3} and entry["schedule"].minute == {30}
