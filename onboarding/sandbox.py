"""`bootstrap_sandbox`, onboarding part.

- An application for customer, customer2 and business (`applicationId`); the
  business one is a company application with two UBOs in PENDING.
- A current legal document set for both programs: terms and privacy required,
  marketing optional; the business program adds business-terms (required,
  business only).
- The customer's two verification steps from the sandbox provider: IDENTITY
  COMPLETED (PASSPORT, GB) and PROOF_OF_ADDRESS FAILED, RETRY (UTILITY_BILL, GB).

A rerun finds everything by natural key (applications by the id printed before)
and puts the UBOs and the verification steps back in the state above.
"""

from datetime import date

from bankapi.models import Customer, Program
from bankapi.sandbox import SandboxContext
from onboarding.models import Application, LegalDocument, LegalDocumentSet, Ubo, VerificationStep
from onboarding.providers import DEFAULT_PROVIDER

SET_VERSION = "2026-01"
SET_DATE = date(2026, 1, 1)
BUSINESS_UBOS = [("Alice", "Owner", "alice.owner@example.com"), ("Bob", "Partner", "bob.partner@example.com")]
CUSTOMER_STEPS = [
    {
        "step": VerificationStep.Step.IDENTITY,
        "status": VerificationStep.Status.COMPLETED,
        "rejection_type": "",
        "comments": "",
        "doc_country": "GB",
        "doc_type": "PASSPORT",
    },
    {
        "step": VerificationStep.Step.PROOF_OF_ADDRESS,
        "status": VerificationStep.Status.FAILED,
        "rejection_type": VerificationStep.RejectionType.RETRY,
        "comments": "The document is older than three months; upload a recent one.",
        "doc_country": "GB",
        "doc_type": "UTILITY_BILL",
    },
]


def _documents(account_type: str) -> list[dict]:
    both = ["consumer", "business"]
    documents = [
        {"key": "terms", "name": "Terms and Conditions", "required": True, "applicable_to": both},
        {"key": "privacy", "name": "Privacy Notice", "required": True, "applicable_to": both},
        {"key": "marketing", "name": "Marketing Preferences", "required": False, "applicable_to": both},
    ]
    if account_type == Program.AccountType.BUSINESS:
        documents.append(
            {
                "key": "business-terms",
                "name": "Business Account Terms",
                "required": True,
                "applicable_to": ["business"],
            }
        )
    return documents


def _legal_set(program: Program) -> None:
    document_set, _ = LegalDocumentSet.objects.get_or_create(
        program=program,
        sandbox=True,
        version=SET_VERSION,
        defaults={"provider": "sandbox", "last_updated": SET_DATE, "is_current": True},
    )
    for spec in _documents(program.account_type):
        content = (
            f"{spec['name']}\n\nVersion 1.0, effective {SET_DATE.isoformat()}.\n\n"
            f"Sandbox text of the {spec['name'].lower()} of {program.name}. Not a real agreement.\n"
        ).encode()
        LegalDocument.objects.get_or_create(
            document_set=document_set,
            key=spec["key"],
            defaults={
                "version": "1.0",
                "name": spec["name"],
                "required": spec["required"],
                "applicable_to": spec["applicable_to"],
                "effective_date": SET_DATE,
                "content": content,
            },
        )


def _application(ctx: SandboxContext, key: str, *, is_company: bool) -> Application:
    customer: Customer = ctx.objects[key]
    previous = ctx.remembered(f"{key}.applicationId", lambda: "")
    application = Application.objects.filter(id=previous, customer=customer).first() if previous else None
    if application is None:
        application = Application.objects.create(
            program_id=customer.program_id,
            sandbox=True,
            customer=customer,
            is_company=is_company,
            applicant_email=ctx.output[key]["email"],
            verification_provider=DEFAULT_PROVIDER,
        )
    ctx.output[key]["applicationId"] = str(application.id)
    return application


def bootstrap(ctx: SandboxContext) -> None:
    _legal_set(ctx.objects["consumer_program"])
    _legal_set(ctx.objects["business_program"])

    customer_application = _application(ctx, "customer", is_company=False)
    _application(ctx, "customer2", is_company=False)
    business_application = _application(ctx, "business", is_company=True)

    for first_name, last_name, email in BUSINESS_UBOS:
        ubo, created = Ubo.objects.get_or_create(
            application=business_application,
            email=email,
            defaults={"first_name": first_name, "last_name": last_name},
        )
        if not created and ubo.status != Ubo.Status.PENDING:
            ubo.status = Ubo.Status.PENDING
            ubo.link_generation += 1
            ubo.save(update_fields=["status", "link_generation", "updated_at"])
        ubo.verification_steps.all().delete()

    for position, step in enumerate(CUSTOMER_STEPS):
        VerificationStep.objects.update_or_create(
            application=customer_application,
            ubo=None,
            step=step["step"],
            defaults={
                **{name: value for name, value in step.items() if name != "step"},
                "position": position,
            },
        )
    customer_application.verification_steps.filter(ubo__isnull=True).exclude(
        step__in=[step["step"] for step in CUSTOMER_STEPS]
    ).delete()
