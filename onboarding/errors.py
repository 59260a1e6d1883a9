"""The codes only onboarding answers, registered with their statuses when the
app is ready (see `bankapi.errors`)."""

from bankapi.errors import DomainErrorCode


class OnboardingErrorCode(DomainErrorCode):
    # The identity provider's web token is for another provider than the application's.
    WEB_TOKEN_PROVIDER_MISMATCH = "WEB_TOKEN_PROVIDER_MISMATCH"


STATUSES: dict[DomainErrorCode, int] = {OnboardingErrorCode.WEB_TOKEN_PROVIDER_MISMATCH: 409}
