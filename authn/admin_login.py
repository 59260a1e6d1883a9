"""Admin sign-in for back-office staff (the site's `ADMIN_LOGIN_FORM`)."""

import pyotp
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import authenticate
from django.core.exceptions import ValidationError
from django.utils import timezone

from authn.services.password_checks import PasswordChecksBusy, password_check_slot
from authn.services.staff import staff_totp_enrol
from authn.services.throttle import client_address, sign_in_slot, throttle_attempt, throttle_clear
from authn.services.totp import totp_verify
from bankapi.errors import ApiError

ENROLMENT_SESSION_KEY = "admin_totp_enrolment"
TOTP_ISSUER = "Bank API back office"


class StaffLoginForm(AdminAuthenticationForm):
    """E-mail and password, then (when required) a TOTP code.

    Password attempts count towards the same lockout as API sign-ins (5 failures
    in 15 minutes lock the e-mail), counted before the password is checked. When
    no password-check slot frees in time, the page answers 429 and only the
    address's failures count it (they rank its next wait for a slot). A
    staff member without an authenticator gets one on first sign-in: after a
    right password the page shows a new secret, and the next sign-in with a code
    of it enrols it.
    """

    otp_code = forms.CharField(
        label="Authenticator code",
        required=False,
        max_length=6,
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric"}),
    )

    def __init__(self, request=None, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        self.enrolment: dict | None = None
        # Set when every password-check slot stayed taken: the page answers 429 (`BankAdminSite.login`).
        self.retry_after: str | None = None
        if not settings.ADMIN_REQUIRE_TOTP:
            del self.fields["otp_code"]

    def clean(self):
        email = (self.cleaned_data.get("username") or "").strip().lower()
        password = self.cleaned_data.get("password")
        if not email or password is None:
            return self.cleaned_data
        # A wait for a check slot is ranked and counted by address, as the API's sign-in.
        request = self.request
        slot = sign_in_slot(client_address(request)) if request is not None else password_check_slot()
        try:
            # The slot first: a sign-in refused for want of one was never tried, so not the e-mail's failure.
            with slot:
                throttle_attempt(None, email, timezone.now())
                self.user_cache = authenticate(self.request, username=email, password=password)
        except PasswordChecksBusy as error:
            self.retry_after = error.headers["Retry-After"]
            raise ValidationError(error.message, code="busy")
        except ApiError as error:
            raise ValidationError(error.message, code="locked")
        if self.user_cache is None:
            raise self.get_invalid_login_error()
        self.confirm_login_allowed(self.user_cache)
        if settings.ADMIN_REQUIRE_TOTP:
            self._second_factor(self.user_cache, self.cleaned_data.get("otp_code", ""))
        throttle_clear(None, email)
        return self.cleaned_data

    def _second_factor(self, user, code: str) -> None:
        if user.totp_confirmed:
            try:
                verified = bool(code) and totp_verify(user, code)
            except ApiError as error:
                raise ValidationError(error.message, code="locked")
            if not verified:
                raise ValidationError("Enter the current code of your authenticator app.", code="otp")
            return
        if self.request is None:
            # The secret being enrolled waits in the session; the admin always passes its request.
            raise ValidationError("Sign in through the admin page to set up an authenticator.", code="otp")
        session = self.request.session
        pending = session.get(ENROLMENT_SESSION_KEY)
        if not (pending and pending.get("user") == str(user.id)):
            pending = {"user": str(user.id), "secret": pyotp.random_base32()}
            session[ENROLMENT_SESSION_KEY] = pending
        if code and staff_totp_enrol(user=user, secret=pending["secret"], code=code):
            del session[ENROLMENT_SESSION_KEY]
            return
        self.enrolment = {
            "secret": pending["secret"],
            "uri": pyotp.TOTP(pending["secret"]).provisioning_uri(name=user.email, issuer_name=TOTP_ISSUER),
        }
        raise ValidationError(
            "Your account needs an authenticator app: add the secret below to it, "
            "then sign in again with its current code.",
            code="otp_enrol",
        )
