"""The KYC schema: what an applicant is asked for and which documents they may upload.

A program may set its own schema in admin (`ProgramOnboarding.kyc_schema`);
without one it serves the built-in schema below.
"""

from typing import Any

from bankapi.models import Program

FIELD_TYPES = ("string", "date", "email", "country", "phone")
DOCUMENT_TYPES = (
    "PASSPORT",
    "DRIVING_LICENCE",
    "NATIONAL_ID",
    "UTILITY_BILL",
    "BANK_STATEMENT",
    "CERTIFICATE_OF_INCORPORATION",
    "ARTICLES_OF_ASSOCIATION",
    "SHAREHOLDER_REGISTER",
)
KINDS = ("individual", "company")
# The papers of a person and of a company: a program's schema picks from its kind's
# own list, so the document can state which types each presign collection takes.
KIND_DOCUMENT_TYPES = {
    "individual": ("PASSPORT", "DRIVING_LICENCE", "NATIONAL_ID", "UTILITY_BILL", "BANK_STATEMENT"),
    "company": (
        "CERTIFICATE_OF_INCORPORATION",
        "ARTICLES_OF_ASSOCIATION",
        "SHAREHOLDER_REGISTER",
        "BANK_STATEMENT",
        "UTILITY_BILL",
    ),
}


def _field(name: str, type_: str, label: str, required: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "required": required, "label": label}


DEFAULT_SCHEMA: dict[str, Any] = {
    "individual": {
        "fields": [
            _field("firstName", "string", "First name"),
            _field("lastName", "string", "Last name"),
            _field("dateOfBirth", "date", "Date of birth"),
            _field("nationality", "country", "Nationality"),
            _field("email", "email", "E-mail address"),
            _field("phone", "phone", "Mobile phone number", required=False),
            _field("addressLine1", "string", "Address line 1"),
            _field("addressLine2", "string", "Address line 2", required=False),
            _field("city", "string", "Town or city"),
            _field("postalCode", "string", "Postcode"),
            _field("country", "country", "Country of residence"),
        ],
        "documentTypes": ["PASSPORT", "DRIVING_LICENCE", "NATIONAL_ID", "UTILITY_BILL", "BANK_STATEMENT"],
    },
    "company": {
        "fields": [
            _field("companyName", "string", "Registered company name"),
            _field("registrationNumber", "string", "Company registration number"),
            _field("incorporationDate", "date", "Date of incorporation"),
            _field("countryOfIncorporation", "country", "Country of incorporation"),
            _field("email", "email", "Company e-mail address"),
            _field("phone", "phone", "Company phone number", required=False),
            _field("addressLine1", "string", "Registered address line 1"),
            _field("addressLine2", "string", "Registered address line 2", required=False),
            _field("city", "string", "Town or city"),
            _field("postalCode", "string", "Postcode"),
            _field("country", "country", "Country of the registered address"),
        ],
        "documentTypes": [
            "CERTIFICATE_OF_INCORPORATION",
            "ARTICLES_OF_ASSOCIATION",
            "SHAREHOLDER_REGISTER",
            "BANK_STATEMENT",
            "UTILITY_BILL",
        ],
    },
}

# Presign's collection names the half of the schema its document type comes from.
COLLECTION_KIND = {"kyc": "individual", "kyb": "company"}


def kyc_schema_problems(schema: Any) -> list[str]:
    """Why an operator's schema cannot be served, or [] when it can."""
    if not isinstance(schema, dict) or set(schema) != set(KINDS):
        return ['The schema is an object with exactly "individual" and "company".']
    problems = []
    for kind in KINDS:
        part = schema[kind]
        if not isinstance(part, dict) or set(part) != {"fields", "documentTypes"}:
            problems.append(f'{kind}: an object with exactly "fields" and "documentTypes".')
            continue
        fields = part["fields"]
        if not isinstance(fields, list):
            problems.append(f"{kind}.fields: a list.")
        else:
            for index, entry in enumerate(fields):
                if not (
                    isinstance(entry, dict)
                    and set(entry) == {"name", "type", "required", "label"}
                    and isinstance(entry["name"], str)
                    and entry["name"]
                    and entry["type"] in FIELD_TYPES
                    and isinstance(entry["required"], bool)
                    and isinstance(entry["label"], str)
                ):
                    problems.append(
                        f"{kind}.fields[{index}]: {{name, type ({', '.join(FIELD_TYPES)}), required, label}}."
                    )
        types = part["documentTypes"]
        allowed = KIND_DOCUMENT_TYPES[kind]
        if not isinstance(types, list) or not types or any(value not in allowed for value in types):
            problems.append(f"{kind}.documentTypes: a non-empty list of {', '.join(allowed)}.")
    return problems


def kyc_schema_for(program: Program) -> dict[str, Any]:
    settings_ = getattr(program, "onboarding", None)
    if settings_ is not None and settings_.kyc_schema:
        return settings_.kyc_schema
    return DEFAULT_SCHEMA


def document_types_for(program: Program, collection: str) -> list[str]:
    return list(kyc_schema_for(program)[COLLECTION_KIND[collection]]["documentTypes"])
