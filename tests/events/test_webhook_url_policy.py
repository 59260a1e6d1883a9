"""Where webhook URLs may point, at create (API) and at every send.

A webhook URL is fetched by our own servers: it must not reach our own network
(the cloud metadata service at 169.254.169.254, loopback services, private
ranges). Tests never reach those either: the test network (tests/support/network.py)
answers names from a table and refuses every connection off loopback, recording it,
so each test asserts what the service tried to reach.
"""

import uuid
from decimal import Decimal

import pytest

from bankapi.models import Account
from events.models import Delivery, DeliveryAttempt, EventType, WebhookEndpoint
from events.recording import event_record
from payments.services.acceptance import PaymentInstruction, payment_accept
from tests.support.hostile_urls import (
    HOSTILE_EVERYWHERE,
    HOSTILE_IN_A_DEPLOYMENT,
    LOCAL,
    PUBLIC_HTTP,
    answer_hostile_names,
)
from tests.support.network import PUBLIC
from tests.support.receiver import start_receiver
from tests.support.tls import CertificateAuthority

ACCEPTED = "payment_request.accepted"


@pytest.fixture(autouse=True)
def names(loopback_network):
    answer_hostile_names(loopback_network)
    return loopback_network


@pytest.fixture
def deployment(settings):
    """A deployment (DATABASE_URL set, no development run chosen): `PRODUCTION` is
    what settings derive from that (tests/kernel/test_settings.py)."""
    settings.PRODUCTION = True


@pytest.fixture
def create(api, management, program):
    def post(url: str):
        return api.post(
            f"/v1/webhook-endpoints?programId={program.id}",
            {"url": url, "eventTypes": [ACCEPTED]},
            format="json",
            **management.id,
        )

    return post


@pytest.fixture
def receiver():
    made = []

    def start(**options):
        receiver_, server = start_receiver(**options)
        made.append(server)
        return receiver_

    yield start
    for server in made:
        server.shutdown()
        server.server_close()


def inserted_endpoint(account: Account, url: str, sandbox: bool = True) -> WebhookEndpoint:
    """A row made without the create check (an old row, a direct insert, a bug)."""
    return WebhookEndpoint.objects.create(
        program_id=account.program_id,
        sandbox=sandbox,
        url=url,
        event_types=[ACCEPTED],
        secret="whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
    )


def pay(account: Account, capture, sandbox: bool = True) -> None:
    """An event the endpoint subscribes to: a payment in the sandbox; in production
    (no money there in tests) the event as the payment would record it."""
    with capture(execute=True):
        if sandbox:
            payment_accept(
                account=account,
                instruction=PaymentInstruction(
                    amount=Decimal("2.00"), currency=account.currency, reference="Hook"
                ),
            )
        else:
            event_record(
                type=EventType.PAYMENT_REQUEST_ACCEPTED,
                program_id=account.program_id,
                sandbox=False,
                resource_type="payment_request",
                resource_id=uuid.uuid4(),
                data={"status": "ACCEPTED"},
            )


def assert_refused_at_create(response, before: int) -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert [error["field"] for error in body["errors"]] == ["url"]
    assert WebhookEndpoint.objects.count() == before


@pytest.mark.parametrize("url", HOSTILE_IN_A_DEPLOYMENT)
def test_a_deployment_refuses_hostile_urls_for_a_sandbox_endpoint_at_create(create, deployment, url):
    before = WebhookEndpoint.objects.count()

    response = create(url)

    assert_refused_at_create(response, before)


@pytest.mark.parametrize("url", HOSTILE_EVERYWHERE)
def test_a_development_run_refuses_the_same_addresses_except_local_receivers(create, url):
    before = WebhookEndpoint.objects.count()

    response = create(url)

    assert_refused_at_create(response, before)


@pytest.mark.parametrize("url", LOCAL + PUBLIC_HTTP)
def test_a_development_run_takes_local_receivers_and_http(create, url):
    response = create(url)

    assert response.status_code == 200, response.content
    assert WebhookEndpoint.objects.filter(id=response.json()["data"]["endpointId"], url=url).exists()


def test_a_deployment_takes_https_to_a_public_host(create, deployment, names):
    response = create("https://hooks.example.com/bank")

    assert response.status_code == 200, response.content
    assert "hooks.example.com" in names.looked_up


@pytest.mark.parametrize(
    "url",
    [
        "https://0.com*",
        "https://0.a/x",
        "http://256.1.1.1/x",
        "https://exa mple.com",
        "https://example.com:99999/x",
    ],
)
def test_what_is_not_a_url_is_refused(create, url):
    before = WebhookEndpoint.objects.count()

    assert_refused_at_create(create(url), before)


def test_a_name_that_does_not_resolve_is_refused(create, names):
    before = WebhookEndpoint.objects.count()

    response = create("https://nowhere.invalid/hooks")

    assert_refused_at_create(response, before)
    assert response.json()["message"] == "url's host cannot be resolved."


def test_the_refusal_does_not_echo_the_address_a_name_resolved_to(create, deployment):
    response = create("https://metadata.internal.example.com/latest")

    assert "169.254" not in response.content.decode()


@pytest.mark.parametrize("url", HOSTILE_IN_A_DEPLOYMENT)
def test_a_deployment_sends_nothing_to_a_hostile_endpoint_row_and_records_why(
    account, deployment, names, django_capture_on_commit_callbacks, url
):
    endpoint = inserted_endpoint(account, url)

    pay(account, django_capture_on_commit_callbacks)

    delivery = Delivery.objects.get(endpoint=endpoint)
    attempt = DeliveryAttempt.objects.get(delivery=delivery)
    assert delivery.state == Delivery.State.PENDING and delivery.delivered_at is None
    assert attempt.status_code is None
    assert attempt.error.startswith("Refused: url"), attempt.error
    assert delivery.last_error == attempt.error
    assert names.refused == []
    assert [port for _, port in names.connected if port in (80, 443, 9000)] == []


def test_a_deployment_does_not_deliver_to_a_listening_loopback_receiver(
    account, deployment, receiver, django_capture_on_commit_callbacks
):
    hook = receiver()
    endpoint = inserted_endpoint(account, hook.url)

    pay(account, django_capture_on_commit_callbacks)

    assert hook.received == []
    attempt = DeliveryAttempt.objects.get(delivery__endpoint=endpoint)
    assert attempt.error == "Refused: url must be an absolute https URL."


@pytest.mark.parametrize("url", LOCAL)
def test_a_deployment_takes_local_receivers_only_with_the_loopback_setting(create, deployment, settings, url):
    assert create(url).status_code == 400

    settings.WEBHOOKS_ALLOW_LOOPBACK = True
    response = create(url)

    assert response.status_code == 200, response.content


@pytest.mark.parametrize("url", HOSTILE_EVERYWHERE)
def test_the_loopback_setting_still_refuses_every_other_hostile_address(create, deployment, settings, url):
    settings.WEBHOOKS_ALLOW_LOOPBACK = True
    before = WebhookEndpoint.objects.count()

    assert_refused_at_create(create(url), before)


def test_a_deployment_with_the_loopback_setting_delivers_to_a_loopback_receiver(
    account, deployment, settings, receiver, django_capture_on_commit_callbacks
):
    settings.WEBHOOKS_ALLOW_LOOPBACK = True
    hook = receiver()
    inserted_endpoint(account, hook.url)

    pay(account, django_capture_on_commit_callbacks)

    assert len(hook.received) == 1


@pytest.mark.parametrize("url", HOSTILE_EVERYWHERE)
def test_a_development_run_sends_nothing_to_a_hostile_endpoint_row(
    account, names, django_capture_on_commit_callbacks, url
):
    endpoint = inserted_endpoint(account, url)

    pay(account, django_capture_on_commit_callbacks)

    attempt = DeliveryAttempt.objects.get(delivery__endpoint=endpoint)
    assert attempt.error.startswith("Refused: url"), attempt.error
    assert names.refused == []


def test_a_development_run_delivers_to_a_loopback_receiver(
    account, receiver, django_capture_on_commit_callbacks
):
    hook = receiver()
    endpoint = inserted_endpoint(account, hook.url)

    pay(account, django_capture_on_commit_callbacks)

    assert len(hook.received) == 1
    assert Delivery.objects.get(endpoint=endpoint).state == Delivery.State.DELIVERED


@pytest.fixture
def authority(tmp_path, monkeypatch) -> CertificateAuthority:
    """Trusted by the service's ordinary TLS checks, for this test only."""
    made = CertificateAuthority(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(made.bundle))
    return made


@pytest.mark.parametrize("in_sandbox", [True, False], ids=["sandbox", "production"])
def test_the_connection_goes_to_the_address_that_passed_the_check(
    account, deployment, names, receiver, authority, django_capture_on_commit_callbacks, in_sandbox
):
    """DNS rebinding: the name answers a public address to the first look-up and
    127.0.0.1 to the next. The request goes to the checked public address (which
    the test network hands to a loopback receiver) with the name in Host and TLS."""
    hook = receiver(tls=authority.server_context("rebind.example.com"))
    port = int(hook.url.rsplit(":", 1)[1].split("/")[0])
    names.answer("rebind.example.com", [PUBLIC], ["127.0.0.1"])
    names.route(PUBLIC, port, to=("127.0.0.1", port))
    endpoint = inserted_endpoint(account, f"https://rebind.example.com:{port}/hooks", sandbox=in_sandbox)

    pay(account, django_capture_on_commit_callbacks, sandbox=in_sandbox)

    assert [(address, at) for address, at in names.connected if at == port] == [(PUBLIC, port)]
    assert names.looked_up.count("rebind.example.com") == 1
    assert len(hook.received) == 1
    assert hook.received[0].headers["host"] == f"rebind.example.com:{port}"
    assert Delivery.objects.get(endpoint=endpoint).state == Delivery.State.DELIVERED


def test_rebinding_between_create_and_send_is_refused_at_send(
    create, account, deployment, names, receiver, authority, django_capture_on_commit_callbacks
):
    hook = receiver(tls=authority.server_context("rebind.example.com"))
    port = int(hook.url.rsplit(":", 1)[1].split("/")[0])
    names.answer("rebind.example.com", [PUBLIC], ["169.254.169.254"])
    names.route(PUBLIC, port, to=("127.0.0.1", port))
    created = create(f"https://rebind.example.com:{port}/hooks")
    assert created.status_code == 200

    pay(account, django_capture_on_commit_callbacks)

    assert hook.received == []
    assert names.connected == [] or all(at != port for _, at in names.connected)
    assert names.refused == []
    attempt = DeliveryAttempt.objects.get(delivery__endpoint_id=created.json()["data"]["endpointId"])
    assert attempt.error.startswith("Refused: url must point at a public address")


def test_tls_verifies_the_certificate_for_the_name_not_the_address(
    account, deployment, names, receiver, authority, django_capture_on_commit_callbacks
):
    hook = receiver(tls=authority.server_context("someone-else.example.com"))
    port = int(hook.url.rsplit(":", 1)[1].split("/")[0])
    names.route(PUBLIC, port, to=("127.0.0.1", port))
    endpoint = inserted_endpoint(account, f"https://hooks.example.com:{port}/hooks")

    pay(account, django_capture_on_commit_callbacks)

    assert hook.received == []
    attempt = DeliveryAttempt.objects.get(delivery__endpoint=endpoint)
    assert "certificate" in attempt.error.lower(), attempt.error


def test_redirects_are_not_followed(account, receiver, names, django_capture_on_commit_callbacks):
    hook = receiver(script=[307])
    endpoint = inserted_endpoint(account, hook.url)

    pay(account, django_capture_on_commit_callbacks)

    assert hook.answered == [307]
    attempt = DeliveryAttempt.objects.get(delivery__endpoint=endpoint)
    assert (attempt.status_code, attempt.error) == (307, "HTTP 307")
