"""Signed, expiring URLs of this service that need no bearer token.

- UBO verification links (e-mailed to a UBO): check signature, expiry and the
  UBO's link generation (a reset kills earlier links), then redirect to the
  provider's hosted flow.
- The sandbox provider's hosted flow page.
- Local document URLs (presign on the embedded default): an HMAC over method,
  key, Content-Type and expiry, like S3's presigned URLs.

Every check that fails answers 403; a link never says which check failed.
"""

import time
from dataclasses import dataclass

from django.core import signing
from django.utils.crypto import constant_time_compare, salted_hmac

from onboarding.models import Ubo

UBO_LINK_SALT = "onboarding.ubo-verification-link"
SANDBOX_FLOW_SALT = "onboarding.sandbox-ubo-flow"
DOCUMENT_URL_SALT = "onboarding.local-document-url"


class LinkRefused(Exception):
    """The link is tampered with, expired or no longer valid."""


@dataclass(frozen=True)
class UboLink:
    ubo_id: str
    generation: int
    success_url: str
    reject_url: str
    expires_at: int


def now_seconds() -> int:
    return int(time.time())


def _dump(link: UboLink, salt: str) -> str:
    payload = {
        "u": link.ubo_id,
        "g": link.generation,
        "s": link.success_url,
        "r": link.reject_url,
        "e": link.expires_at,
    }
    return signing.dumps(payload, salt=salt, compress=True)


def _load(token: str, salt: str) -> UboLink:
    try:
        payload = signing.loads(token, salt=salt)
        link = UboLink(
            ubo_id=str(payload["u"]),
            generation=int(payload["g"]),
            success_url=str(payload["s"]),
            reject_url=str(payload["r"]),
            expires_at=int(payload["e"]),
        )
    except (signing.BadSignature, KeyError, TypeError, ValueError) as exc:
        raise LinkRefused("bad signature") from exc
    if link.expires_at <= now_seconds():
        raise LinkRefused("expired")
    return link


def ubo_link_token(ubo: Ubo, *, success_url: str, reject_url: str, expires_at: int) -> str:
    link = UboLink(str(ubo.id), ubo.link_generation, success_url, reject_url, expires_at)
    return _dump(link, UBO_LINK_SALT)


def ubo_link_open(token: str) -> UboLink:
    return _load(token, UBO_LINK_SALT)


def sandbox_flow_token(ubo: Ubo, *, success_url: str, reject_url: str, expires_at: int) -> str:
    link = UboLink(str(ubo.id), ubo.link_generation, success_url, reject_url, expires_at)
    return _dump(link, SANDBOX_FLOW_SALT)


def sandbox_flow_open(token: str) -> UboLink:
    return _load(token, SANDBOX_FLOW_SALT)


def _document_signature(method: str, key: str, content_type: str, expires_at: int) -> str:
    message = f"{method}\n{key}\n{content_type}\n{expires_at}"
    return salted_hmac(DOCUMENT_URL_SALT, message, algorithm="sha256").hexdigest()


def document_url_signature(*, method: str, key: str, content_type: str, expires_at: int) -> str:
    return _document_signature(method, key, content_type, expires_at)


def document_url_check(*, method: str, key: str, content_type: str, expires: str, signature: str) -> None:
    """Raise LinkRefused unless the URL was signed for this method, key and type and is alive."""
    if not expires.isascii() or not expires.isdigit():
        raise LinkRefused("bad expiry")
    expires_at = int(expires)
    expected = _document_signature(method, key, content_type, expires_at)
    if not constant_time_compare(expected, signature):
        raise LinkRefused("bad signature")
    if expires_at <= now_seconds():
        raise LinkRefused("expired")
