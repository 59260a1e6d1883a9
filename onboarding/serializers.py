"""Request and response bodies of the onboarding routes.

Response serializers are the one source of each answer's shape: views render
through them and the OpenAPI document is generated from them.
"""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import EmailValidator, URLValidator
from rest_framework import serializers

from bankapi.http.schema import HTTP_URL_PATTERN
from bankapi.http.serializers import (
    InputSerializer,
    RegexField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictListField,
    WholeMatchValidator,
)
from onboarding.document_formats import DOCUMENT_CONTENT_TYPES
from onboarding.kyc import COLLECTION_KIND, DOCUMENT_TYPES, FIELD_TYPES, KIND_DOCUMENT_TYPES
from onboarding.models import Application, Ubo, VerificationStep
from onboarding.presenters import acceptance_data

MAX_LINK_TTL = 604800
MIN_LINK_TTL = 60
DEFAULT_LINK_TTL = 604800


class EmailField(StrictCharField):
    default_error_messages = {"email": "Must be an e-mail address."}
    openapi = {"format": "email"}

    def __init__(self, **kwargs):
        super().__init__(max_length=254, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data) -> str:
        text = super().to_internal_value(data)
        try:
            EmailValidator()(text)
        except DjangoValidationError:
            self.fail("email")
        return text


class AbsoluteUrlField(StrictCharField):
    default_error_messages = {"url": "Must be an absolute http or https URL."}
    openapi = {"format": "uri", "pattern": HTTP_URL_PATTERN}

    def __init__(self, **kwargs):
        super().__init__(max_length=2000, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data) -> str:
        text = super().to_internal_value(data)
        try:
            URLValidator(schemes=["http", "https"])(text)
        except DjangoValidationError:
            self.fail("url")
        return text


# ---- applications -------------------------------------------------------------


class ApplicationCreateSerializer(InputSerializer):
    isCompany = StrictBooleanField(help_text="false: individual (KYC); true: company (KYB).")
    email = EmailField(
        required=False,
        help_text="The primary applicant's e-mail address; the signed-in user's when omitted.",
    )


class PrimaryApplicantSerializer(serializers.Serializer):
    firstName = serializers.CharField(source="applicant_first_name", help_text="Empty at creation.")
    lastName = serializers.CharField(source="applicant_last_name", help_text="Empty at creation.")
    email = serializers.EmailField(source="applicant_email")


class AcceptedDocumentSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    location = serializers.CharField(help_text="Path of this service serving the document (id_token bearer).")
    hash = RegexField(r"^sha256:[0-9a-f]{64}$")
    version = serializers.CharField()
    required = serializers.BooleanField()  # type: ignore[assignment]  # drf-stubs: a field named like a Field attribute
    applicableTo = serializers.ListField(child=serializers.ChoiceField(choices=["consumer", "business"]))
    effectiveDate = serializers.DateField()


# An acceptance as `onboarding.presenters.acceptance_data` names it, or an
# application's acceptance (null before one). A comment, not a docstring: the
# docstring would become the schema's description.
class AcceptanceSerializer(serializers.Serializer):
    documentSetVersion = serializers.CharField()
    acceptedAt = serializers.DateTimeField()
    acceptedDocuments = AcceptedDocumentSerializer(many=True)

    def to_representation(self, instance):
        if isinstance(instance, Application):
            acceptance = instance.legal_acceptance()
            if acceptance is None:
                return None
            instance = acceptance_data(instance.id, acceptance)
        return super().to_representation(instance)


class ApplicationSerializer(serializers.Serializer):
    applicationId = serializers.UUIDField(source="id")
    customerId = serializers.UUIDField(source="customer_id")
    isCompany = serializers.BooleanField(source="is_company")
    workflowStage = serializers.ChoiceField(
        source="workflow_stage",
        choices=Application.Stage.values,
        help_text="NEW -> IN_PROGRESS (legal documents accepted) -> SUBMITTED -> IN_REVIEW -> APPROVED or "
        "REJECTED.",
    )
    onboardingV3 = serializers.BooleanField(source="onboarding_v3")
    primaryApplicant = PrimaryApplicantSerializer(source="*")
    createdDateTime = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")
    legalDocumentsAcceptance = AcceptanceSerializer(
        source="*",
        allow_null=True,
        help_text="null until legal documents are accepted.",
    )


class ApplicationCreatedSerializer(serializers.Serializer):
    application = ApplicationSerializer()


class UboSerializer(serializers.Serializer):
    uboId = serializers.UUIDField(source="id")
    firstName = serializers.CharField(source="first_name")
    lastName = serializers.CharField(source="last_name")
    email = serializers.EmailField()
    status = serializers.ChoiceField(choices=Ubo.Status.values)


class ApplicationDetailSerializer(serializers.Serializer):
    application = ApplicationSerializer()
    ubos = UboSerializer(many=True, help_text="The company's UBOs; [] for an individual.")


# ---- KYC schema ---------------------------------------------------------------


class KycFieldSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.ChoiceField(choices=list(FIELD_TYPES))
    required = serializers.BooleanField()  # type: ignore[assignment]  # drf-stubs: a field named like a Field attribute
    label = serializers.CharField()  # type: ignore[assignment]  # drf-stubs: a field named like a Field attribute


class KycPartSerializer(serializers.Serializer):
    fields = KycFieldSerializer(many=True)  # type: ignore[assignment]  # drf-stubs: a field named like a Field attribute
    documentTypes = serializers.ListField(child=serializers.ChoiceField(choices=list(DOCUMENT_TYPES)))


class KycSchemaSerializer(serializers.Serializer):
    individual = KycPartSerializer()
    company = KycPartSerializer()


# ---- legal documents ----------------------------------------------------------


class LegalDocSerializer(serializers.Serializer):
    id = serializers.CharField()
    version = serializers.CharField()
    hash = RegexField(r"^sha256:[0-9a-f]{64}$", help_text="sha256 of the document's content.")
    name = serializers.CharField()
    location = serializers.CharField(help_text="Path of this service serving the document (id_token bearer).")
    required = serializers.BooleanField()  # type: ignore[assignment]  # drf-stubs: a field named like a Field attribute
    applicableTo = serializers.ListField(child=serializers.ChoiceField(choices=["consumer", "business"]))
    effectiveDate = serializers.DateField()


class LegalDocumentsSerializer(serializers.Serializer):
    provider = serializers.CharField()
    documentSetVersion = serializers.CharField()
    lastUpdated = serializers.DateField()
    docs = LegalDocSerializer(many=True)


class LegalDocumentSetSerializer(serializers.Serializer):
    documents = LegalDocumentsSerializer(allow_null=True, help_text="null when no set is configured.")
    currentAcceptance = AcceptanceSerializer(allow_null=True, help_text="null when nothing is accepted.")
    accountType = serializers.ChoiceField(choices=["consumer", "business"])
    message = serializers.CharField(required=False, help_text="Present only when no set is configured.")


class AcceptedDocumentInputSerializer(InputSerializer):
    id = StrictCharField(max_length=60)
    hash = StrictCharField(max_length=71)
    version = StrictCharField(max_length=40)


class LegalAcceptSerializer(InputSerializer):
    documentSetVersion = StrictCharField(max_length=40, help_text="The current set's documentSetVersion.")
    acceptedDocuments = StrictListField(
        child=AcceptedDocumentInputSerializer(),
        min_length=1,
        max_length=100,
        help_text="`{id, hash, version}` of each accepted document, copied from the legal documents route; "
        "every required document of the program's account type must be included.",
    )


class LegalAcceptedSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    message = serializers.CharField()
    acceptance = AcceptanceSerializer()


# ---- UBO actions --------------------------------------------------------------

UBO_ACTIONS = ["UBO_VERIFICATION_EMAIL", "UBO_RESET"]


class UboActionSerializer(InputSerializer):
    action = StrictChoiceField(
        choices=UBO_ACTIONS,
        help_text="UBO_VERIFICATION_EMAIL e-mails each UBO a signed link to the hosted verification flow "
        "(status LINK_SENT); UBO_RESET resets their verification (status PENDING, earlier links stop "
        "working).",
    )
    uboIds = StrictListField(
        child=StrictCharField(max_length=64), min_length=1, max_length=100, openapi={"uniqueItems": True}
    )
    redirectSuccessUrl = AbsoluteUrlField(required=False, help_text="Absolute http(s) URL.")
    redirectRejectUrl = AbsoluteUrlField(required=False, help_text="Absolute http(s) URL.")
    ttlInSecs = StrictIntegerField(
        required=False,
        min_value=MIN_LINK_TTL,
        max_value=MAX_LINK_TTL,
        help_text="Validity of the link in seconds (default 604800, 7 days).",
    )


class UboLinkResultSerializer(serializers.Serializer):
    uboId = serializers.UUIDField()
    link = serializers.URLField(
        trim_whitespace=False, help_text="Signed, expiring link to the hosted verification flow."
    )


class UboStatusResultSerializer(serializers.Serializer):
    uboId = serializers.UUIDField()
    status = serializers.ChoiceField(choices=Ubo.Status.values)


class UboEmailAnswerSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    action = serializers.ChoiceField(choices=["UBO_VERIFICATION_EMAIL"])
    results = UboLinkResultSerializer(many=True)


class UboResetAnswerSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    action = serializers.ChoiceField(choices=["UBO_RESET"])
    results = UboStatusResultSerializer(many=True)


# ---- verification status ------------------------------------------------------


class VerificationStepSerializer(serializers.Serializer):
    step = serializers.ChoiceField(choices=VerificationStep.Step.values)
    status = serializers.ChoiceField(choices=VerificationStep.Status.values)
    rejectionType = serializers.ChoiceField(
        source="rejection_type",
        choices=VerificationStep.RejectionType.values,
        allow_null=True,
        help_text="RETRY or FINAL when the step FAILED, else null.",
    )
    comments = serializers.CharField(allow_blank=True)
    docCountry = serializers.CharField(source="doc_country", allow_blank=True)
    docType = serializers.CharField(source="doc_type", allow_blank=True)


class UboVerificationSerializer(serializers.Serializer):
    uboId = serializers.UUIDField()
    status = serializers.ChoiceField(choices=Ubo.Status.values)
    steps = VerificationStepSerializer(many=True)


class VerificationStatusSerializer(serializers.Serializer):
    steps = VerificationStepSerializer(many=True)
    ubos = UboVerificationSerializer(
        many=True, required=False, help_text="With includeUbos=true only; [] for an individual."
    )


# ---- presign ------------------------------------------------------------------

MAX_URL_EXPIRY = 3600
DEFAULT_URL_EXPIRY = 900


_DOWNLOAD = [{"required": ["key"]}, {"required": ["s3Url"]}]


class PresignSerializer(InputSerializer):
    # A download sends key or s3Url; an upload neither (POST .../documents/presign).
    refused_combinations = (
        # Upload: collection, documentType and contentType are required.
        {"not": {"anyOf": [*_DOWNLOAD, {"required": ["collection", "documentType", "contentType"]}]}},
        # Download: s3Url or collection + key, not both; applicationId required;
        # documentType and contentType are not taken.
        {"required": ["key", "s3Url"]},
        {"required": ["key"], "not": {"required": ["collection"]}},
        {"anyOf": _DOWNLOAD, "not": {"required": ["applicationId"]}},
        *(
            {"required": [mode, name]}
            for mode in ("key", "s3Url")
            for name in ("documentType", "contentType")
        ),
        # Upload: kyc takes a person's papers, kyb a company's (and the program's
        # schema may narrow each further).
        *(
            {
                "required": ["collection", "documentType"],
                "properties": {
                    "collection": {"enum": [collection]},
                    "documentType": {
                        "enum": [t for t in DOCUMENT_TYPES if t not in KIND_DOCUMENT_TYPES[kind]]
                    },
                },
            }
            for collection, kind in COLLECTION_KIND.items()
        ),
    )

    collection = StrictChoiceField(
        choices=["kyc", "kyb"], required=False, help_text="kyc (individual) or kyb (company)."
    )
    documentType = StrictCharField(
        required=False,
        max_length=40,
        help_text="Upload: a documentType of the KYC schema for the collection (the program's schema "
        "names which of these each collection takes).",
        validators=[
            WholeMatchValidator(
                "^(" + "|".join(DOCUMENT_TYPES) + ")$", f"Must be one of {', '.join(DOCUMENT_TYPES)}."
            )
        ],
        openapi={"enum": list(DOCUMENT_TYPES)},
    )
    contentType = StrictChoiceField(
        choices=list(DOCUMENT_CONTENT_TYPES),
        required=False,
        help_text="Upload: required, the type of the file, which it will be PUT with. Documents only: "
        "PDF, JPEG, PNG, HEIC or WebP; the file's first bytes must be of this type.",
    )
    applicationId = StrictCharField(
        required=False,
        max_length=64,
        help_text="Download: required, an application of this customer. Upload: optional.",
    )
    s3Url = StrictCharField(
        required=False, max_length=400, help_text="Download: `s3://<bucket>/<key>` as issued by an upload."
    )
    key = StrictCharField(required=False, max_length=300, help_text="Download: with collection.")
    expiresInSeconds = StrictIntegerField(
        required=False,
        min_value=1,
        help_text="Validity of the URL in seconds: default 900, values above 3600 are clamped to 3600.",
    )


class PresignUploadSerializer(serializers.Serializer):
    uploadUrl = serializers.URLField(trim_whitespace=False)
    bucket = serializers.CharField(help_text="The S3 bucket, or `local` on the embedded storage.")
    key = serializers.CharField()
    method = serializers.ChoiceField(choices=["PUT"])
    contentType = serializers.ChoiceField(choices=list(DOCUMENT_CONTENT_TYPES))
    expiresInSeconds = serializers.IntegerField(min_value=1, max_value=MAX_URL_EXPIRY)


class PresignDownloadSerializer(serializers.Serializer):
    downloadUrl = serializers.URLField(trim_whitespace=False)
    bucket = serializers.CharField()
    key = serializers.CharField()
    method = serializers.ChoiceField(choices=["GET"])
    expiresInSeconds = serializers.IntegerField(min_value=1, max_value=MAX_URL_EXPIRY)
