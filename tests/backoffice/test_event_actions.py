"""Webhook endpoints in the admin: only those who may change an endpoint may
re-enable it or rotate its secret (a viewer must not get a new secret shown)."""

from events.models import WebhookEndpoint

URL = "/admin/events/webhookendpoint/"


def _endpoint(program) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(
        program=program,
        url="https://hooks.example.com/bank",
        event_types=["payment_request.settled"],
        secret="whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
    )


def _rotate(client, endpoint):
    return client.post(
        URL, {"action": "rotate_secret_selected", "index": "0", "_selected_action": [str(endpoint.id)]}
    )


def test_viewers_cannot_rotate_a_secret_or_see_one(staff_client, program):
    endpoint = _endpoint(program)
    for group in ("support", "compliance", "operations"):
        client = staff_client(group)
        page = client.get(URL)
        response = _rotate(client, endpoint)
        messages = [str(m) for m in getattr(response.wsgi_request, "_messages", [])]
        assert page.status_code == 200 and b"rotate_secret_selected" not in page.content
        assert not any("whsec_" in m for m in messages)
        client.logout()
    endpoint.refresh_from_db()
    assert endpoint.secret == "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0" and not endpoint.previous_secret


def test_an_administrator_rotates_a_secret_shown_once(staff_client, program):
    endpoint = _endpoint(program)
    client = staff_client("administrator")

    response = _rotate(client, endpoint)

    endpoint.refresh_from_db()
    messages = [str(m) for m in response.wsgi_request._messages]
    assert response.status_code == 302
    assert any(endpoint.secret in m for m in messages)
    shown = client.get(URL).content.decode()  # the message, once
    again = client.get(f"{URL}{endpoint.id}/change/").content.decode()
    assert endpoint.secret in shown and endpoint.secret not in again
