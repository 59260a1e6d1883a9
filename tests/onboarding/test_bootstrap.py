"""The onboarding part of bootstrap_sandbox."""

import io
import json

from django.core.management import call_command

from onboarding.models import Application, LegalDocumentSet, Ubo


def rerun() -> dict:
    out = io.StringIO()
    call_command("bootstrap_sandbox", "--json", stdout=out)
    return json.loads(out.getvalue())


def test_each_customer_has_an_application_of_its_own(sandbox):
    for key, is_company in (("customer", False), ("customer2", False), ("business", True)):
        application = Application.objects.get(id=sandbox[key]["applicationId"])
        assert str(application.customer_id) == sandbox[key]["customerId"]
        assert application.is_company is is_company
        assert application.applicant_email == sandbox[key]["email"]
    business = Application.objects.get(id=sandbox["business"]["applicationId"])
    assert [ubo.status for ubo in business.ubos.all()] == ["PENDING", "PENDING"]


def test_both_programs_have_a_current_legal_set(sandbox):
    for program_key, keys in (
        ("consumerProgramId", {"terms": True, "privacy": True, "marketing": False}),
        ("businessProgramId", {"terms": True, "privacy": True, "marketing": False, "business-terms": True}),
    ):
        document_set = LegalDocumentSet.objects.get(program_id=sandbox[program_key], is_current=True)
        assert document_set.provider == "sandbox"
        assert {doc.key: doc.required for doc in document_set.documents.all()} == keys


def test_rerun_prints_the_same_object_and_restores_the_ubos(sandbox):
    ubo = Ubo.objects.filter(application_id=sandbox["business"]["applicationId"]).first()
    ubo.status = Ubo.Status.VERIFIED
    ubo.save()
    applications = Application.objects.count()

    output = rerun()

    assert output == sandbox
    assert Application.objects.count() == applications
    assert Ubo.objects.get(id=ubo.id).status == "PENDING"
    assert LegalDocumentSet.objects.filter(program_id=sandbox["consumerProgramId"]).count() == 1
