"""Sign-in sessions: the opaque `session_token` of every challenge response.

A session is bound to one user and one challenge kind, lives five minutes and is
spent once. Steps that check a code or an assertion spend one of its
`MAX_ATTEMPTS` attempts before checking, so a session allows at most that many
guesses whatever the concurrency; a wrong guess leaves it usable (`retryable`)
until the last attempt is gone.

Call these outside `transaction.atomic`: a spent attempt must stay spent when
the step then fails and its error rolls the request back.
"""

import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import F, QuerySet
from django.utils import timezone

from authn.errors import AuthErrorCode
from authn.models import AuthChallenge, User
from authn.tokens import TokenSet, hash_token, tokens_issue
from bankapi.errors import ApiError, ErrorCode
from bankapi.models import Program
from bankapi.scope import parse_uuid

Kind = AuthChallenge.Kind

SESSION_LIFETIME = timedelta(minutes=5)
# Wrong codes (or assertions) one session tolerates; the fifth burns it.
MAX_ATTEMPTS = 5


class CredentialRejected(ApiError):
    """A password, code or assertion that did not verify: 401 INVALID_CREDENTIALS."""

    def __init__(self, message: str = "Invalid credentials", *, retryable: bool = False) -> None:
        super().__init__(AuthErrorCode.INVALID_CREDENTIALS, message, retryable=retryable)


def _session_rejected() -> CredentialRejected:
    return CredentialRejected("Invalid or expired session_token")


def program_resolve(raw: str | None) -> uuid.UUID | None:
    """The program an auth request names (`x-program-id` or `programId`).

    None when none is sent: the program-less (management) users. A malformed or
    unknown id is refused like wrong credentials.
    """
    if raw is None:
        return None
    program_id = parse_uuid(raw)
    if program_id is None or not Program.objects.filter(id=program_id).exists():
        raise CredentialRejected()
    return program_id


def user_in_program(user: User, program_id: uuid.UUID | None) -> None:
    """A user signs in only through its own program (management users: none)."""
    if user.program_id != program_id:
        raise CredentialRejected()


def challenge_create(user: User, kind: str, *, secret: bytes = b"", context: dict | None = None) -> str:
    """Open a session for the user's next step; return its token (only its hash is kept)."""
    token = secrets.token_urlsafe(32)
    AuthChallenge.objects.create(
        user=user,
        kind=kind,
        token_hash=hash_token(token),
        secret=secret,
        context=context or {},
        expires_at=timezone.now() + SESSION_LIFETIME,
    )
    return token


def _live(challenge_id: uuid.UUID) -> QuerySet[AuthChallenge]:
    return AuthChallenge.objects.filter(
        id=challenge_id,
        used_at__isnull=True,
        expires_at__gt=timezone.now(),
        attempts__lt=MAX_ATTEMPTS,
    )


def _find(token: str, kinds: Iterable[str], program_id: uuid.UUID | None) -> AuthChallenge:
    challenge = (
        AuthChallenge.objects.select_related("user")
        .filter(token_hash=hash_token(token), kind__in=kinds)
        .first()
    )
    if challenge is None or not challenge.user.is_active:
        raise _session_rejected()
    user_in_program(challenge.user, program_id)
    return challenge


def challenge_attempt(
    token: str,
    kinds: Iterable[str],
    program_id: uuid.UUID | None,
    *,
    user: User | None = None,
    context: dict | None = None,
) -> AuthChallenge:
    """Spend one attempt of a live session of one of `kinds`; return it with its user.

    The attempt is claimed by a conditional UPDATE before anything is checked, so
    requests racing with one session cannot test more than MAX_ATTEMPTS guesses.
    Finish with `challenge_consume` on success or `challenge_refusal` on failure.
    With `user` or `context`, a session of another user or bound to something
    else is refused before any attempt is spent: it is not the caller's to use.
    """
    challenge = _find(token, kinds, program_id)
    if user is not None and challenge.user_id != user.id:
        raise _session_rejected()
    if context is not None and any(challenge.context.get(key) != value for key, value in context.items()):
        raise _session_rejected()
    if not _live(challenge.id).update(attempts=F("attempts") + 1):
        raise _session_rejected()
    challenge.attempts += 1
    return challenge


def challenge_refusal(challenge: AuthChallenge, message: str) -> CredentialRejected:
    """The error for a wrong guess: retryable while the session has attempts left."""
    return CredentialRejected(message, retryable=challenge.attempts < MAX_ATTEMPTS)


def challenge_consume(challenge: AuthChallenge) -> None:
    """Spend the session. Of two requests that both verified, only one gets here first."""
    spent = AuthChallenge.objects.filter(
        id=challenge.id, used_at__isnull=True, expires_at__gt=timezone.now()
    ).update(used_at=timezone.now())
    if not spent:
        raise _session_rejected()


def challenge_take(token: str, kinds: Iterable[str], program_id: uuid.UUID | None) -> AuthChallenge:
    """Spend a session that needs no further proof (it opens the next step)."""
    challenge = _find(token, kinds, program_id)
    if not _live(challenge.id).update(used_at=timezone.now()):
        raise _session_rejected()
    return challenge


@dataclass(frozen=True)
class NextChallenge:
    """A sign-in step still to take: its kind, the session that takes it, and,
    for a passkey step, the WebAuthn request options to hand to the browser."""

    kind: str
    session_token: str
    options: dict[str, Any] | None = None


@dataclass(frozen=True)
class SignedIn:
    """The last step is met: the user's new tokens, and what the user has set up."""

    tokens: TokenSet
    has_passkey: bool
    has_mfa: bool

    @classmethod
    def of(cls, user: User, tokens: TokenSet) -> "SignedIn":
        return cls(tokens=tokens, has_passkey=user.has_passkey, has_mfa=user.has_mfa)


SignInStep = NextChallenge | SignedIn


def sign_in_complete(user: User) -> SignedIn:
    """The last challenge is met: sign the user in."""
    User.objects.filter(id=user.id).update(last_login=timezone.now())
    return SignedIn.of(user, tokens_issue(user))


def enrolling_user(
    *,
    program_id: uuid.UUID | None,
    session_token: str | None,
    kinds: list[str],
    bearer_user: User | None,
) -> tuple[User, bool]:
    """Who enrols a second factor: the holder of a setup session, or the id-token bearer.

    Returns the user and whether a session was spent (the enrolment then finishes
    a sign-in). Without either: 401 UNAUTHORIZED.
    """
    if session_token is not None:
        return challenge_take(session_token, kinds, program_id).user, True
    if bearer_user is None:
        raise ApiError(ErrorCode.UNAUTHORIZED, "Send a session_token or the id_token as bearer")
    user_in_program(bearer_user, program_id)
    return bearer_user, False
