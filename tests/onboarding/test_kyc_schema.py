"""GET /v1/kyc/schema: the program's fields and document types."""

from onboarding.models import ProgramOnboarding

SCHEMA = "/v1/kyc/schema"
REQUIRED_DOCUMENT_TYPES = {
    "PASSPORT",
    "DRIVING_LICENCE",
    "NATIONAL_ID",
    "UTILITY_BILL",
    "BANK_STATEMENT",
    "CERTIFICATE_OF_INCORPORATION",
}


def test_schema_lists_fields_and_document_types_for_individuals_and_companies(api, customer_id_token):
    response = api.get(SCHEMA, **customer_id_token)

    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == {"individual", "company"}
    for kind in ("individual", "company"):
        assert set(data[kind]) == {"fields", "documentTypes"}
        assert data[kind]["fields"], kind
        for field in data[kind]["fields"]:
            assert set(field) == {"name", "type", "required", "label"}
            assert field["type"] in {"string", "date", "email", "country", "phone"}
    assert "PASSPORT" in data["individual"]["documentTypes"]
    assert "CERTIFICATE_OF_INCORPORATION" in data["company"]["documentTypes"]
    offered = set(data["individual"]["documentTypes"]) | set(data["company"]["documentTypes"])
    assert REQUIRED_DOCUMENT_TYPES <= offered


def test_schema_is_the_programs_own_when_operators_set_one(
    api, program, customer_id_token, business_id_token
):
    own = {
        "individual": {
            "fields": [{"name": "fullName", "type": "string", "required": True, "label": "Full name"}],
            "documentTypes": ["PASSPORT"],
        },
        "company": {
            "fields": [{"name": "companyName", "type": "string", "required": True, "label": "Name"}],
            "documentTypes": ["CERTIFICATE_OF_INCORPORATION"],
        },
    }
    ProgramOnboarding.objects.create(program=program, kyc_schema=own)

    consumer = api.get(SCHEMA, **customer_id_token).json()["data"]
    business = api.get(SCHEMA, **business_id_token).json()["data"]

    assert consumer == own
    assert business != own


def test_schema_refuses_the_access_token(api, customer_access_token):
    response = api.get(SCHEMA, **customer_access_token)

    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"


def test_schema_is_for_customer_users(api, custodian_id_token):
    assert api.get(SCHEMA, **custodian_id_token).status_code == 403


def test_an_operators_schema_gives_each_kind_its_own_papers_only():
    from onboarding.kyc import DEFAULT_SCHEMA, kyc_schema_problems

    mixed = {
        "individual": {**DEFAULT_SCHEMA["individual"], "documentTypes": ["PASSPORT", "SHAREHOLDER_REGISTER"]},
        "company": {**DEFAULT_SCHEMA["company"], "documentTypes": ["NATIONAL_ID"]},
    }

    problems = kyc_schema_problems(mixed)

    assert kyc_schema_problems(DEFAULT_SCHEMA) == []
    assert [problem.split(":")[0] for problem in problems] == [
        "individual.documentTypes",
        "company.documentTypes",
    ]
