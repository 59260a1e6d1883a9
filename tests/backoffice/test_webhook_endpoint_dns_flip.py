"""A webhook URL whose name answers a public address when the admin's form checks
it, then an internal one when the endpoint is made (DNS rebinding between the
two look-ups), is refused with a message on the form's page: no endpoint, no 500."""

from events.models import EventType, WebhookEndpoint
from tests.support.factories import ProgramFactory
from tests.support.network import PUBLIC

ADD = "/admin/events/webhookendpoint/add/"


def test_a_name_that_turns_internal_after_the_form_check_is_refused_without_an_error(
    staff_client, loopback_network, settings
):
    settings.PRODUCTION = True
    program = ProgramFactory()
    loopback_network.answer("flip.example.com", [PUBLIC], ["10.0.0.7"])
    administrator = staff_client("administrator")

    response = administrator.post(
        ADD,
        {
            "program": str(program.id),
            "sandbox": "on",
            "url": "https://flip.example.com/hooks",
            "event_types": [EventType.PAYMENT_REQUEST_ACCEPTED],
        },
        follow=True,
    )

    assert response.status_code == 200
    assert not WebhookEndpoint.objects.filter(url="https://flip.example.com/hooks").exists()
    shown = [str(message) for message in response.context["messages"]]
    assert any(
        text.startswith("The endpoint was not created") and "public address" in text for text in shown
    ), shown
    # The name was looked up twice (the form, then the create); nothing was sent to it.
    assert loopback_network.looked_up.count("flip.example.com") >= 2
    assert loopback_network.connected == []
