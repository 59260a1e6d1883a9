"""Applications: create for the signed-in customer, read one with its UBOs."""

import uuid

import pytest

from onboarding.models import Application

NEW_APPLICATION = "/v1/applications"


def test_create_starts_a_new_individual_application_for_the_signed_in_customer(api, payer, customer_id_token):
    response = api.post(NEW_APPLICATION, {"isCompany": False}, format="json", **customer_id_token)

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    application = body["data"]["application"]
    assert application["customerId"] == str(payer.customer.id)
    assert application["isCompany"] is False
    assert application["workflowStage"] == "NEW"
    assert application["onboardingV3"] is True
    assert application["primaryApplicant"] == {
        "firstName": "",
        "lastName": "",
        "email": payer.email,
    }
    assert application["legalDocumentsAcceptance"] is None
    stored = Application.objects.get(id=application["applicationId"])
    assert stored.customer_id == payer.customer.id
    assert stored.workflow_stage == "NEW"


def test_create_takes_the_applicant_email_when_sent(api, customer_id_token):
    response = api.post(
        NEW_APPLICATION,
        {"isCompany": True, "email": "director@example.com"},
        format="json",
        **customer_id_token,
    )

    assert response.status_code == 200
    application = response.json()["data"]["application"]
    assert application["isCompany"] is True
    assert application["primaryApplicant"]["email"] == "director@example.com"


def test_each_create_without_a_key_makes_a_new_application(api, customer_id_token):
    first = api.post(NEW_APPLICATION, {"isCompany": False}, format="json", **customer_id_token).json()
    second = api.post(NEW_APPLICATION, {"isCompany": False}, format="json", **customer_id_token).json()

    assert first["data"]["application"]["applicationId"] != second["data"]["application"]["applicationId"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "isCompany"),
        ({"isCompany": "false"}, "isCompany"),
        ({"isCompany": 0}, "isCompany"),
        ({"isCompany": None}, "isCompany"),
        ({"isCompany": False, "email": "not-an-email"}, "email"),
        ({"isCompany": False, "email": ""}, "email"),
        ({"isCompany": False, "email": 42}, "email"),
        ({"isCompany": False, "programId": "x"}, "programId"),
    ],
)
def test_create_refuses_bad_input_and_stores_nothing(api, customer_id_token, body, field):
    before = Application.objects.count()

    response = api.post(NEW_APPLICATION, body, format="json", **customer_id_token)

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert field in {error["field"] for error in response.json()["errors"]}
    assert Application.objects.count() == before


def test_create_refuses_malformed_json(api, customer_id_token):
    response = api.generic(
        "POST", NEW_APPLICATION, '{"isCompany": tru', content_type="application/json", **customer_id_token
    )

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"


def test_create_refuses_the_access_token_and_no_token(api, customer_access_token):
    before = Application.objects.count()

    with_access = api.post(NEW_APPLICATION, {"isCompany": False}, format="json", **customer_access_token)
    without = api.post(NEW_APPLICATION, {"isCompany": False}, format="json")

    assert with_access.status_code == 401
    assert with_access.json()["code"] == "UNAUTHORIZED"
    assert without.status_code == 401
    assert Application.objects.count() == before


def test_create_is_for_customer_users_only(api, custodian_id_token, management_id_token):
    custodian = api.post(NEW_APPLICATION, {"isCompany": False}, format="json", **custodian_id_token)
    management = api.post(NEW_APPLICATION, {"isCompany": False}, format="json", **management_id_token)

    assert custodian.status_code == 403
    assert custodian.json()["code"] == "FORBIDDEN"
    assert management.status_code == 403


def test_get_answers_the_application_and_no_ubos_for_an_individual(api, applicant, customer_id_token):
    application_id = applicant.application_id

    response = api.get(f"/v1/applications/{application_id}", **customer_id_token)

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["application"]["applicationId"] == application_id
    assert data["application"]["customerId"] == applicant.customer_id
    assert data["ubos"] == []


def test_get_answers_a_company_application_with_its_ubos(api, business_applicant, business_id_token):
    application_id = business_applicant.application_id

    response = api.get(f"/v1/applications/{application_id}", **business_id_token)

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["application"]["isCompany"] is True
    assert len(data["ubos"]) == 2
    assert {ubo["status"] for ubo in data["ubos"]} == {"PENDING"}
    assert set(data["ubos"][0]) == {"uboId", "firstName", "lastName", "email", "status"}


@pytest.mark.parametrize("raw_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000", "%20"])
def test_get_of_an_unknown_id_is_not_found(api, customer_id_token, raw_id):
    response = api.get(f"/v1/applications/{raw_id}", **customer_id_token)

    assert response.status_code == 404
    assert response.json()["code"] == "RESOURCE_NOT_FOUND"


def test_another_customers_application_is_not_found(api, applicant, customer2_id_token, business_id_token):
    application_id = applicant.application_id

    same_program = api.get(f"/v1/applications/{application_id}", **customer2_id_token)
    other_program = api.get(f"/v1/applications/{application_id}", **business_id_token)

    assert same_program.status_code == 404
    assert same_program.json()["code"] == "RESOURCE_NOT_FOUND"
    assert other_program.status_code == 404


def test_get_refuses_the_access_token(api, applicant, customer_access_token):
    response = api.get(f"/v1/applications/{applicant.application_id}", **customer_access_token)

    assert response.status_code == 401


def test_a_retry_with_the_same_key_answers_the_first_application(api, customer_id_token):
    key = str(uuid.uuid4())
    before = Application.objects.count()

    first = api.post(
        NEW_APPLICATION, {"isCompany": False}, format="json", HTTP_IDEMPOTENCY_KEY=key, **customer_id_token
    )
    again = api.post(
        NEW_APPLICATION, {"isCompany": False}, format="json", HTTP_IDEMPOTENCY_KEY=key, **customer_id_token
    )

    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert again["Idempotent-Replayed"] == "true"
    assert Application.objects.count() == before + 1


def test_a_key_reused_for_another_application_is_refused(api, customer_id_token):
    key = str(uuid.uuid4())
    api.post(
        NEW_APPLICATION, {"isCompany": False}, format="json", HTTP_IDEMPOTENCY_KEY=key, **customer_id_token
    )
    before = Application.objects.count()

    response = api.post(
        NEW_APPLICATION, {"isCompany": True}, format="json", HTTP_IDEMPOTENCY_KEY=key, **customer_id_token
    )

    assert response.status_code == 400
    assert response.json()["code"] == "IDEMPOTENCY_KEY_MISMATCH"
    assert Application.objects.count() == before


def test_keys_are_per_customer(api, customer_id_token, customer2_id_token):
    key = str(uuid.uuid4())

    first = api.post(
        NEW_APPLICATION, {"isCompany": False}, format="json", HTTP_IDEMPOTENCY_KEY=key, **customer_id_token
    )
    other = api.post(
        NEW_APPLICATION, {"isCompany": False}, format="json", HTTP_IDEMPOTENCY_KEY=key, **customer2_id_token
    )

    assert other.status_code == 200
    assert "Idempotent-Replayed" not in other
    assert (
        other.json()["data"]["application"]["applicationId"]
        != first.json()["data"]["application"]["applicationId"]
    )


@pytest.mark.parametrize("key", ["not-a-uuid", "", "{6f1c3c1e-4b7a-4a8e-9d59-3f1d2b8c9a10}"])
def test_a_malformed_key_is_refused(api, customer_id_token, key):
    before = Application.objects.count()

    response = api.post(
        NEW_APPLICATION, {"isCompany": False}, format="json", HTTP_IDEMPOTENCY_KEY=key, **customer_id_token
    )

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert Application.objects.count() == before
