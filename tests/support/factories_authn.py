"""Users an authentication test signs in as, each with the secrets its client
holds (password, TOTP seed, PIN), made new for the test that asks:

    consumer = ProgramFactory()
    ada = person(consumer)                      # password and a confirmed TOTP
    login(api, ada.email, ada.password, ada.program_id)

`person` takes the user's fields: `must_change_password=True` for a user who
has a temporary password (NEW_PASSWORD_REQUIRED), `totp=False` for one with no
second factor yet (MFA_SETUP), `pin="123456"` for a step-up PIN.
"""

import secrets
from dataclasses import dataclass

import pyotp

from authn.models import User
from authn.services.stepup import step_up_pin_set
from bankapi.models import Program
from bankapi.roles import Role
from tests.support.factories import UserFactory


@dataclass
class Person:
    """A user and what its client knows: the password, the TOTP seed ("" if it has
    no TOTP), the step-up PIN ("" if none)."""

    user: User
    password: str
    totp_secret: str = ""
    pin: str = ""

    @property
    def email(self) -> str:
        return self.user.email

    @property
    def program_id(self) -> str | None:
        """The program's id as a client sends it (X-Program-Id), None for management."""
        return str(self.user.program_id) if self.user.program_id else None

    def refreshed(self) -> User:
        return User.objects.get(id=self.user.id)


def new_password() -> str:
    return "Test-" + secrets.token_urlsafe(15)


def person(
    program: Program | None,
    *,
    totp: bool = True,
    pin: str = "",
    role: str = Role.CUSTOMER,
    **fields,
) -> Person:
    """A user of `program` (None: management) with its own password; `totp` gives it
    a confirmed TOTP secret, `pin` a step-up PIN. A customer user gets a customer
    of its own."""
    password = new_password()
    secret = pyotp.random_base32() if totp else ""
    user = UserFactory(
        program_id=program.id if program else None,
        role=role,
        password=password,
        totp_secret=secret,
        totp_confirmed=totp,
        **fields,
    )
    if pin:
        step_up_pin_set(user=user, pin=pin)
    return Person(user=user, password=password, totp_secret=secret, pin=pin)


def person_with_temporary_password(program: Program) -> Person:
    """A customer user with a temporary password and no second factor: its sign-in
    asks for a new password first."""
    return person(program, totp=False, must_change_password=True)


def person_without_second_factor(program: Program) -> Person:
    """A customer user with a password and no second factor: its sign-in asks it to
    set one up (a TOTP secret or a passkey)."""
    return person(program, totp=False)


def management_person() -> Person:
    """A management user (no program) with a confirmed TOTP secret."""
    return person(None, role=Role.MANAGEMENT)
