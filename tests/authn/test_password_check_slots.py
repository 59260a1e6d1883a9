"""Only a bounded number of password and PIN checks run at once per process.

Argon2 is slow on purpose. A sign-in that cannot get a check slot within its
wait (PASSWORD_CHECK_CLEAN_WAIT_SECONDS from an address with no recent failure,
PASSWORD_CHECK_WAIT_SECONDS from one with failures) answers 429
TOO_MANY_REQUESTS with Retry-After instead of queueing behind a flood; that
refusal counts in no lockout (the password was never tried), and as a failure
of its address only when the address already had failures. Slots are held here
by another thread, as concurrent requests of the same server process would hold
them. The order in which waiting sign-ins are served: test_sign_in_priority.py;
sign-ins sent at once: test_sign_ins_at_once.py.
"""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from authn.models import LoginThrottle
from authn.services import password_checks
from authn.services.password_checks import PasswordChecksBusy, password_check_slot
from tests.authn.helpers import assert_error, auth_post, challenge_of, user
from tests.authn.test_change_password import NEW_PASSWORD, change
from tests.authn.test_stepup import confirm, refused, second_factor_failures
from tests.backoffice.conftest import STAFF_PASSWORD, staff_user
from tests.support.factories_authn import Person


@contextmanager
def slots_taken(count: int) -> Iterator[None]:
    """`count` password-check slots held by other threads until the block ends."""
    taken, release = threading.Barrier(count + 1), threading.Event()

    def hold() -> None:
        with password_check_slot():
            taken.wait()
            release.wait()

    holders = [threading.Thread(target=hold) for _ in range(count)]
    for holder in holders:
        holder.start()
    taken.wait()
    try:
        yield
    finally:
        release.set()
        for holder in holders:
            holder.join()


@pytest.fixture(autouse=True)
def _short_wait(settings):
    settings.PASSWORD_CHECKS_IN_FLIGHT = 2
    settings.PASSWORD_CHECK_WAIT_SECONDS = 0.05
    settings.PASSWORD_CHECK_CLEAN_WAIT_SECONDS = 0.05


def login(api, person: Person, password: str | None = None, address: str = "192.0.2.10"):
    body = {"email": person.email, "password": password or person.password}
    return auth_post(api, "login", body, program=person.program_id, REMOTE_ADDR=address)


def assert_busy(response) -> None:
    body = assert_error(response, 429, "TOO_MANY_REQUESTS")
    assert body["retryable"] is True
    assert response["Retry-After"] == "1"


def test_with_every_slot_held_a_login_answers_429_and_once_released_it_works(api, totp_person):
    spare = totp_person

    with slots_taken(2):
        busy = login(api, spare)
    after = login(api, spare)

    assert_busy(busy)
    challenge_of(after, "SOFTWARE_TOKEN_MFA")


def test_one_slot_held_of_two_leaves_room_for_a_sign_in(api, totp_person):
    with slots_taken(1):
        response = login(api, totp_person)

    challenge_of(response, "SOFTWARE_TOKEN_MFA")


def test_the_number_of_slots_is_a_setting(api, totp_person, settings):
    settings.PASSWORD_CHECKS_IN_FLIGHT = 1

    with slots_taken(1):
        response = login(api, totp_person)

    assert_busy(response)


def test_a_refusal_for_want_of_a_slot_counts_as_a_failure_of_an_address_with_failures_never_of_the_email(
    api, totp_person, settings
):
    """Otherwise a flood that is only ever refused would never be throttled; but the
    password was not tried, so the e-mail's lockout (a real user's) is untouched."""
    settings.AUTH_CLIENT_MAX_FAILURES = 3
    spare, flooder = totp_person, "192.0.2.66"
    assert login(api, spare, "a wrong password 42", flooder).status_code == 401

    with slots_taken(2):
        statuses = [login(api, spare, "a wrong password 42", flooder).status_code for _ in range(8)]
    email_failures = LoginThrottle.objects.get(email=spare.email).failures
    from_the_flooder = login(api, spare, address=flooder)
    from_elsewhere = login(api, spare, address="192.0.2.67")

    assert statuses == [429] * 8
    assert email_failures == 1, "only the one password tried"
    client = LoginThrottle.objects.get(factor=LoginThrottle.Factor.CLIENT, email=flooder)
    assert client.failures == 3, "counted up to the throttle's maximum, not beyond"
    body = assert_error(from_the_flooder, 429, "TOO_MANY_REQUESTS")
    assert "from this client" in body["message"]
    challenge_of(from_elsewhere, "SOFTWARE_TOKEN_MFA")


def test_a_refusal_of_an_address_without_failures_counts_nothing(api, totp_person, settings):
    """Ordinary traffic refused (its wait ran out) is no failure of anybody: it never
    ranks an address down nor brings it nearer its throttle."""
    settings.AUTH_CLIENT_MAX_FAILURES = 3
    spare, person_behind_it = totp_person, "192.0.2.68"

    with slots_taken(2):
        statuses = [login(api, spare, address=person_behind_it).status_code for _ in range(5)]
    after = login(api, spare, address=person_behind_it)

    assert statuses == [429] * 5
    assert not LoginThrottle.objects.filter(email=spare.email).exists()
    assert not LoginThrottle.objects.filter(email=person_behind_it, failures__gt=0).exists()
    challenge_of(after, "SOFTWARE_TOKEN_MFA")
    client = LoginThrottle.objects.get(factor=LoginThrottle.Factor.CLIENT, email=person_behind_it)
    assert (client.failures, client.refusals) == (0, 0), "its success forgot the refusals"


def test_change_password_waits_for_a_slot_too(api, new_person):
    new_user = new_person
    email, program = new_user.email, new_user.program_id

    with slots_taken(2):
        busy = change(api, email, new_user.password, NEW_PASSWORD, program)
    unchanged = user(email, program)
    after = change(api, email, new_user.password, NEW_PASSWORD, program)

    assert_busy(busy)
    assert unchanged.must_change_password and unchanged.check_password(new_user.password)
    challenge_of(after, "SECURITY_SETUP_REQUIRED")


def test_a_step_up_pin_waits_for_a_slot_and_is_not_counted(pin_person, business_program):
    person, program = pin_person, business_program
    holder = person.refreshed()
    wrong_pin = "0000" if person.pin != "0000" else "1111"

    with slots_taken(2):
        busy = refused(
            "TOO_MANY_REQUESTS", 429, confirm, holder, program, {"method": "pin", "pin": wrong_pin}
        )

    assert busy.headers == {"Retry-After": "1"}
    assert second_factor_failures(holder) == 0
    confirm(holder, program, {"method": "pin", "pin": person.pin})


def test_the_admin_sign_in_answers_429_while_every_slot_is_held(client, db, settings):
    settings.ADMIN_REQUIRE_TOTP = False
    staff = staff_user("support")
    form = {"username": staff.email, "password": STAFF_PASSWORD, "next": "/admin/"}

    with slots_taken(2):
        busy = client.post("/admin/login/", form)
    after = client.post("/admin/login/", form)

    assert busy.status_code == 429 and busy["Retry-After"] == "1"
    assert "try again shortly" in busy.content.decode()
    assert not LoginThrottle.objects.filter(email=staff.email).exists()
    assert after.status_code == 302 and after["Location"] == "/admin/"


def another_thread_gets_a_slot() -> bool:
    got: list[bool] = []

    def try_one() -> None:
        try:
            with password_check_slot():
                got.append(True)
        except PasswordChecksBusy:
            got.append(False)

    thread = threading.Thread(target=try_one)
    thread.start()
    thread.join()
    return got == [True]


def test_a_thread_holding_a_slot_enters_again_without_taking_a_second_one(settings):
    settings.PASSWORD_CHECKS_IN_FLIGHT = 1

    with password_check_slot():
        # With one slot, a second acquisition would wait for itself and answer 429.
        with password_check_slot():
            inside = another_thread_gets_a_slot()
        still_held = another_thread_gets_a_slot()
    after = another_thread_gets_a_slot()

    assert (inside, still_held, after) == (False, False, True)


def test_no_more_sign_ins_wait_for_a_slot_than_the_waiters_setting(api, totp_person, settings):
    """Waiting holds a server thread: a flood must not queue up and take them all."""
    settings.PASSWORD_CHECKS_IN_FLIGHT = 1
    settings.PASSWORD_CHECK_WAITERS = 1
    settings.PASSWORD_CHECK_CLEAN_WAIT_SECONDS = 30
    waiter_got_a_slot: list[bool] = []

    def wait_for_a_slot() -> None:
        waiter_got_a_slot.append(another_thread_gets_a_slot())

    with slots_taken(1):
        waiter = threading.Thread(target=wait_for_a_slot)
        waiter.start()
        while len(password_checks.current_gate().waiters) < 1:
            time.sleep(0.01)
        # Refused at once: had it waited too, it would have outlasted the waiter's
        # 30 seconds, and the waiter would have found no slot either.
        refused_at_once = login(api, totp_person, address="192.0.2.69")
    waiter.join()

    assert_busy(refused_at_once)
    assert waiter_got_a_slot == [True]
    assert not LoginThrottle.objects.filter(email="192.0.2.69", failures__gt=0).exists()


@pytest.mark.parametrize(
    ("env", "waiters"),
    [({}, "8"), ({"WEB_THREADS": "8"}, "6"), ({"WEB_THREADS": "8", "PASSWORD_CHECK_WAITERS": "3"}, "3")],
)
def test_the_waiters_default_to_the_servers_threads_less_two_else_eight(env, waiters):
    from tests.kernel.test_settings import run_check

    shown = run_check(
        env, "-c", "from django.conf import settings; print(settings.PASSWORD_CHECK_WAITERS)", command="shell"
    )

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip().splitlines()[-1] == waiters
