"""The admin's endpoint form applies the same address policy as the API: in a
deployment a sandbox endpoint must be https to a public address, and nowhere may
it point at a private, link-local or other internal address."""

import pytest

from events.models import EventType, WebhookEndpoint
from tests.support.hostile_urls import HOSTILE_EVERYWHERE, HOSTILE_IN_A_DEPLOYMENT, answer_hostile_names

ADD = "/admin/events/webhookendpoint/add/"


@pytest.fixture(autouse=True)
def names(loopback_network):
    answer_hostile_names(loopback_network)


@pytest.fixture
def administrator(staff_client):
    return staff_client("administrator")


def add(client, program, url: str):
    return client.post(
        ADD,
        {
            "program": str(program.id),
            "sandbox": "on",
            "url": url,
            "event_types": [EventType.PAYMENT_REQUEST_ACCEPTED],
        },
    )


def assert_refused(response, before: int) -> None:
    assert response.status_code == 200  # the form again, with its errors
    errors = response.context["adminform"].form.errors
    assert set(errors) == {"url"}, errors
    assert WebhookEndpoint.objects.count() == before


@pytest.mark.parametrize("url", HOSTILE_IN_A_DEPLOYMENT)
def test_a_deployment_refuses_hostile_urls_in_the_admin_form(administrator, program, settings, url):
    settings.PRODUCTION = True
    before = WebhookEndpoint.objects.count()

    assert_refused(add(administrator, program, url), before)


@pytest.mark.parametrize("url", HOSTILE_EVERYWHERE)
def test_a_development_run_refuses_internal_addresses_in_the_admin_form(administrator, program, url):
    before = WebhookEndpoint.objects.count()

    assert_refused(add(administrator, program, url), before)


def test_the_admin_form_makes_an_endpoint_for_a_public_https_host(administrator, program, settings):
    settings.PRODUCTION = True

    response = add(administrator, program, "https://hooks.example.com/bank")

    assert response.status_code == 302
    assert WebhookEndpoint.objects.filter(url="https://hooks.example.com/bank", sandbox=True).exists()
