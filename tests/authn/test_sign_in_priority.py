"""Sign-ins waiting for a password-check slot are served by their address's recent
failures, fewest first, so a flood of failed sign-ins from many addresses cannot
shut real users out.

Each story holds the process's slots from other threads (as the server's other
requests would), sends sign-ins through the real login route from threads of
their own, each from its own address, and releases the slots one at a time. The
slots' wait is long, so who is served and who is refused is decided by rank
alone, never by a timer.
"""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from authn.models import LoginThrottle
from authn.services import password_checks
from authn.services.password_checks import password_check_slot
from tests.authn.helpers import assert_error, auth_post, challenge_of
from tests.conftest import requires_postgres
from tests.support.factories_authn import Person
from tests.support.hashers import FastArgon2PasswordHasher

WRONG = "not the password 42"


class Holder:
    """One slot held by a thread of its own until `release()`."""

    def __init__(self) -> None:
        self._taken, self._release = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._hold, daemon=True)
        self._thread.start()
        assert self._taken.wait(5)

    def _hold(self) -> None:
        with password_check_slot():
            self._taken.set()
            self._release.wait()

    def release(self) -> None:
        self._release.set()
        self._thread.join()


class SignIn:
    """One login from `address`, sent from a thread of its own."""

    def __init__(self, person: Person, address: str, password: str | None = None) -> None:
        self.response = None
        self.answered_at = 0.0
        self.done = threading.Event()
        body = {"email": person.email, "password": password or person.password}

        def send() -> None:
            try:
                self.response = auth_post(
                    APIClient(), "login", body, program=person.program_id, REMOTE_ADDR=address
                )
            finally:
                # A finished thread's connection must hold no lock (SQLite's
                # shared cache locks whole tables).
                connection.close()
                self.answered_at = time.monotonic()
                self.done.set()

        self._thread = threading.Thread(target=send, daemon=True)
        self._thread.start()

    def answered(self, timeout: float = 10) -> bool:
        return self.done.wait(timeout)

    def join(self):
        self._thread.join(30)
        assert self.response is not None, "the sign-in did not answer"
        return self.response


def waiting(count: int) -> None:
    """Until `count` sign-ins wait for a slot."""
    gate = password_checks.current_gate()
    deadline = time.monotonic() + 10
    while len(gate.waiters) != count:
        assert time.monotonic() < deadline, f"{len(gate.waiters)} waiting, not {count}"
        time.sleep(0.005)


def with_failures(address: str, failures: int, refusals: int = 0) -> str:
    """The address, with `failures` failed sign-ins (and `refusals` uncounted
    refusals) in its current window."""
    LoginThrottle.objects.create(
        factor=LoginThrottle.Factor.CLIENT,
        email=address,
        failures=failures,
        refusals=refusals,
        window_started_at=timezone.now() - timedelta(minutes=1),
    )
    return address


def client_failures(address: str) -> int:
    row = LoginThrottle.objects.filter(factor=LoginThrottle.Factor.CLIENT, email=address).first()
    return 0 if row is None else row.failures


def assert_refused_for_want_of_a_slot(response) -> None:
    body = assert_error(response, 429, "TOO_MANY_REQUESTS")
    assert response["Retry-After"] == "1" and body["retryable"] is True


@pytest.fixture(autouse=True)
def _one_long_wait(settings):
    settings.PASSWORD_CHECKS_IN_FLIGHT = 1
    settings.PASSWORD_CHECK_WAIT_SECONDS = 30
    settings.PASSWORD_CHECK_CLEAN_WAIT_SECONDS = 30
    # As many waiters as slots: a full queue sheds its worst waiter.
    settings.PASSWORD_CHECK_WAITERS = 1


@pytest.mark.django_db(transaction=True)
def test_a_real_user_arriving_behind_a_waiting_flooder_takes_its_place(totp_person):
    real_user, flooder = totp_person, with_failures("198.51.100.7", 4)
    holder = Holder()

    flood = SignIn(real_user, flooder, WRONG)
    waiting(1)
    user = SignIn(real_user, "198.51.100.20")
    flood_refused_while_the_slot_is_held = flood.answered()
    user_waits = not user.answered(0.2)
    holder.release()

    assert flood_refused_while_the_slot_is_held and user_waits
    assert_refused_for_want_of_a_slot(flood.join())
    challenge_of(user.join(), "SOFTWARE_TOKEN_MFA")
    assert client_failures(flooder) == 5, "the refusal counts as a failure of its address"


@pytest.mark.django_db(transaction=True)
def test_a_flooder_arriving_while_a_real_user_waits_is_refused_at_once(totp_person):
    real_user, flooder = totp_person, with_failures("198.51.100.8", 1)
    holder = Holder()

    user = SignIn(real_user, "198.51.100.21")
    waiting(1)
    flood = SignIn(real_user, flooder, WRONG)
    flood_refused_while_the_slot_is_held = flood.answered()
    holder.release()

    assert flood_refused_while_the_slot_is_held
    assert_refused_for_want_of_a_slot(flood.join())
    challenge_of(user.join(), "SOFTWARE_TOKEN_MFA")
    assert client_failures(flooder) == 2


# Two sign-ins run at once here (the one served, and the next it hands its slot
# to): on SQLite their writes meet the shared cache's table lock.
@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_waiting_sign_ins_are_served_fewest_failures_first_whatever_their_arrival(
    totp_person, other_totp_person, settings, monkeypatch
):
    settings.PASSWORD_CHECKS_IN_FLIGHT = 2
    settings.PASSWORD_CHECK_WAITERS = 2
    # Whose password is checked, in order: a check runs only in a slot, so this
    # is the order the slots were given (answer times race on a loaded host).
    checked = []
    real_verify = FastArgon2PasswordHasher.verify

    def verify(hasher, password, encoded):
        checked.append(encoded)
        return real_verify(hasher, password, encoded)

    monkeypatch.setattr(FastArgon2PasswordHasher, "verify", verify)
    holders = [Holder(), Holder()]
    most, none, some = with_failures("198.51.100.9", 6), "198.51.100.22", with_failures("198.51.100.10", 2)

    worst = SignIn(totp_person, most)
    waiting(1)
    middle = SignIn(other_totp_person, some)
    waiting(2)
    best = SignIn(totp_person, none)
    worst_refused_when_the_queue_overflows = worst.answered()
    waiting(2)
    # One slot frees: the best waiter takes it, and hands it on to the next when done.
    holders[0].release()
    best_response, middle_response = best.join(), middle.join()
    holders[1].release()

    assert worst_refused_when_the_queue_overflows
    assert_refused_for_want_of_a_slot(worst.join())
    assert checked == [totp_person.user.password, other_totp_person.user.password]
    challenge_of(best_response, "SOFTWARE_TOKEN_MFA")
    challenge_of(middle_response, "SOFTWARE_TOKEN_MFA")
    assert client_failures(most) == 7


@pytest.mark.django_db(transaction=True)
def test_among_addresses_with_as_many_failures_the_first_to_wait_is_served_first(totp_person):
    """The newcomer that ranks no better than the waiter is the one refused."""
    holder = Holder()

    first = SignIn(totp_person, with_failures("198.51.100.23", 1))
    waiting(1)
    second = SignIn(totp_person, with_failures("198.51.100.24", 1))
    second_refused = second.answered()
    holder.release()

    assert second_refused
    assert_refused_for_want_of_a_slot(second.join())
    challenge_of(first.join(), "SOFTWARE_TOKEN_MFA")
    assert client_failures("198.51.100.24") == 2


@pytest.mark.django_db(transaction=True)
def test_with_every_waiter_an_address_without_failures_the_newcomer_is_refused_uncounted(totp_person):
    """No waiter can be shed for it; its refusal counts against nothing."""
    holder = Holder()

    first = SignIn(totp_person, "198.51.100.25")
    waiting(1)
    second = SignIn(totp_person, "198.51.100.26")
    second_refused = second.answered()
    holder.release()

    assert second_refused
    assert_refused_for_want_of_a_slot(second.join())
    challenge_of(first.join(), "SOFTWARE_TOKEN_MFA")
    assert client_failures("198.51.100.26") == 0


@pytest.mark.django_db(transaction=True)
def test_an_address_never_refused_takes_the_place_of_one_refused_before(totp_person):
    """While a flood's addresses have no failure yet, its sign-ins are refused
    uncounted; each refusal ranks its address behind addresses never refused, so
    they cannot keep the queue from real users. A success forgets the refusals."""
    holder = Holder()
    refused_before = with_failures("198.51.100.27", 0, refusals=1)

    earlier = SignIn(totp_person, refused_before)
    waiting(1)
    fresh = SignIn(totp_person, "198.51.100.28")
    earlier_refused = earlier.answered()
    holder.release()

    assert earlier_refused
    assert_refused_for_want_of_a_slot(earlier.join())
    challenge_of(fresh.join(), "SOFTWARE_TOKEN_MFA")
    row = LoginThrottle.objects.get(factor=LoginThrottle.Factor.CLIENT, email=refused_before)
    assert (row.failures, row.refusals) == (0, 2), "no failure, one more refusal"
    assert client_failures("198.51.100.28") == 0


# Two sign-ins run at once here too (the user, and the flooder it hands the slot to).
@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_no_more_sign_ins_from_addresses_with_failures_wait_than_there_are_slots(totp_person, settings):
    """However many may wait in all, a flood's sign-ins hold no more threads than
    there are slots: the worse of two is refused at once (and counted)."""
    settings.PASSWORD_CHECK_WAITERS = 8
    holder = Holder()

    flooder = SignIn(totp_person, with_failures("198.51.100.29", 1), WRONG)
    waiting(1)
    user = SignIn(totp_person, "198.51.100.30")
    waiting(2)
    worse = SignIn(totp_person, with_failures("198.51.100.31", 3), WRONG)
    worse_refused_at_once = worse.answered()
    holder.release()

    assert worse_refused_at_once
    assert_refused_for_want_of_a_slot(worse.join())
    assert client_failures("198.51.100.31") == 4
    challenge_of(user.join(), "SOFTWARE_TOKEN_MFA")
    assert flooder.join().status_code == 401
