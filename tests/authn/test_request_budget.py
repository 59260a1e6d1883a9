"""Every route has a request budget per window: per access or id token, and per
client address for requests without a bearer. Over budget: 429
TOO_MANY_REQUESTS with Retry-After (the seconds until the window ends), in the
error envelope. Counted in Redis when REDIS_URL is set, shared by every process;
in each process's memory otherwise.

Addresses and tokens are new in every test, so that counts another test (or an
earlier run, on Redis) left in the same window do not meet them.
"""

import logging
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from bankapi.ops.outages import outages_forget
from config import settings as configured
from tests.authn.helpers import assert_error, auth_post, challenge_of
from tests.conftest import requires_redis
from tests.proof.processes import Gunicorn, free_port, request, server_environment
from tests.support.auth import access_header, tokens_for

# A window starts on every whole minute (windows of 60 seconds are aligned on the clock).
WINDOW_START = datetime(2031, 3, 3, 9, 30, tzinfo=UTC)


def new_address() -> str:
    return f"2001:db8::{uuid.uuid4().hex[:4]}:{uuid.uuid4().hex[:4]}"


def capabilities(api, auth: dict, address: str = "192.0.2.1"):
    return api.get("/v1/capabilities", REMOTE_ADDR=address, **auth)


def jwks(api, address: str, **headers):
    """A route without a bearer: it spends its address's budget."""
    return api.get("/.well-known/jwks.json", REMOTE_ADDR=address, **headers)


def assert_over_budget(response, retry_after: int) -> None:
    body = assert_error(response, 429, "TOO_MANY_REQUESTS")
    assert body["retryable"] is True
    assert response["Retry-After"] == str(retry_after)


@pytest.fixture
def customer(totp_person, consumer_program) -> tuple[str, str]:
    return totp_person.email, str(consumer_program.id)


def test_over_the_token_budget_429_with_retry_after_and_another_token_is_unaffected(api, customer, settings):
    settings.REQUEST_BUDGET_PER_TOKEN = 3
    with time_machine.travel(WINDOW_START + timedelta(seconds=15), tick=False):
        spent, other = access_header(*customer), access_header(*customer)

        within = [capabilities(api, spent).status_code for _ in range(3)]
        over = capabilities(api, spent)
        unaffected = capabilities(api, other)

    assert within == [200, 200, 200]
    assert_over_budget(over, retry_after=45)
    assert unaffected.status_code == 200
    with time_machine.travel(WINDOW_START + timedelta(seconds=60), tick=False):
        assert capabilities(api, spent).status_code == 200, "a new window, a new budget"


def test_an_id_token_has_a_budget_of_its_own(api, customer, settings):
    settings.REQUEST_BUDGET_PER_TOKEN = 1
    email, program = customer
    tokens = tokens_for(email, program)

    first = api.get("/v1/kyc/schema", HTTP_AUTHORIZATION=f"Bearer {tokens.id_token}")
    second = api.get("/v1/kyc/schema", HTTP_AUTHORIZATION=f"Bearer {tokens.id_token}")
    access = capabilities(api, {"HTTP_AUTHORIZATION": f"Bearer {tokens.access_token}"})

    assert first.status_code == 200
    assert_error(second, 429, "TOO_MANY_REQUESTS")
    assert access.status_code == 200


def test_over_the_address_budget_a_bearerless_route_answers_429_and_another_address_is_unaffected(
    api, totp_person, settings
):
    settings.REQUEST_BUDGET_PER_ADDRESS = 2
    spare, address = totp_person, new_address()
    body = {"email": spare.email, "password": spare.password}

    def sign_in(from_address: str):
        return auth_post(api, "login", body, program=spare.program_id, REMOTE_ADDR=from_address)

    with time_machine.travel(WINDOW_START + timedelta(seconds=50), tick=False):
        within = [sign_in(address) for _ in range(2)]
        over = sign_in(address)
        elsewhere = sign_in(new_address())

    for response in within:
        challenge_of(response, "SOFTWARE_TOKEN_MFA")
    assert_over_budget(over, retry_after=10)
    challenge_of(elsewhere, "SOFTWARE_TOKEN_MFA")


def test_behind_trusted_proxies_the_budget_is_the_forwarded_clients(api, db, settings):
    settings.REQUEST_BUDGET_PER_ADDRESS = 1
    settings.TRUSTED_PROXY_COUNT = 1
    proxy, first, second = new_address(), new_address(), new_address()

    # Inside one budget window: a window that ends mid-test would give `first` a new budget.
    with time_machine.travel(WINDOW_START + timedelta(seconds=5), tick=False):
        answers = [
            jwks(api, proxy, HTTP_X_FORWARDED_FOR=first).status_code,
            jwks(api, proxy, HTTP_X_FORWARDED_FOR=second).status_code,
            # What a client puts left of the proxy's entry is not trusted.
            jwks(api, proxy, HTTP_X_FORWARDED_FOR=f"{new_address()}, {first}").status_code,
        ]

    assert answers == [200, 200, 429]


def test_a_request_with_a_bearer_spends_its_tokens_budget_not_its_addresss(api, customer, settings):
    settings.REQUEST_BUDGET_PER_ADDRESS = 1
    settings.REQUEST_BUDGET_PER_TOKEN = 10
    address, auth = new_address(), access_header(*customer)

    with_bearer = [capabilities(api, auth, address).status_code for _ in range(3)]
    without = [jwks(api, address).status_code for _ in range(2)]

    assert with_bearer == [200, 200, 200]
    assert without == [200, 429]


def test_the_probes_and_metrics_spend_no_budget_and_leave_the_addresss_budget_to_the_other_routes(
    api, totp_person, settings
):
    """A load balancer probing every second from one address (the proxy's) must
    neither be refused itself nor spend the budget of the routes behind it."""
    settings.REQUEST_BUDGET_PER_ADDRESS = 3
    spare, address = totp_person, new_address()

    with time_machine.travel(WINDOW_START, tick=False):
        probes = [api.get(path, REMOTE_ADDR=address) for path in ("/healthz", "/readyz", "/metrics") * 5]
        sign_in = auth_post(
            api,
            "login",
            {"email": spare.email, "password": spare.password},
            program=spare.program_id,
            REMOTE_ADDR=address,
        )
        keys = [jwks(api, address).status_code for _ in range(2)]
        over = jwks(api, address)
        still_probed = [api.get(path, REMOTE_ADDR=address).status_code for path in ("/healthz", "/readyz")]

    assert [response.status_code for response in probes] == [200] * 15
    challenge_of(sign_in, "SOFTWARE_TOKEN_MFA")
    assert keys == [200, 200]
    assert_over_budget(over, retry_after=60)
    assert still_probed == [200, 200]


def test_the_default_budgets_let_hundreds_of_requests_a_minute_through(api, db, settings):
    assert (configured.REQUEST_BUDGET_PER_TOKEN, configured.REQUEST_BUDGET_PER_ADDRESS) == (1200, 300)
    assert configured.REQUEST_BUDGET_WINDOW_SECONDS == 60
    settings.REQUEST_BUDGET_PER_ADDRESS = configured.REQUEST_BUDGET_PER_ADDRESS
    address = new_address()

    with time_machine.travel(WINDOW_START, tick=False):
        answers = [jwks(api, address).status_code for _ in range(300)]
        over = jwks(api, address)

    assert answers == [200] * 300
    assert_over_budget(over, retry_after=60)


def test_while_redis_cannot_be_reached_requests_are_served_and_a_warning_logged(api, db, settings, caplog):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    settings.REQUEST_BUDGET_PER_ADDRESS = 1
    address = new_address()
    outages_forget()

    with caplog.at_level(logging.WARNING, logger="authn.request_budget"):
        answers = [jwks(api, address).status_code for _ in range(3)]

    assert answers == [200, 200, 200]
    # One line for the outage, not a traceback per request.
    lines = [record for record in caplog.records if "Redis unavailable" in record.getMessage()]
    assert len(lines) == 1 and not lines[0].exc_info


UNBUDGETED = {"/healthz", "/readyz", "/metrics"}


def test_every_route_but_the_probes_and_metrics_documents_the_budgets_429_with_retry_after(api, db):
    document = api.get("/v1/openapi.json").json()

    operations = [
        (path, method, operation)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]
    assert operations
    for path, method, operation in operations:
        if path in UNBUDGETED:
            assert "429" not in operation["responses"], f"{method.upper()} {path} spends no budget"
            continue
        answer = operation["responses"].get("429")
        assert answer, f"{method.upper()} {path} does not document 429"
        assert "request budget" in answer["description"], f"{method.upper()} {path}"
        assert answer["headers"]["Retry-After"]["schema"]["type"] == "integer"
        assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


@requires_redis
def test_with_redis_one_tokens_budget_holds_across_two_server_processes(
    transactional_db, totp_person, consumer_program, tmp_path
):
    env = server_environment(REQUEST_BUDGET_PER_TOKEN="4")
    token = tokens_for(totp_person.email, str(consumer_program.id)).access_token
    other = tokens_for(totp_person.email, str(consumer_program.id)).access_token
    servers = [Gunicorn(env, 1, tmp_path / f"gunicorn-{index}.log") for index in range(2)]
    try:
        first, second = (server.port for server in servers)

        def get(port: int, bearer: str) -> int:
            return request(port, "GET", "/v1/capabilities", headers={"Authorization": f"Bearer {bearer}"})[0]

        within = [get(first, token), get(second, token), get(first, token), get(second, token)]
        over = [get(first, token), get(second, token)]
        unaffected = [get(first, other), get(second, other)]
    finally:
        for server in servers:
            server.stop()

    assert within == [200, 200, 200, 200]
    assert over == [429, 429], "each process alone has counted only two"
    assert unaffected == [200, 200]


@requires_redis
def test_with_redis_the_count_goes_on_when_the_server_dropped_the_connection_or_forgot_the_script(
    settings, monkeypatch
):
    from redis import Redis

    from authn.services import request_budget
    from authn.services.request_budget import _connection, budget_spend

    key = f"test:{uuid.uuid4()}"
    url = settings.REDIS_URL
    assert budget_spend(key, limit=3) is None
    held = _connection(url)
    held.send_command("CLIENT", "ID")
    Redis.from_url(url).client_kill_filter(_id=held.read_response())  # the server drops it
    assert budget_spend(key, limit=3) is None  # counted on a new connection, no error
    # A server that does not know the script (restarted): EVALSHA refused, the script sent.
    monkeypatch.setattr(request_budget, "_ADD_ONE_SHA", "0" * 40)
    assert budget_spend(key, limit=3) is None
    assert budget_spend(key, limit=3) is not None  # the fourth of three: every one was counted
