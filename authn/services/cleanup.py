"""Housekeeping for the daily beat task: forget what can no longer be used."""

from django.db.models import Q
from django.utils import timezone

from authn.models import AuthChallenge, RefreshToken
from authn.services.throttle import throttle_purge


def auth_records_purge() -> dict[str, int]:
    """Delete expired sessions, dead refresh tokens and stale lockout counters.

    Rotated refresh tokens are kept until they expire: presenting one again is how
    a stolen copy is detected. Revoked ones can go, since a missing token is
    refused just as a revoked one is.
    """
    now = timezone.now()
    return {
        "challenges": AuthChallenge.objects.filter(expires_at__lte=now).delete()[0],
        "refreshTokens": RefreshToken.objects.filter(
            Q(expires_at__lte=now) | Q(revoked_at__isnull=False)
        ).delete()[0],
        "throttles": throttle_purge(now),
    }
