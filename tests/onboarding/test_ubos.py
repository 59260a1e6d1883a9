"""UBO actions: signed, expiring verification links by e-mail, and reset."""

import re
import time
from urllib.parse import urlsplit

import pytest
import time_machine
from django.core import mail
from django.core.mail.backends.locmem import EmailBackend

from onboarding.models import Application, Ubo, VerificationStep
from onboarding.services.applications import application_stage_move
from tests.support.factories_onboarding import ApplicationFactory, UboFactory

SUCCESS = "https://app.example.com/kyb/done"
REJECT = "https://app.example.com/kyb/rejected"


def actions_url(application_id: str) -> str:
    return f"/v1/applications/{application_id}/ubos/actions"


@pytest.fixture
def business_ubos(business_applicant) -> list[Ubo]:
    return business_applicant.ubos


def send_links(api, business_applicant, token, ubos, capture, **extra):
    body = {
        "action": "UBO_VERIFICATION_EMAIL",
        "uboIds": [str(ubo.id) for ubo in ubos],
        "redirectSuccessUrl": SUCCESS,
        "redirectRejectUrl": REJECT,
        **extra,
    }
    with capture(execute=True):
        return api.post(actions_url(business_applicant.application_id), body, format="json", **token)


def test_verification_email_sends_each_ubo_a_signed_link(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    response = send_links(
        api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
    )

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    assert body["action"] == "UBO_VERIFICATION_EMAIL"
    assert [result["uboId"] for result in body["results"]] == [str(ubo.id) for ubo in business_ubos]
    for result in body["results"]:
        assert set(result) == {"uboId", "link"}
        assert result["link"].startswith("http://testserver/v1/ubo-verification/")
    assert {ubo.status for ubo in Ubo.objects.filter(id__in=[u.id for u in business_ubos])} == {"LINK_SENT"}
    assert sorted(message.to[0] for message in mail.outbox) == sorted(ubo.email for ubo in business_ubos)
    for message in mail.outbox:
        result = next(r for r in body["results"] if Ubo.objects.get(id=r["uboId"]).email == message.to[0])
        assert result["link"] in message.body
        assert "Test Business Ltd" in message.subject


def test_the_link_redirects_to_the_hosted_flow_which_verifies_the_ubo(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    response = send_links(
        api, business_applicant, business_id_token, business_ubos[:1], django_capture_on_commit_callbacks
    )
    link = urlsplit(response.json()["results"][0]["link"]).path

    redirect = api.get(link)
    assert redirect.status_code == 302
    hosted = urlsplit(redirect["Location"]).path
    assert hosted.startswith("/v1/sandbox/ubo-verification/")
    page = api.get(hosted)
    assert page.status_code == 200
    assert b"Approve" in page.content
    assert Ubo.objects.get(id=business_ubos[0].id).status == "IN_PROGRESS"
    finished = api.post(hosted, {"outcome": "approve"})

    assert finished.status_code == 303
    assert finished["Location"] == SUCCESS
    assert Ubo.objects.get(id=business_ubos[0].id).status == "VERIFIED"
    status = api.get(
        f"/v1/applications/{business_applicant.application_id}/verification/status?includeUbos=true",
        **business_id_token,
    ).json()["data"]
    ubo_entry = next(entry for entry in status["ubos"] if entry["uboId"] == str(business_ubos[0].id))
    assert ubo_entry["status"] == "VERIFIED"
    assert ubo_entry["steps"][0]["step"] == "IDENTITY"
    assert ubo_entry["steps"][0]["status"] == "COMPLETED"


def test_a_rejection_goes_to_the_reject_url(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    response = send_links(
        api, business_applicant, business_id_token, business_ubos[:1], django_capture_on_commit_callbacks
    )
    hosted = urlsplit(api.get(urlsplit(response.json()["results"][0]["link"]).path)["Location"]).path

    finished = api.post(hosted, {"outcome": "reject"})
    unknown = api.post(hosted, {"outcome": "maybe"})

    assert finished.status_code == 303
    assert finished["Location"] == REJECT
    assert unknown.status_code == 400
    assert Ubo.objects.get(id=business_ubos[0].id).status == "REJECTED"
    step = VerificationStep.objects.get(ubo=business_ubos[0])
    assert (step.status, step.rejection_type) == ("FAILED", "FINAL")


def _tampered(path: str) -> str:
    token = path.rsplit("/", 1)[1]
    value, signature = token.rsplit(":", 1)
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    return path.rsplit("/", 1)[0] + "/" + value + ":" + flipped


def test_a_tampered_link_is_refused(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    response = send_links(
        api, business_applicant, business_id_token, business_ubos[:1], django_capture_on_commit_callbacks
    )
    link = urlsplit(response.json()["results"][0]["link"]).path
    hosted = urlsplit(api.get(link)["Location"]).path

    for path in (_tampered(link), _tampered(hosted), "/v1/ubo-verification/garbage"):
        refused = api.get(path)
        assert refused.status_code == 403, path
        assert refused.json()["code"] == "FORBIDDEN"
    # A link token is not a hosted-flow token and the reverse (each has its own salt).
    swapped = "/v1/sandbox/ubo-verification/" + link.rsplit("/", 1)[1]
    assert api.get(swapped).status_code == 403
    assert api.post(_tampered(hosted), {"outcome": "approve"}).status_code == 403
    assert Ubo.objects.get(id=business_ubos[0].id).status != "VERIFIED"


def test_a_link_expires_after_ttl(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    response = send_links(
        api,
        business_applicant,
        business_id_token,
        business_ubos[:1],
        django_capture_on_commit_callbacks,
        ttlInSecs=60,
    )
    link = urlsplit(response.json()["results"][0]["link"]).path

    with time_machine.travel(time.time() + 55, tick=False):
        assert api.get(link).status_code == 302
    with time_machine.travel(time.time() + 65, tick=False):
        expired = api.get(link)

    assert expired.status_code == 403
    assert expired.json()["code"] == "FORBIDDEN"


def test_the_default_ttl_is_seven_days(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    response = send_links(
        api, business_applicant, business_id_token, business_ubos[:1], django_capture_on_commit_callbacks
    )
    link = urlsplit(response.json()["results"][0]["link"]).path

    with time_machine.travel(time.time() + 7 * 86400 - 5, tick=False):
        assert api.get(link).status_code == 302
    with time_machine.travel(time.time() + 7 * 86400 + 5, tick=False):
        assert api.get(link).status_code == 403
    assert re.search(r"works until \d{4}-\d{2}-\d{2}", mail.outbox[0].body)


def test_reset_moves_ubos_back_to_pending_and_kills_their_links(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    sent = send_links(
        api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
    )
    link = urlsplit(sent.json()["results"][0]["link"]).path
    hosted = urlsplit(api.get(link)["Location"]).path

    response = api.post(
        actions_url(business_applicant.application_id),
        {"action": "UBO_RESET", "uboIds": [str(business_ubos[0].id)]},
        format="json",
        **business_id_token,
    )

    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "action": "UBO_RESET",
        "results": [{"uboId": str(business_ubos[0].id), "status": "PENDING"}],
    }
    assert Ubo.objects.get(id=business_ubos[0].id).status == "PENDING"
    assert Ubo.objects.get(id=business_ubos[1].id).status == "LINK_SENT"
    assert api.get(link).status_code == 403
    assert api.post(hosted, {"outcome": "approve"}).status_code == 403


def test_reset_clears_the_provider_results(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    sent = send_links(
        api, business_applicant, business_id_token, business_ubos[:1], django_capture_on_commit_callbacks
    )
    hosted = urlsplit(api.get(urlsplit(sent.json()["results"][0]["link"]).path)["Location"]).path
    api.post(hosted, {"outcome": "reject"})

    api.post(
        actions_url(business_applicant.application_id),
        {"action": "UBO_RESET", "uboIds": [str(business_ubos[0].id)]},
        format="json",
        **business_id_token,
    )

    assert not VerificationStep.objects.filter(ubo=business_ubos[0]).exists()


class FlakyBackend(EmailBackend):
    """Fails the first `failures` deliveries, like an SMTP server that is down for a while."""

    failures = 0

    def send_messages(self, messages):
        if FlakyBackend.failures > 0:
            FlakyBackend.failures -= 1
            raise ConnectionRefusedError("SMTP server unavailable")
        return super().send_messages(messages)


def test_a_failed_delivery_is_retried_and_never_fails_the_request(
    api, business_applicant, settings, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    settings.EMAIL_BACKEND = "tests.onboarding.test_ubos.FlakyBackend"
    FlakyBackend.failures = 2

    response = send_links(
        api, business_applicant, business_id_token, business_ubos[:1], django_capture_on_commit_callbacks
    )

    assert response.status_code == 200
    assert [message.to for message in mail.outbox] == [[business_ubos[0].email]]


def test_a_delivery_that_never_succeeds_still_answers_the_action(
    api, business_applicant, settings, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    settings.EMAIL_BACKEND = "tests.onboarding.test_ubos.FlakyBackend"
    FlakyBackend.failures = 100

    response = send_links(
        api, business_applicant, business_id_token, business_ubos[:1], django_capture_on_commit_callbacks
    )

    FlakyBackend.failures = 0
    assert response.status_code == 200
    assert mail.outbox == []
    assert Ubo.objects.get(id=business_ubos[0].id).status == "LINK_SENT"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"uboIds": ["x"]}, "action"),
        ({"action": "UBO_DELETE", "uboIds": ["x"]}, "action"),
        ({"action": "UBO_RESET"}, "uboIds"),
        ({"action": "UBO_RESET", "uboIds": []}, "uboIds"),
        ({"action": "UBO_RESET", "uboIds": "abc"}, "uboIds"),
        ({"action": "UBO_RESET", "uboIds": [1]}, "uboIds.0"),
        ({"action": "UBO_VERIFICATION_EMAIL", "uboIds": ["x"], "ttlInSecs": 59}, "ttlInSecs"),
        ({"action": "UBO_VERIFICATION_EMAIL", "uboIds": ["x"], "ttlInSecs": 604801}, "ttlInSecs"),
        ({"action": "UBO_VERIFICATION_EMAIL", "uboIds": ["x"], "ttlInSecs": "600"}, "ttlInSecs"),
        (
            {"action": "UBO_VERIFICATION_EMAIL", "uboIds": ["x"], "redirectSuccessUrl": "/done"},
            "redirectSuccessUrl",
        ),
        (
            {"action": "UBO_VERIFICATION_EMAIL", "uboIds": ["x"], "redirectRejectUrl": "javascript:alert(1)"},
            "redirectRejectUrl",
        ),
        (
            {"action": "UBO_VERIFICATION_EMAIL", "uboIds": ["x"], "redirectSuccessUrl": "ftp://x.com/"},
            "redirectSuccessUrl",
        ),
    ],
)
def test_bad_bodies_are_refused_and_nothing_changes(
    api, business_applicant, business_id_token, business_ubos, body, field
):
    response = api.post(
        actions_url(business_applicant.application_id), body, format="json", **business_id_token
    )

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert field in {error["field"] for error in response.json()["errors"]}
    assert {ubo.status for ubo in Ubo.objects.filter(id__in=[u.id for u in business_ubos])} == {"PENDING"}
    assert mail.outbox == []


def test_a_ubo_named_twice_is_refused(api, business_applicant, business_id_token, business_ubos):
    ubo_id = str(business_ubos[0].id)

    response = api.post(
        actions_url(business_applicant.application_id),
        {"action": "UBO_RESET", "uboIds": [ubo_id, ubo_id]},
        format="json",
        **business_id_token,
    )

    assert response.status_code == 400


def test_a_ubo_of_another_application_is_not_found_and_nothing_is_done(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    other = ApplicationFactory(customer=business_applicant.person.customer, is_company=True)
    stranger = UboFactory(application=other)

    for unknown in (str(stranger.id), "not-a-uuid"):
        response = send_links(
            api,
            business_applicant,
            business_id_token,
            [business_ubos[0], type("U", (), {"id": unknown})()],
            django_capture_on_commit_callbacks,
        )
        assert response.status_code == 404
        assert response.json()["code"] == "RESOURCE_NOT_FOUND"
    assert Ubo.objects.get(id=business_ubos[0].id).status == "PENDING"
    assert mail.outbox == []


def test_an_individual_application_has_no_ubos(api, applicant, customer_id_token):
    response = api.post(
        actions_url(applicant.application_id),
        {"action": "UBO_RESET", "uboIds": ["00000000-0000-0000-0000-000000000000"]},
        format="json",
        **customer_id_token,
    )

    assert response.status_code == 404


def test_ubo_actions_refuse_outsiders_and_the_access_token(
    api, business_applicant, customer_id_token, business_ubos
):
    url = actions_url(business_applicant.application_id)
    body = {"action": "UBO_RESET", "uboIds": [str(business_ubos[0].id)]}

    outsider = api.post(url, body, format="json", **customer_id_token)
    access = api.post(url, body, format="json", **business_applicant.access)

    assert outsider.status_code == 404
    assert outsider.json()["code"] == "RESOURCE_NOT_FOUND"
    assert access.status_code == 401


def test_a_ubo_outcome_moves_a_submitted_application_into_review(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    application = business_applicant.application
    for stage in ("IN_PROGRESS", "SUBMITTED"):
        application_stage_move(application=application, to_stage=stage)
    response = send_links(
        api, business_applicant, business_id_token, business_ubos[:1], django_capture_on_commit_callbacks
    )
    hosted = urlsplit(api.get(urlsplit(response.json()["results"][0]["link"]).path)["Location"]).path

    api.post(hosted, {"outcome": "approve"})

    assert Application.objects.get(id=application.id).workflow_stage == "IN_REVIEW"
