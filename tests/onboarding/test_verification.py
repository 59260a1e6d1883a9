"""GET .../verification/status: the provider's steps, per-UBO with includeUbos."""

import pytest

from onboarding.models import ProgramOnboarding, VerificationStep
from tests.support.auth import id_header

STEP_KEYS = {"step", "status", "rejectionType", "comments", "docCountry", "docType"}


def status_url(application_id: str, query: str = "") -> str:
    return f"/v1/applications/{application_id}/verification/status{query}"


def test_the_customer_has_the_two_steps_of_the_sandbox(api, sandbox):
    """What bootstrap_sandbox promises its customer: read as that customer."""
    sandbox_customer = id_header(sandbox["customer"]["email"], sandbox["consumerProgramId"])

    response = api.get(status_url(sandbox["customer"]["applicationId"]), **sandbox_customer)

    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == {"steps"}
    assert data["steps"] == [
        {
            "step": "IDENTITY",
            "status": "COMPLETED",
            "rejectionType": None,
            "comments": "",
            "docCountry": "GB",
            "docType": "PASSPORT",
        },
        {
            "step": "PROOF_OF_ADDRESS",
            "status": "FAILED",
            "rejectionType": "RETRY",
            "comments": data["steps"][1]["comments"],
            "docCountry": "GB",
            "docType": "UTILITY_BILL",
        },
    ]


def test_a_new_application_has_no_steps(api, customer_id_token):
    created = api.post("/v1/applications", {"isCompany": False}, format="json", **customer_id_token).json()
    application_id = created["data"]["application"]["applicationId"]

    response = api.get(status_url(application_id, "?includeUbos=true"), **customer_id_token)

    assert response.status_code == 200
    assert response.json()["data"] == {"steps": [], "ubos": []}


def test_steps_follow_what_operators_set(api, applicant2, customer2_id_token):
    application_id = applicant2.application_id
    VerificationStep.objects.create(
        application_id=application_id, step="SELFIE", status="IN_PROGRESS", position=0
    )

    steps = api.get(status_url(application_id), **customer2_id_token).json()["data"]["steps"]

    assert steps == [
        {
            "step": "SELFIE",
            "status": "IN_PROGRESS",
            "rejectionType": None,
            "comments": "",
            "docCountry": "",
            "docType": "",
        }
    ]


def test_include_ubos_adds_each_ubo_of_a_business_application(api, business_applicant, business_id_token):
    application_id = business_applicant.application_id

    without = api.get(status_url(application_id), **business_id_token).json()["data"]
    data = api.get(status_url(application_id, "?includeUbos=true"), **business_id_token).json()["data"]
    false = api.get(status_url(application_id, "?includeUbos=false"), **business_id_token).json()["data"]

    assert "ubos" not in without and "ubos" not in false
    assert len(data["ubos"]) == 2
    for ubo in data["ubos"]:
        assert set(ubo) == {"uboId", "status", "steps"}
        assert ubo["status"] == "PENDING"
        assert ubo["steps"] == []


def test_every_step_carries_all_six_keys(api, business_applicant, business_id_token):
    application_id = business_applicant.application_id
    ubo = business_applicant.ubos[0]
    VerificationStep.objects.create(
        application_id=application_id, step="COMPANY_REGISTRATION", status="PENDING"
    )
    VerificationStep.objects.create(
        application_id=application_id, ubo=ubo, step="IDENTITY", status="FAILED", rejection_type="FINAL"
    )

    data = api.get(status_url(application_id, "?includeUbos=true"), **business_id_token).json()["data"]

    steps = data["steps"] + [step for entry in data["ubos"] for step in entry["steps"]]
    assert len(steps) == 2
    for step in steps:
        assert set(step) == STEP_KEYS
        assert (step["rejectionType"] is not None) == (step["status"] == "FAILED")


@pytest.mark.parametrize("value", ["yes", "1", "TRUE", ""])
def test_include_ubos_takes_true_or_false_only(api, applicant, customer_id_token, value):
    response = api.get(status_url(applicant.application_id, f"?includeUbos={value}"), **customer_id_token)

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"


def test_a_switched_provider_answers_provider_mismatch(
    api, program, applicant, customer_id_token, customer2_id_token
):
    ProgramOnboarding.objects.create(program=program, verification_provider="sandbox-alternate")

    old = api.get(status_url(applicant.application_id), **customer_id_token)
    created = api.post("/v1/applications", {"isCompany": False}, format="json", **customer2_id_token).json()
    new = api.get(status_url(created["data"]["application"]["applicationId"]), **customer2_id_token)

    assert old.status_code == 409
    assert old.json()["code"] == "WEB_TOKEN_PROVIDER_MISMATCH"
    assert new.status_code == 200


def test_status_refuses_outsiders_and_the_access_token(
    api, applicant, customer2_id_token, business_id_token, customer_access_token
):
    url = status_url(applicant.application_id)

    for outsider in (customer2_id_token, business_id_token):
        response = api.get(url, **outsider)
        assert response.status_code == 404
        assert response.json()["code"] == "RESOURCE_NOT_FOUND"
    assert api.get(url, **customer_access_token).status_code == 401
    assert api.get(status_url("unknown"), **customer2_id_token).status_code == 404
