"""Ordinary concurrency is never refused: correct sign-ins sent at once, from one
address or several, all answer 200, however many checks are ahead of them (up to
PASSWORD_CHECK_CLEAN_WAIT_SECONDS), as long as their address has no recent
failure. Sign-ins from one address are in flight together: attempts counted up
front are no failures, so they do not rank the others down.

The first sign-in's check blocks until the others wait behind it (so
every one of them meets a taken slot and an attempt of its address in flight,
whatever the host's speed), then all go through. A ranked sign-in (an address
with failures) would be refused at once here (PASSWORD_CHECK_WAIT_SECONDS = 0).
"""

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from authn.models import LoginThrottle
from authn.services import login as login_services
from authn.services.throttle import client_key
from tests.authn.helpers import assert_error, auth_post, challenge_of
from tests.authn.test_sign_in_priority import waiting, with_failures
from tests.conftest import requires_postgres
from tests.support.factories_authn import Person

WRONG = "not the password 42"


@pytest.fixture(autouse=True)
def _defaults(settings):
    settings.PASSWORD_CHECKS_IN_FLIGHT = 1
    settings.PASSWORD_CHECK_WAITERS = 8
    settings.PASSWORD_CHECK_CLEAN_WAIT_SECONDS = 30
    settings.PASSWORD_CHECK_WAIT_SECONDS = 0


class FirstCheckBlocks:
    """The first sign-in's check waits, holding its slot with its attempt counted in
    flight (and no transaction open), until `release.set()`; the others run at once."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.calls = 0

    def set(self) -> None:
        self.release.set()


@pytest.fixture
def first_check_blocks(monkeypatch) -> FirstCheckBlocks:
    blocker = FirstCheckBlocks()
    real_check = login_services.credentials_check

    def credentials_check(**kwargs):
        blocker.calls += 1
        if blocker.calls == 1:
            blocker.entered.set()
            assert blocker.release.wait(30), "the first check was never released"
        return real_check(**kwargs)

    monkeypatch.setattr(login_services, "credentials_check", credentials_check)
    return blocker


def sign_ins_at_once(person: Person, addresses: list[str], blocker: FirstCheckBlocks) -> list:
    """Each address signs `person` in, all together; the answers in order."""
    answers: list = [None] * len(addresses)

    def send(n: int) -> None:
        try:
            answers[n] = auth_post(
                APIClient(),
                "login",
                {"email": person.email, "password": person.password},
                program=person.program_id,
                REMOTE_ADDR=addresses[n],
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(n,), daemon=True) for n in range(len(addresses))]
    threads[0].start()
    assert blocker.entered.wait(30)  # the first holds the slot, its attempt in flight ...
    for thread in threads[1:]:
        thread.start()
    waiting(len(addresses) - 1)  # ... and every other one waits behind it
    blocker.set()
    for thread in threads:
        thread.join(60)
    return answers


def assert_no_failure_counted(*addresses: str) -> None:
    for address in addresses:
        row = LoginThrottle.objects.filter(
            factor=LoginThrottle.Factor.CLIENT, email=client_key(address)
        ).first()
        assert row is None or (row.failures, row.in_flight) == (0, 0), (address, row.failures, row.in_flight)


# Released together, their writes (challenges, counters) meet the table locks of
# the suite's shared-cache in-memory SQLite, which fail at once instead of waiting
# (the embedded default's file database waits for its lock): PostgreSQL only.
@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_correct_sign_ins_from_one_address_sent_at_once_both_answer_200(totp_person, first_check_blocks):
    answers = sign_ins_at_once(totp_person, ["203.0.113.5"] * 2, first_check_blocks)

    for answer in answers:
        challenge_of(answer, "SOFTWARE_TOKEN_MFA")
    assert_no_failure_counted("203.0.113.5")


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_correct_sign_ins_from_two_addresses_sent_at_once_both_answer_200(
    totp_person, first_check_blocks
):
    answers = sign_ins_at_once(totp_person, ["203.0.113.6", "2001:db8:6::1"], first_check_blocks)

    for answer in answers:
        challenge_of(answer, "SOFTWARE_TOKEN_MFA")
    assert_no_failure_counted("203.0.113.6", "2001:db8:6::1")


# Eight at once: once released, their writes (challenges, counters) meet the
# table locks of the suite's shared-cache SQLite, which do not wait.
@requires_postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("spread", ["one address", "eight addresses"])
def test_eight_correct_sign_ins_sent_at_once_all_answer_200(totp_person, first_check_blocks, spread):
    addresses = ["203.0.113.7"] * 8 if spread == "one address" else [f"203.0.113.{10 + n}" for n in range(8)]

    answers = sign_ins_at_once(totp_person, addresses, first_check_blocks)

    assert [answer.status_code for answer in answers] == [200] * 8, [a.content for a in answers]
    for answer in answers:
        challenge_of(answer, "SOFTWARE_TOKEN_MFA")
    assert_no_failure_counted(*addresses)


@pytest.mark.django_db(transaction=True)
def test_behind_a_sign_in_in_flight_an_address_with_failures_is_refused_and_counted(
    totp_person, first_check_blocks
):
    """The other side of the rule: only an address with recent failures is refused
    for want of a slot (here at once), and that refusal counts as one more."""
    flooder = with_failures("203.0.113.30", 2)
    first = threading.Thread(
        target=lambda: (
            auth_post(
                APIClient(),
                "login",
                {"email": totp_person.email, "password": totp_person.password},
                program=totp_person.program_id,
                REMOTE_ADDR="203.0.113.31",
            ),
            connection.close(),
        ),
        daemon=True,
    )
    first.start()
    assert first_check_blocks.entered.wait(30)
    try:
        refused = auth_post(
            APIClient(),
            "login",
            {"email": totp_person.email, "password": totp_person.password},
            program=totp_person.program_id,
            REMOTE_ADDR=flooder,
        )
    finally:
        first_check_blocks.set()
        first.join(60)

    body = assert_error(refused, 429, "TOO_MANY_REQUESTS")
    assert refused["Retry-After"] == "1" and body["retryable"] is True
    assert LoginThrottle.objects.get(factor=LoginThrottle.Factor.CLIENT, email=flooder).failures == 3


@pytest.mark.django_db
def test_an_ipv6_client_is_counted_by_its_64(api, totp_person, settings):
    """A client holds a whole /64: each of its addresses starting afresh would let
    it dodge the throttle and rank as a newcomer with every request."""
    settings.AUTH_CLIENT_MAX_FAILURES = 3
    body = {"email": totp_person.email, "password": WRONG}
    for n in range(3):
        wrong = auth_post(
            api, "login", body, program=totp_person.program_id, REMOTE_ADDR=f"2001:db8:7::{n + 1}"
        )
        assert wrong.status_code == 401
    right = {"email": totp_person.email, "password": totp_person.password}

    same_block = auth_post(
        api, "login", right, program=totp_person.program_id, REMOTE_ADDR="2001:db8:7::ffff:1"
    )
    next_block = auth_post(api, "login", right, program=totp_person.program_id, REMOTE_ADDR="2001:db8:8::1")

    assert "from this client" in assert_error(same_block, 429, "TOO_MANY_REQUESTS")["message"]
    challenge_of(next_block, "SOFTWARE_TOKEN_MFA")
    assert client_key("2001:db8:7::ffff:1") == "2001:db8:7::/64"
    assert client_key("::ffff:192.0.2.1") == "192.0.2.1" and client_key("192.0.2.1") == "192.0.2.1"
