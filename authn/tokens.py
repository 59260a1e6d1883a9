"""Access and id tokens (RS256 JWTs) and opaque refresh tokens.

Verification pins the algorithm to RS256 and looks the key up by `kid`, so a
token signed with `none` or HS256 (for instance with the public key as an HMAC
secret) is refused. A token is also refused once its `ver` is older than the
user's token generation: that is how global logout ends every session at once
(`tokens_revoke_all`, which also expires the user's unused sign-in sessions).
"""

import hashlib
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import jwt
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from authn.errors import AuthErrorCode
from authn.keys import signing_key, verification_keys
from authn.models import AuthChallenge, RefreshToken, User
from bankapi.errors import ApiError, ErrorCode

ACCESS = "access"
ID = "id"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def program_claim(user: User) -> str | None:
    return str(user.program_id) if user.program_id else None


def _claims(user: User, token_use: str, now) -> dict:
    claims = {
        "iss": settings.JWT_ISSUER,
        "sub": str(user.id),
        "token_use": token_use,
        "program": program_claim(user),
        "sandbox": user.sandbox,
        "role": user.role,
        "ver": user.token_version,
        "jti": str(uuid.uuid4()),
        "iat": int(now.timestamp()),
        "exp": int(now.timestamp()) + settings.JWT_LIFETIME_SECONDS,
    }
    if token_use == ID:
        claims["email"] = user.email
    return claims


def encode_token(user: User, token_use: str) -> str:
    kid, key = signing_key()
    return jwt.encode(_claims(user, token_use, timezone.now()), key, algorithm="RS256", headers={"kid": kid})


def _unauthorized(message: str = "Invalid or expired token") -> ApiError:
    return ApiError(ErrorCode.UNAUTHORIZED, message)


# Tokens already verified in this process: digest -> (kid, key, issuer, claims).
# A token is immutable and so is its signature's verdict under a given key, so a
# client's next request with the same token skips the RSA check and the parsing
# (a quarter of a payment's Python). Every hit still checks that the token's key
# is still honoured, the issuer unchanged and the token unexpired; revocation
# and the user's state are checked on every request anyway (`user_for_claims`).
# Bounded: emptied when full.
_VERIFIED: dict[bytes, tuple[str, object, str, dict]] = {}
_VERIFIED_MAX = 4096


def decode_token(token: str) -> dict:
    """Verify signature, algorithm, issuer and expiry; return the claims."""
    digest = hashlib.sha256(token.encode()).digest()
    known = _VERIFIED.get(digest)
    if known is not None:
        kid, key, issuer, claims = known
        if (
            verification_keys().get(kid) is key
            and issuer == settings.JWT_ISSUER
            and datetime.now(UTC).timestamp() < claims["exp"]
        ):
            return dict(claims)
        _VERIFIED.pop(digest, None)
    kid, key, claims = _decode_token(token)
    if len(_VERIFIED) >= _VERIFIED_MAX:
        _VERIFIED.clear()
    _VERIFIED[digest] = (kid, key, settings.JWT_ISSUER, dict(claims))
    return claims


def _decode_token(token: str) -> tuple[str, object, dict]:
    """The token's key id, its key and its verified claims."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise _unauthorized() from exc
    kid = header.get("kid", "")
    key = verification_keys().get(kid)
    if key is None or header.get("alg") != "RS256":
        raise _unauthorized()
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=["RS256"],
            issuer=settings.JWT_ISSUER,
            options={"require": ["exp", "iat", "sub", "token_use", "ver", "role"]},
        )
    except jwt.PyJWTError as exc:
        raise _unauthorized() from exc
    return kid, key, claims


UserLoader = Callable[[uuid.UUID], "User | None"]


def user_for_claims(claims: dict, load: UserLoader | None = None) -> User:
    """The live user a verified token names; revoked or deactivated users fail, and so
    do tokens whose program, role or sandbox claim no longer matches the user.

    `load` reads the active user of an id, with its customer and program, and may
    read more in the same query (a route's account: see `bankapi.http.api`); None if
    there is no such active user."""
    try:
        if load is None:
            # The customer and the program come along: every route then resolves the
            # caller's scope without asking the database again.
            user = User.objects.select_related("customer", "program").get(id=claims["sub"], is_active=True)
        else:
            loaded = load(uuid.UUID(str(claims["sub"])))
            if loaded is None:
                raise User.DoesNotExist
            user = loaded
    except (User.DoesNotExist, ValueError, TypeError) as exc:
        raise _unauthorized() from exc
    if claims.get("ver") != user.token_version:
        raise _unauthorized("Token has been revoked")
    if program_claim(user) != claims.get("program"):
        raise _unauthorized()
    if claims.get("role") != user.role or claims.get("sandbox") is not user.sandbox:
        # An admin changed what the user acts as, or in which environment: a token
        # issued before would keep the old scope until it expires.
        raise _unauthorized("Token no longer matches the user's role or environment; sign in again")
    return user


@dataclass
class TokenSet:
    access_token: str
    id_token: str
    refresh_token: str
    expires_in: int


def _new_refresh_token(user: User, family: uuid.UUID) -> str:
    token = secrets.token_urlsafe(48)
    RefreshToken.objects.create(
        user=user,
        family=family,
        token_hash=hash_token(token),
        expires_at=timezone.now() + timedelta(days=settings.REFRESH_TOKEN_LIFETIME_DAYS),
    )
    return token


def tokens_issue(user: User, *, family: uuid.UUID | None = None) -> TokenSet:
    """Sign the user in: a fresh access, id and refresh token."""
    return TokenSet(
        access_token=encode_token(user, ACCESS),
        id_token=encode_token(user, ID),
        refresh_token=_new_refresh_token(user, family or uuid.uuid4()),
        expires_in=settings.JWT_LIFETIME_SECONDS,
    )


def tokens_refresh(refresh_token: str, *, program_id: str | None) -> tuple[User, TokenSet]:
    """Rotate a refresh token. Reuse of a rotated token revokes its whole family."""
    invalid = ApiError(AuthErrorCode.INVALID_CREDENTIALS, "Invalid refresh token", retryable=False)
    now = timezone.now()
    with transaction.atomic():
        record = (
            RefreshToken.objects.select_for_update()
            .select_related("user")
            .filter(token_hash=hash_token(refresh_token))
            .first()
        )
        if record is None or record.revoked_at or record.expires_at <= now:
            raise invalid
        user = record.user
        if not user.is_active or program_claim(user) != program_id:
            raise invalid
        if record.rotated_at is not None:
            # A rotated token presented again: someone holds a copy. End the family.
            RefreshToken.objects.filter(family=record.family, revoked_at__isnull=True).update(revoked_at=now)
            reuse_detected = True
        else:
            record.rotated_at = now
            record.save(update_fields=["rotated_at"])
            reuse_detected = False
    if reuse_detected:
        raise invalid
    return user, tokens_issue(user, family=record.family)


def tokens_revoke_all(user: User) -> None:
    """Global logout: every token issued so far, on every device, stops working.

    So does every sign-in session (challenge) not yet used: a session opened with
    the old password, or before the logout, would otherwise still lead to tokens
    for its five minutes. Callers that answer a new challenge (password change)
    must create it after calling this.
    """
    now = timezone.now()
    with transaction.atomic():
        User.objects.filter(id=user.id).update(token_version=F("token_version") + 1)
        RefreshToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=now)
        AuthChallenge.objects.filter(user=user, used_at__isnull=True, expires_at__gt=now).update(
            expires_at=now
        )
