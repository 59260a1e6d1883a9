"""The API's routes (under /v1/) skip the back office's middleware (static
files, sessions, the session's user, messages) and keep everything else: the
request id, the security headers, the host check, CSRF's exemption. The back
office keeps all of it."""

import uuid

import pytest

from bankapi.http.middleware import AuthenticationMiddleware, MessageMiddleware, SessionMiddleware

pytestmark = pytest.mark.django_db

PAYMENTS = f"/v1/customers/{uuid.uuid4()}/accounts/{uuid.uuid4()}/payments"


def test_an_api_answer_carries_its_request_id_and_security_headers_and_no_cookie(client):
    answer = client.post(PAYMENTS, {"amount": "1.00"}, content_type="application/json")

    assert answer.status_code == 401
    assert answer.json()["code"] == "UNAUTHORIZED"
    assert answer["X-Request-Id"]
    assert answer["X-Frame-Options"] == "DENY"
    assert answer["X-Content-Type-Options"] == "nosniff"
    assert answer["Referrer-Policy"] == "same-origin"
    assert not answer.cookies
    assert "Cookie" not in answer.get("Vary", "")


def test_an_api_request_gets_no_session_user_or_messages(rf):
    request = rf.get("/v1/capabilities")
    seen = []

    def view(request):
        seen.append([hasattr(request, name) for name in ("session", "user", "_messages")])
        from django.http import HttpResponse

        return HttpResponse()

    SessionMiddleware(AuthenticationMiddleware(MessageMiddleware(view)))(request)
    assert seen == [[False, False, False]]


def test_the_back_office_keeps_its_session_csrf_and_messages(client, rf):
    page = client.get("/admin/login/")

    assert page.status_code == 200
    assert "csrftoken" in page.cookies
    assert page["X-Frame-Options"] == "DENY"

    request = rf.get("/admin/login/")
    seen = []

    def view(request):
        seen.append([hasattr(request, name) for name in ("session", "user", "_messages")])
        from django.http import HttpResponse

        return HttpResponse()

    SessionMiddleware(AuthenticationMiddleware(MessageMiddleware(view)))(request)
    assert seen == [[True, True, True]]


def test_an_api_route_still_refuses_a_host_allowed_hosts_does_not_name(client, settings):
    settings.ALLOWED_HOSTS = ["api.example.com"]

    answer = client.post(PAYMENTS, {}, content_type="application/json", HTTP_HOST="evil.example.com")

    assert answer.status_code == 400
