"""The codes only authn answers, registered with their statuses when the app is
ready (see `bankapi.errors`)."""

from bankapi.errors import DomainErrorCode


class AuthErrorCode(DomainErrorCode):
    # A wrong password, code, PIN or passkey, or a spent or unknown session_token.
    INVALID_CREDENTIALS = "INVALID_CREDENTIALS"


STATUSES: dict[DomainErrorCode, int] = {AuthErrorCode.INVALID_CREDENTIALS: 401}
